"""LoCoMo retrieval benchmark: recall@5 / recall@10 through the hub's gRPC API, with an ablation table.

    .venv/bin/python bench/bench_locomo.py [--conversations N] [--windows 0:0,1:1] [--modes a,b] [--env K=V]
                                           [--questions all|tune|held-out] [--data-dir DIR]

One namespace per conversation, one memory per turn, one hub session per
LoCoMo session (protocol in ../shared/data/locomo/README.md). Index-time
settings (``--windows B:A``: the turns before and after indexed for keywords
with each turn) each get a hub and a data directory of their own; within
one, every query mode (a row of the ablation table: channels and ranking
stages switched per request) searches every question. ``--env`` passes hub
settings (weights, smoothing) to every hub; ``--data-dir`` keeps each
window's data so a later run (other ``--env``) skips the ingest.

Tune on conversations 1-5 only (``--questions tune``); 6-10 are held out and
reported apart, and with all 10 together. The headline is all categories but
5 (adversarial).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import TextIO

sys.path.insert(0, str(Path(__file__).resolve().parent))

import derived_preferences  # noqa: E402
import rerank_candidates  # noqa: E402
import search_modes  # noqa: E402
from hubproc import RunningHub, running_hub, wait_until_indexed  # noqa: E402
from locomo import CATEGORIES, DEFAULT_PATH, Conversation, load  # noqa: E402
from tqdm import tqdm  # noqa: E402

from memhub.client import MemhubClient, memory_input  # noqa: E402

MODES = search_modes.MODES
QUESTION_SETS = {"all": range(0, 10), "tune": range(0, 5), "held-out": range(5, 10)}
TUNE = range(0, 5)  # conversations 1-5: choose weights and thresholds here only
HELD_OUT = range(5, 10)
REFERENCE = "reference (README/issue): BM25 47.0/54.0, dense MiniLM 40.1/49.9, fused 49.6/58.8, DRAGON 56.7/66.2"


@dataclass
class Result:
    """Per-question recall by (conversation index, category, k), and latencies."""

    recall: dict = field(default_factory=lambda: defaultdict(list))
    latencies: list[float] = field(default_factory=list)

    def mean(self, k: int, convs: range | None = None, cats: tuple[int, ...] = (1, 2, 3, 4)) -> float:
        xs = [
            x
            for (conv, cat, kk), vals in self.recall.items()
            if kk == k and cat in cats
            for x in vals
            if convs is None or conv in convs
        ]
        return 100 * sum(xs) / len(xs) if xs else float("nan")


def load_conversations(client: MemhubClient, conversations: list[Conversation]) -> dict[str, dict[str, list[str]]]:
    """Write every turn, a session at a time; return namespace -> memory id -> dia_ids (identical turns are stored once)."""
    mapping: dict[str, dict[str, list[str]]] = {}
    total = sum(len(c.turns) for c in conversations)
    with tqdm(total=total, desc="writing turns", unit="turn", file=sys.stderr) as bar:
        for conv in conversations:
            ns = f"locomo/{conv.sample_id}"
            ids: dict[str, list[str]] = {}
            for session, turns in groupby(conv.turns, key=lambda t: t.session):
                turns = list(turns)
                for start in range(0, len(turns), 100):
                    batch = turns[start : start + 100]
                    reply = client.write(
                        [memory_input(ns, t.text, kind="episodic", type="event", occurred_at=t.occurred_at) for t in batch],
                        request_id=f"locomo-{conv.sample_id}-{session}-{start}",
                        session_id=f"{conv.sample_id}/{session}",
                    )
                    for turn, result in zip(batch, reply.results, strict=True):
                        ids.setdefault(result.memory.id, []).append(turn.dia_id)
                    bar.update(len(batch))
            mapping[ns] = ids
    return mapping


def evaluate(
    client: MemhubClient,
    conversations: list[Conversation],
    mapping: dict,
    modes: dict[str, dict],
    asked: range,
    categories: tuple[int, ...] = (1, 2, 3, 4, 5),
    details: TextIO | None = None,
    candidates: TextIO | None = None,
) -> dict[str, Result]:
    results = {mode: Result() for mode in modes}
    questions = [(i, c, q) for i, c in enumerate(conversations) if i in asked for q in c.questions if q.category in categories]
    for i, conv, q in tqdm(questions, desc="searching", unit="q", file=sys.stderr):
        ns = f"locomo/{conv.sample_id}"
        for mode, options in modes.items():
            t0 = time.perf_counter()
            hits = client.search(q.text, [ns], top_k=10, **options).hits
            results[mode].latencies.append(time.perf_counter() - t0)
            ranked = [mapping[ns].get(h.memory.id, []) for h in hits]
            evidence = set(q.evidence)
            if details is not None:
                details.write(
                    json.dumps(
                        {"conv": i, "q": q.text, "category": q.category, "mode": mode, "gold": sorted(evidence), "ranked": ranked}
                    )
                    + "\n"
                )
            for k in (5, 10):
                found = {dia for dias in ranked[:k] for dia in dias}
                results[mode].recall[(i, q.category, k)].append(len(evidence & found) / len(evidence))
        if candidates is not None:
            key = {"conv": i, "category": q.category, "gold": list(q.evidence)}
            rerank_candidates.write(candidates, client, q.text, ns, mapping[ns], key)
    return results


def _pair(r: Result, **kw) -> str:  # noqa: ANN003
    return f"{r.mean(5, **kw):5.1f}/{r.mean(10, **kw):5.1f}"


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return 1000 * xs[min(len(xs) - 1, int(len(xs) * p))]


def report(results: dict[str, Result], conversations: list[Conversation]) -> None:
    """One row per configuration: headline @5/@10 overall, per category, tune/held-out halves, latency."""
    dropped = sum(c.dropped_questions for c in conversations)
    print(
        f"\nLoCoMo retrieval through memhub ({sum(len(c.turns) for c in conversations)} turns, "
        f"{sum(len(c.questions) for c in conversations)} questions; {dropped} without usable evidence left out)"
    )
    print("recall@5/@10, headline = categories 1-4; tune = conversations 1-5, held-out = 6-10")
    cats = [CATEGORIES[c][:11] for c in (1, 2, 3, 4, 5)]
    header = ["configuration", "headline", *cats, "tune 1-5", "held-out 6-10", "p50 ms", "p99 ms"]
    widths = [34, 11, *[11] * 5, 11, 13, 7, 7]
    print(" ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths, strict=True))))
    for name, r in results.items():
        cells = [
            name,
            _pair(r),
            *[_pair(r, cats=(c,)) for c in (1, 2, 3, 4, 5)],
            _pair(r, convs=TUNE),
            _pair(r, convs=HELD_OUT),
            f"{_pct(r.latencies, 0.5):.1f}",
            f"{_pct(r.latencies, 0.99):.1f}",
        ]
        print(" ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))))
    print(REFERENCE)


def run(
    hub: RunningHub,
    conversations: list[Conversation],
    modes: dict[str, dict],
    asked: range,
    saved: Path | None,
    derive: bool,
    categories: tuple[int, ...] = (1, 2, 3, 4, 5),
    details: TextIO | None = None,
    candidates: TextIO | None = None,
) -> dict:
    with MemhubClient(hub.address, token=hub.token, timeout_s=120) as client:
        if saved is not None and saved.is_file():
            mapping = json.loads(saved.read_text())
        else:
            mapping = load_conversations(client, conversations)
            if saved is not None:
                saved.write_text(json.dumps(mapping))
        marker = saved.parent / "preferences-derived" if saved is not None else None
        if derive and not (marker and marker.exists()):
            text = {(f"locomo/{c.sample_id}", t.dia_id): (t.text, t.occurred_at) for c in conversations for t in c.turns}
            turns = [(ns, mid, *text[(ns, dias[0])]) for ns, ids in mapping.items() for mid, dias in ids.items()]
            print(f"derived preference memories written: {derived_preferences.add(client, turns, 'locomo')}", file=sys.stderr)
            if marker is not None:
                marker.touch()
        wait_until_indexed(client, progress=True)
        return evaluate(client, conversations, mapping, modes, asked, categories, details, candidates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--conversations", type=int, default=10, help="use the first N conversations (1 to 10)")
    parser.add_argument(
        "--windows",
        default="0:0,1:1",
        help="comma-separated keyword context windows BEFORE:AFTER (turns of the same session), one hub each",
    )
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated query modes among: {', '.join(MODES)}")
    parser.add_argument("--questions", choices=list(QUESTION_SETS), default="all", help="which conversations' questions to ask")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE hub setting for every hub (repeatable)")
    parser.add_argument("--data-dir", type=Path, help="keep each window's hub data here, and reuse it when present")
    parser.add_argument("--headline-only", action="store_true", help="ask categories 1-4 only (no adversarial questions)")
    parser.add_argument(
        "--derive-preferences",
        action="store_true",
        help="add the preference memories the write gate derives to kept data written without them (once)",
    )
    parser.add_argument("--details", type=Path, help="write each search's ranked evidence ids here (JSON lines)")
    parser.add_argument(
        "--candidates", type=Path, help="write each question's unreranked top 30 here, for bench/rerank_screen.py (JSON lines)"
    )
    args = parser.parse_args()
    details = open(args.details, "w") if args.details else None  # noqa: SIM115 - open for the whole run
    candidates = open(args.candidates, "w") if args.candidates else None  # noqa: SIM115 - open for the whole run
    conversations = load(args.data)[: args.conversations]
    modes = search_modes.choose(args.modes, parser.error)
    extra = dict(kv.split("=", 1) for kv in args.env)
    results: dict[str, Result] = {}
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    for window in args.windows.split(","):
        before, _, after = window.partition(":")
        env = extra | {"MEMHUB_KEYWORD_CONTEXT_BEFORE": before, "MEMHUB_KEYWORD_CONTEXT_AFTER": after or "0"}
        data_dir = saved = None
        if args.data_dir is not None:
            data_dir = args.data_dir / f"window-{before}-{after or 0}-{args.conversations}"
            data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # the hub refuses a data directory others can read
            saved = data_dir / "locomo-mapping.json"
        print(f"hub with a keyword context of {before} turn(s) before, {after or 0} after...", file=sys.stderr)
        with running_hub(data_dir=data_dir, extra_env=env) as hub:
            for mode, result in run(
                hub,
                conversations,
                modes,
                QUESTION_SETS[args.questions],
                saved,
                args.derive_preferences,
                (1, 2, 3, 4) if args.headline_only else (1, 2, 3, 4, 5),
                details,
                candidates,
            ).items():
                results[f"window {before}:{after or 0}, {mode}"] = result
    for f in (details, candidates):
        if f is not None:
            f.close()
    if extra:
        print(f"hub settings: {' '.join(args.env)}")
    report(results, conversations)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
