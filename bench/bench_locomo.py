"""LoCoMo retrieval benchmark: recall@5 / recall@10 through the hub's gRPC API.

    .venv/bin/python bench/bench_locomo.py [--data PATH] [--conversations N]

One namespace per conversation, one memory per turn (protocol in
../shared/data/locomo/README.md). Each question is searched three times:
dense only, keyword (BM25) only, and fused (RRF, k = 60). Prints recall per
category and the headline (all categories but 5, adversarial).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hubproc import RunningHub, running_hub, wait_until_indexed  # noqa: E402
from locomo import CATEGORIES, DEFAULT_PATH, load  # noqa: E402
from tqdm import tqdm  # noqa: E402

from hub.client import MemhubClient, memory_input  # noqa: E402

MODES = {"dense": ["dense"], "bm25": ["keyword"], "fused": []}
REFERENCE = "reference (README/issue): BM25 47.0/54.0, dense MiniLM 40.1/49.9, fused 49.6/58.8, DRAGON 56.7/66.2"


def load_conversations(client: MemhubClient, conversations: list) -> dict[str, dict[str, list[str]]]:
    """Write every turn; return namespace -> memory id -> dia_ids (identical turns are stored once)."""
    mapping: dict[str, dict[str, list[str]]] = {}
    total = sum(len(c.turns) for c in conversations)
    with tqdm(total=total, desc="writing turns", unit="turn", file=sys.stderr) as bar:
        for conv in conversations:
            ns = f"locomo/{conv.sample_id}"
            ids: dict[str, list[str]] = {}
            for start in range(0, len(conv.turns), 100):
                batch = conv.turns[start : start + 100]
                reply = client.write(
                    [memory_input(ns, t.text, kind="episodic", type="event", occurred_at=t.occurred_at) for t in batch],
                    request_id=f"locomo-{conv.sample_id}-{start}",
                )
                for turn, result in zip(batch, reply.results, strict=True):
                    ids.setdefault(result.memory.id, []).append(turn.dia_id)
                bar.update(len(batch))
            mapping[ns] = ids
    return mapping


def evaluate(client: MemhubClient, conversations: list, mapping: dict[str, dict[str, list[str]]]) -> dict:
    # scores[mode][category][k] -> list of per-question recall
    scores: dict = {m: defaultdict(lambda: defaultdict(list)) for m in MODES}
    latencies: dict[str, list[float]] = defaultdict(list)
    questions = [(c, q) for c in conversations for q in c.questions]
    for conv, q in tqdm(questions, desc="searching", unit="q", file=sys.stderr):
        ns = f"locomo/{conv.sample_id}"
        for mode, channels in MODES.items():
            t0 = time.perf_counter()
            hits = client.search(q.text, [ns], top_k=10, channels=channels).hits
            latencies[mode].append(time.perf_counter() - t0)
            ranked = [mapping[ns].get(h.memory.id, []) for h in hits]
            evidence = set(q.evidence)
            for k in (5, 10):
                found = {dia for dias in ranked[:k] for dia in dias}
                scores[mode][q.category][k].append(len(evidence & found) / len(evidence))
    return {"scores": scores, "latencies": latencies}


def report(result: dict, conversations: list) -> None:
    scores = result["scores"]
    dropped = sum(c.dropped_questions for c in conversations)
    print(
        f"\nLoCoMo retrieval through memhub ({sum(len(c.turns) for c in conversations)} turns, "
        f"{sum(len(c.questions) for c in conversations)} questions; {dropped} without usable evidence left out)"
    )
    header = f"{'mode':<6} " + " ".join(f"{CATEGORIES[c][:11]:>15}" for c in sorted(CATEGORIES)) + f" {'headline(1-4)':>15}"
    print(header)
    print(f"{'':<6} " + " ".join(f"{'@5 / @10':>15}" for _ in range(len(CATEGORIES) + 1)))
    for mode in MODES:
        cells = []
        for cat in sorted(CATEGORIES):
            r = scores[mode][cat]
            cells.append(f"{100 * _mean(r[5]):6.1f} /{100 * _mean(r[10]):5.1f}" if r[5] else f"{'-':>15}")
        head5 = [x for c in (1, 2, 3, 4) for x in scores[mode][c][5]]
        head10 = [x for c in (1, 2, 3, 4) for x in scores[mode][c][10]]
        cells.append(f"{100 * _mean(head5):6.1f} /{100 * _mean(head10):5.1f}")
        print(f"{mode:<6} " + " ".join(f"{c:>15}" for c in cells) + f"   (n={len(head5)})")
    print(REFERENCE)
    for mode, lat in result["latencies"].items():
        lat = sorted(lat)
        print(f"search latency {mode:<5}: p50 {1000 * lat[len(lat) // 2]:.1f} ms, p99 {1000 * lat[int(len(lat) * 0.99)]:.1f} ms")


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--conversations", type=int, default=10, help="use the first N conversations (1 to 10)")
    args = parser.parse_args()
    conversations = load(args.data)[: args.conversations]
    with running_hub() as hub:
        run(hub, conversations)


def run(hub: RunningHub, conversations: list) -> None:
    with MemhubClient(hub.address, token=hub.token, timeout_s=120) as client:
        mapping = load_conversations(client, conversations)
        wait_until_indexed(client)
        report(evaluate(client, conversations, mapping), conversations)


if __name__ == "__main__":
    main()
