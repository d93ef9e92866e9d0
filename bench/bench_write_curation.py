"""What curation costs a write: write throughput with the write filter and near-duplicate check on and off, in one run.

Each hub gets the same writes: LoCoMo turns (../shared/data, first conversations) stored as semantic
facts, one memory per call (what an agent's tool call does) and then in batches of 50 (imports). With
the check on, every semantic write is embedded and compared with its nearest neighbours in its
namespace before its transaction; the figures are throughputs and their ratio, measured back to back.

    .venv/bin/python bench/bench_write_curation.py [--memories 600]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hubproc import running_hub  # noqa: E402
from locomo import DEFAULT_PATH, load  # noqa: E402

from hub.client import MemhubClient, memory_input  # noqa: E402


def run(texts: list[str], near_dup: str) -> tuple[float, float, int]:
    """(single writes/s, batched writes/s, memories folded as near-duplicates) on a fresh hub, curation on or off."""
    env = {"MEMHUB_NEAR_DUP": near_dup, "MEMHUB_WRITE_FILTER": near_dup}
    with running_hub(extra_env=env) as hub, MemhubClient(hub.address, token=hub.token) as client:
        half = len(texts) // 2
        started = time.perf_counter()
        folded = 0
        for i, text in enumerate(texts[:half]):
            reply = client.write([memory_input("bench/single", text, kind="semantic", type="fact")])
            folded += reply.results[0].near
            if (i + 1) % 100 == 0:
                print(f"  near-dup {near_dup}: {i + 1}/{half} single writes", file=sys.stderr, flush=True)
        single = half / (time.perf_counter() - started)
        started = time.perf_counter()
        rest = texts[half:]
        for start in range(0, len(rest), 50):
            reply = client.write([memory_input("bench/batch", t, kind="semantic", type="fact") for t in rest[start : start + 50]])
            folded += sum(r.near for r in reply.results)
        batched = len(rest) / (time.perf_counter() - started)
        return single, batched, folded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=600, help="writes per hub, half single and half batched")
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH, help="locomo10.json")
    args = parser.parse_args()
    turns = [t.text for c in load(args.data) for t in c.turns]
    texts = list(dict.fromkeys(turns))[: args.memories]
    results = {mode: run(texts, mode) for mode in ("off", "on")}
    print(f"{len(texts)} LoCoMo turns written as semantic facts per hub (half one per call, half in batches of 50)")
    print(f"{'curation':>9} {'single/s':>9} {'batched/s':>10} {'folded':>7}")
    for mode, (single, batched, folded) in results.items():
        print(f"{mode:>9} {single:9.1f} {batched:10.1f} {folded:7d}")
    (s_off, b_off, _), (s_on, b_on, _) = results["off"], results["on"]
    print(f"cost of curation: single writes at {s_on / s_off:.0%} of the uncurated rate, batches at {b_on / b_off:.0%}")


if __name__ == "__main__":
    main()
