"""What a checked write costs on a big index: semantic writes, each near-duplicate checked, on a kept data directory.

    .venv/bin/python bench/bench_checked_writes.py --data-dir DIR [--writes 1600] [--rounds 2] [--episodes] [--code PATH ...]

A fact (a semantic memory) is compared with the nearest memories of its
namespace before it is stored (memhub/core/near_duplicates.py), so its cost
grows with the index. Run this on a data directory that already holds a
corpus (e.g. ``bench/bench_scale.py --memories 100000 --generate-vectors
--data-dir DIR``): 16 clients write LoCoMo turns as facts, one per call, into
the corpus's namespaces, and it prints the rate, p50/p99 and the CPU per write
of the hub, its Milvus Lite and its Postgres. ``--episodes`` writes them as
conversation turns instead, each client in a session of its own (a turn is
checked against its session, and the turns before it that hold it in their
keyword context are indexed again).

``--code`` names memhub checkouts to compare (the hub runs with that checkout
first on PYTHONPATH; the benchmark itself is this one; run it from outside the
checkouts, or Python imports memhub from the working directory first), and
``--settings`` hub settings to compare (e.g. ``MEMHUB_NEAR_DUP=off``),
alternated for ``--rounds`` rounds on the same data directory. Each phase
writes new texts.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_throughput import corpus  # noqa: E402
from hubproc import running_hub  # noqa: E402
from loadgen import Call, StackCPU, Timed, load_average, timed_clients  # noqa: E402
from locomo import DEFAULT_PATH  # noqa: E402

from memhub.client import MemhubClient, memory_input  # noqa: E402

CLIENTS = 16
HERE = Path(__file__).resolve().parent.parent


def namespaces_of(data_dir: Path, hub_env: dict[str, str]) -> list[str]:
    """The benchmark corpora's namespaces that hold memories here (bench_throughput's and bench_scale's names),
    checked through a hub."""
    items, _ = corpus(100_000, DEFAULT_PATH)
    names = sorted({ns for ns, _ in items} | {f"bench/scale/ns{k:02d}" for k in range(17)})
    with running_hub(data_dir, hub_env) as hub, MemhubClient(hub.address, token=hub.token) as client:
        return [ns for ns in names if client.list([ns], page_size=1).memories]


def checked_writes(
    data_dir: Path, code: Path, texts: list[tuple[str, str]], settings: dict[str, str], episodes: str | None = None
) -> Timed:
    """``episodes``: write each client's texts as the turns of a session of its own named from this (each turn
    checked against its session, and re-indexing the turns before it whose keyword context it joins), not as
    facts."""
    env = {"PYTHONPATH": str(code), **settings}
    with running_hub(data_dir, env) as hub:
        cpu = StackCPU(hub)
        per_client = len(texts) // CLIENTS

        def calls(i: int) -> list[Call]:
            mine = texts[i * per_client : (i + 1) * per_client]
            if episodes is not None:
                session, home = f"{episodes}-{i}", mine[0][0]  # a session's turns in one namespace
                return [lambda c, t=t: c.write([memory_input(home, t)], session_id=session) for _, t in mine]
            return [lambda c, ns=ns, t=t: c.write([memory_input(ns, t, type="fact")]) for ns, t in mine]

        return timed_clients(hub, CLIENTS, calls, cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="a hub's data directory holding a corpus")
    parser.add_argument("--writes", type=int, default=1_600, help="writes per phase")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--episodes", action="store_true", help="write conversation turns, each client in a session of its own, not facts"
    )
    parser.add_argument("--code", type=Path, action="append", help="a memhub checkout to run the hub from (repeatable)")
    parser.add_argument(
        "--settings",
        action="append",
        default=[],
        help="KEY=VALUE,KEY=VALUE: hub settings of one more variant to alternate with (repeatable; '' is the defaults)",
    )
    args = parser.parse_args()
    try:
        variants = [dict(kv.split("=", 1) for kv in v.split(",") if kv) for v in (args.settings or [""])]
    except ValueError:
        parser.error("--settings takes KEY=VALUE pairs separated by commas")
    if not (args.data_dir / "postgres").is_dir():
        parser.error(f"{args.data_dir} holds no hub data (no postgres/ in it); fill it with bench_scale.py first")
    if not CLIENTS <= args.writes <= 100_000 or not 1 <= args.rounds <= 10:
        parser.error(f"--writes takes {CLIENTS}-100000, --rounds 1-10")
    codes = [c.resolve() for c in (args.code or [HERE])]
    for code in codes:
        if not (code / "memhub" / "__init__.py").is_file():
            parser.error(f"--code {code}: not a memhub checkout (no memhub/__init__.py)")
    started = load_average()
    namespaces = namespaces_of(args.data_dir, {"PYTHONPATH": str(codes[0])})
    if not namespaces:
        raise SystemExit(f"{args.data_dir} holds none of the benchmarks' namespaces; fill it with bench_scale.py first")
    _, questions = corpus(0, DEFAULT_PATH)
    stamp = int(time.time())
    results = []
    phase = 0
    for r in range(args.rounds):
        for code, settings in [(c, v) for c in codes for v in variants]:
            # New texts each phase (a repeat would be folded by the content hash): a question, made a statement.
            texts = [
                (namespaces[i % len(namespaces)], f"Noted ({stamp}-{phase}-{i}): {questions[i % len(questions)]}")
                for i in range(args.writes)
            ]
            name = os.path.basename(code) + "".join(f" {k}={v}" for k, v in settings.items())
            print(f"round {r + 1}, {name}...", file=sys.stderr)
            episodes = f"bench-{stamp}-{phase}" if args.episodes else None
            results.append((name, checked_writes(args.data_dir, code, texts, settings, episodes)))
            phase += 1
    what = "turns of a session per client" if args.episodes else "facts"
    print(f"\nchecked writes ({what}), {CLIENTS} clients, one memory a call, into {len(namespaces)} namespaces", end="")
    print(f" of {args.data_dir}")
    print(f"at the start: {started}; at the end: {load_average()}")
    for name, timed in results:
        print(f"{name:>28s}  {timed.summary('writes/s')}")


if __name__ == "__main__":
    main()
