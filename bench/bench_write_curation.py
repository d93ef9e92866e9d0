"""What curation costs a write: write throughput with the write filter and near-duplicate check on and off, in one run.

Each hub gets the same writes: LoCoMo turns (../shared/data, first conversations) stored as semantic
facts: a third one memory per call (what an agent's tool call does), a third in batches of 50 (imports),
and a third in batches of 50 that wait until searchable (wait_indexed). With the check on, every
semantic write is embedded and compared with its nearest neighbours in its namespace before its
transaction; the figures are throughputs and their ratio, measured back to back.

The first two count only the write call: with curation off nothing is embedded until the indexer does it
in the background, so they show what the check adds to a writer's wait. The third counts the embedding
either way (the indexer's), so it shows what curation costs in all; the indexer reuses the vector the
check made (memhub/embedding/passage_cache.py) instead of embedding the memory a second time.

    .venv/bin/python bench/bench_write_curation.py [--memories 600]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hubproc import running_hub  # noqa: E402
from locomo import DEFAULT_PATH, load  # noqa: E402

from memhub.client import MemhubClient, memory_input  # noqa: E402


def hub_cpu_s(pid: int) -> float:
    """CPU seconds the hub process (all its threads: gRPC, embedder, indexer) has used, from /proc: unlike wall
    time, barely moved by what else the machine runs."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(texts: list[str], near_dup: str) -> tuple[float, float, float, int, float]:
    """(single writes/s, batched writes/s, batched writes searchable/s, memories folded as near-duplicates, hub CPU
    ms per memory written and indexed) on a fresh hub, curation on or off."""
    env = {"MEMHUB_NEAR_DUP": near_dup, "MEMHUB_WRITE_FILTER": near_dup}
    with running_hub(extra_env=env) as hub, MemhubClient(hub.address, token=hub.token) as client:
        third = len(texts) // 3
        cpu_before = hub_cpu_s(hub.pid)
        started = time.perf_counter()
        folded = 0
        for i, text in enumerate(texts[:third]):
            reply = client.write([memory_input("bench/single", text, kind="semantic", type="fact")])
            folded += reply.results[0].near
            if (i + 1) % 100 == 0:
                print(f"  curation {near_dup}: {i + 1}/{third} single writes", file=sys.stderr, flush=True)
        single = third / (time.perf_counter() - started)
        client.write(
            [memory_input("bench/single", "The sync point: everything before me is indexed.", type="fact")], wait_indexed=True
        )
        rates = []
        for ns, wait, part in (("bench/batch", False, texts[third : 2 * third]), ("bench/searchable", True, texts[2 * third :])):
            started = time.perf_counter()
            for start in range(0, len(part), 50):
                batch = [memory_input(ns, t, kind="semantic", type="fact") for t in part[start : start + 50]]
                reply = client.write(batch, wait_indexed=wait)
                folded += sum(r.near for r in reply.results)
            rates.append(len(part) / (time.perf_counter() - started))
            print(f"  curation {near_dup}: {len(part)} writes in batches (wait_indexed={wait})", file=sys.stderr, flush=True)
            client.write([memory_input(ns, "The sync point: everything before me is indexed.", type="fact")], wait_indexed=True)
        cpu_ms = (hub_cpu_s(hub.pid) - cpu_before) * 1000 / (3 * third)
        return single, rates[0], rates[1], folded, cpu_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--memories", type=int, default=900, help="writes per hub, a third each: single, batched, batched until searchable"
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH, help="locomo10.json")
    args = parser.parse_args()
    turns = [t.text for c in load(args.data) for t in c.turns]
    texts = list(dict.fromkeys(turns))[: args.memories]
    results = {mode: run(texts, mode) for mode in ("off", "on")}
    print(f"{len(texts)} LoCoMo turns written as semantic facts per hub (a third each: one per call, in batches of 50, ")
    print("in batches of 50 with wait_indexed)")
    print(f"{'curation':>9} {'single/s':>9} {'batched/s':>10} {'searchable/s':>13} {'folded':>7} {'hub CPU ms/memory':>18}")
    for mode, (single, batched, searchable, folded, cpu_ms) in results.items():
        print(f"{mode:>9} {single:9.1f} {batched:10.1f} {searchable:13.1f} {folded:7d} {cpu_ms:18.2f}")
    (s_off, b_off, w_off, _, c_off), (s_on, b_on, w_on, _, c_on) = results["off"], results["on"]
    print(
        f"cost of curation: single writes at {s_on / s_off:.0%} of the uncurated rate, batches at {b_on / b_off:.0%}, "
        f"batches until searchable at {w_on / w_off:.0%}; hub CPU per memory x{c_on / c_off:.2f}"
    )


if __name__ == "__main__":
    main()
