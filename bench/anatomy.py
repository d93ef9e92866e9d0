"""Where one search's time goes: its parts timed alone, side by side with whole searches, on one data directory.

Run after the benchmark's hub process has stopped: this opens the same
stores in-process (embedded Postgres, the Milvus Lite file) and times, one
at a time, each part a search is made of, then whole searches, so the hub's
own overhead (everything that is not one of the parts) is visible:

    query embedding -> readable namespaces (Postgres + policy) -> Milvus dense
    and Milvus BM25 (run side by side in a search) -> Postgres hydration

A search starts the embedding while the namespaces are decided and runs
BM25 beside the embedding and the dense search, so the whole is less than
the sum of its parts when the machine has cores to spare.

Run on its own it compares data directories (e.g. the same corpus indexed by
two versions of the indexer), alternated for ``--rounds`` rounds:

    .venv/bin/python bench/anatomy.py DIR [DIR ...] [--rounds 2] [--root bench/scale]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from memhub.app import Hub
from memhub.config import HubConfig
from memhub.core.model import Caller, Channel, MemoryFilter, SearchQuery
from memhub.db import memory_reads
from memhub.index import IndexFilter

Row = tuple[str, float, float]


def _timed(fn: Callable[[int], object], n: int) -> tuple[float, float]:
    samples = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        samples.append(time.perf_counter() - t0)
    samples.sort()
    return 1000 * statistics.median(samples), 1000 * samples[min(n - 1, int(n * 0.99))]


def measure(data_dir: Path, policy_dir: Path, queries: Sequence[str], roots: Sequence[str], n: int = 100) -> list[Row]:
    """(part, p50 ms, p99 ms) for each part of a search and for whole searches (top 10, every channel)."""
    config = HubConfig.from_env({"MEMHUB_DATA_DIR": str(data_dir), "MEMHUB_POLICY_DIR": str(policy_dir)})
    hub = Hub.open(config)
    try:
        service = hub.service
        caller = Caller("bench", groups=("bench",))
        readable = service._readable_namespaces(caller, list(roots))  # noqa: SLF001 - timing the part on its own
        flt = IndexFilter(namespaces=tuple(readable), now_ms=int(time.time() * 1000))
        vectors = hub.embedder.embed(list(queries[:n]))
        depth, head = 30, 13  # what a top-10 search asks of each channel, and hydrates first
        hits = [[i for i, _ in hub.index.search_dense(v, flt, depth)][:head] for v in vectors]
        memory_filter = MemoryFilter(tuple(roots))
        whole = [SearchQuery(q, memory_filter, 10, tuple(Channel), False, 0) for q in queries[:n]]

        def hydrate(i: int) -> None:
            with hub.engine.connect() as conn:
                memory_reads.hydrate(conn, hits[i], memory_filter, readable)

        rows: list[Row] = []
        for name, fn in (
            ("query embedding", lambda i: hub.embedder.embed([queries[i]])),
            ("readable namespaces + policy", lambda i: service._readable_namespaces(caller, list(roots))),  # noqa: SLF001
            ("Milvus dense search", lambda i: hub.index.search_dense(vectors[i], flt, depth)),
            ("Milvus BM25 search", lambda i: hub.index.search_keyword(queries[i], flt, depth)),
            ("Postgres hydration", hydrate),
            ("whole search (in-process)", lambda i: service.search(caller, whole[i])),
        ):
            fn(0)  # warm-up
            rows.append((name, *_timed(fn, n)))
        return rows
    finally:
        hub.close()


def report(rows: list[Row], grpc_single: tuple[float, float] | None = None) -> str:
    lines = [f"{'part of a search (1 at a time)':34s} {'p50 ms':>8s} {'p99 ms':>8s}"]
    lines += [f"{name:34s} {p50:8.1f} {p99:8.1f}" for name, p50, p99 in rows]
    parts = sum(p50 for name, p50, _ in rows if not name.startswith("whole"))
    lines.append(f"{'sum of the parts':34s} {parts:8.1f}")
    if grpc_single is not None:
        lines.append(f"{'whole search over gRPC (1 client)':34s} {grpc_single[0]:8.1f} {grpc_single[1]:8.1f}")
    return "\n".join(lines)


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from hubproc import bench_policy_dir
    from loadgen import load_average
    from synthetic import queries

    parser = argparse.ArgumentParser(description="The parts of a search, timed alone, on each of several data directories")
    parser.add_argument("data_dirs", type=Path, nargs="+", help="hub data directories holding a benchmark corpus")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=150, help="LoCoMo questions timed per part")
    parser.add_argument("--root", default="bench/scale", help="the corpus's namespace root (bench_throughput's: bench)")
    args = parser.parse_args()
    for folder in args.data_dirs:
        if not (folder / "postgres").is_dir():
            parser.error(f"{folder} holds no hub data (no postgres/ in it)")
    if not 1 <= args.rounds <= 10 or not 10 <= args.queries <= 1500:
        parser.error("--rounds takes 1-10, --queries 10-1500")
    started = load_average()
    questions = queries()
    for r in range(args.rounds):
        for folder in args.data_dirs:
            rows = measure(folder, bench_policy_dir(folder), questions, [args.root], n=args.queries)
            print(f"\nround {r + 1}, {folder}\n{report(rows)}", flush=True)
    print(f"\nat the start: {started}; at the end: {load_average()}")


if __name__ == "__main__":
    main()
