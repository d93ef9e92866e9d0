"""The hub at scale: 100k memories on the embedded defaults, searched by 1, 16 and 64 concurrent clients.

    .venv/bin/python bench/bench_scale.py [--memories 100000] [--data-dir DIR] [--env KEY=VALUE]

The corpus is built offline from LoCoMo turns (bench/synthetic.py: each
memory splices two turns, with another speaker and date; deterministic,
distinct, 17 namespaces). Measured from this process over gRPC:
1. the raw embedder alone on a sample of the corpus (the yardstick);
2. ingest: 100 memories per write call from 4 writers, until everything is
   searchable (the hub's defaults; ``--env KEY=VALUE``
   changes a setting, e.g. MEMHUB_LITE_DENSE_CANDIDATES);
3. resident memory of the hub, its Milvus Lite process and Postgres;
4. search p50/p99 and searches/s with 1, 16 and 64 concurrent clients, every
   query spanning all 17 namespaces;
5. after stopping the hub: the dense channel's recall@10 against exact search
   over the stored vectors (bench/dense_recall.py), and the parts of a search
   timed alone (bench/anatomy.py).
Every phase prints the CPU the hub, its Milvus and its Postgres spent per
memory or per search, and the run prints the load average at its start and
end.

Ingest is bounded by the embedder (a few hundred LoCoMo-sized texts a second
on 2 cores with the int8 model), so 100k memories take ten minutes or more. ``--data-dir`` keeps the
data directory: run again with the same directory to measure searches
without ingesting again.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anatomy  # noqa: E402
import bulk_load  # noqa: E402
from hubproc import bench_policy_dir, running_hub  # noqa: E402
from loadgen import (  # noqa: E402
    Ingest,
    StackCPU,
    batched_writes,
    load_average,
    pct,
    raw_embedder,
    resident_memory,
    searches,
)
from locomo import DEFAULT_PATH  # noqa: E402
from synthetic import bodies, queries, spliced  # noqa: E402
from thread_cpu import HubThreadCPU, by_thread  # noqa: E402

from memhub.client import MemhubClient  # noqa: E402
from memhub.embedding import EmbeddingConfig, build_embedder  # noqa: E402
from memhub.index import MilvusIndex  # noqa: E402

ROOT = "bench/scale"


def stored(address: str, token: str) -> int:
    """Memories already in the benchmark's namespaces (a reused data directory)."""
    with MemhubClient(address, token=token) as client:
        total, page = 0, ""
        while True:
            reply = client.list([ROOT], page_size=500, page_token=page)
            total += len(reply.memories)
            page = reply.next_page_token
            if not page:
                return total


def dense_recall_of(data: Path, questions: list[str], env: dict[str, str]) -> Any:
    """The dense channel's recall@10 (a ``dense_recall.Recall``) on the index the hub left in ``data`` (the hub has
    stopped), with the hub's settings (``env``: the candidates Lite scores)."""
    # Imported here: a run of an older memhub (PYTHONPATH, for before/after figures) has neither, and skips this.
    import dense_recall

    from memhub.index_config import IndexConfig

    settings = IndexConfig.from_env(env)
    embedder = build_embedder(EmbeddingConfig())
    try:
        vectors = embedder.embed(questions)
        index = MilvusIndex(
            str(data / "milvus-index.db"),
            model_id=embedder.model_id,
            dimension=embedder.dimension,
            lite_candidates=settings.lite_candidates,
        )
    finally:
        embedder.close()
    try:
        # The collection the hub served: `memhub reindex` may have replaced the configured one by a newer one.
        names = [n for n in index._client.list_collections() if n.startswith(index.base_name)]  # noqa: SLF001
        index.use_collection(max(names))
        index.ensure_collection()
        return dense_recall.measure(index, vectors)
    finally:
        index.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--searches", type=int, default=640, help="searches per concurrency level (at least 4 per client)")
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH, help="LoCoMo json")
    parser.add_argument("--data-dir", type=Path, help="keep the hub's data here (reused when it already holds the corpus)")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE hub setting (repeatable)")
    parser.add_argument("--recall-queries", type=int, default=200, help="LoCoMo questions for the dense recall (0: skip it)")
    parser.add_argument("--no-anatomy", action="store_true", help="skip timing the parts of a search after the run")
    parser.add_argument(
        "--generate-vectors",
        action="store_true",
        help="fill a new data directory by COPY and generated vectors instead of writing through the API "
        "(bench/bulk_load.py; for 1M memories); the ingest figures are then not measured",
    )
    args = parser.parse_args()
    if any("=" not in kv for kv in args.env):
        parser.error("--env takes KEY=VALUE")
    if args.memories < 1 or args.searches < 64:
        parser.error("--memories must be positive and --searches at least 64")
    started_load = load_average()
    items = list(spliced(args.memories, args.data))
    corpus = [(i.namespace, i.text) for i in items]
    questions = queries(args.data)
    print("measuring the raw embedder...", file=sys.stderr)
    raw = raw_embedder([text for _, text in corpus[:1500]])
    data = args.data_dir or Path(tempfile.mkdtemp(prefix="memhub-scale-"))
    data.mkdir(mode=0o700, parents=True, exist_ok=True)  # the hub refuses a data directory others can read
    ingest: Ingest | None = None
    loaded = None
    levels = {}
    level_threads: dict[int, str] = {}
    ingest_threads = ""
    try:
        if args.generate_vectors and not (data / "milvus-index.db").exists():
            loaded = bulk_load.load(data, items, bodies(args.data))
        with running_hub(data_dir=data, extra_env=dict(kv.split("=", 1) for kv in args.env)) as hub:
            cpu = StackCPU(hub)
            # Generated: loaded whole or not at all (there is no ingest to resume); counting 1M memories through
            # List would take minutes.
            present = args.memories if args.generate_vectors else stored(hub.address, hub.token)
            threads = HubThreadCPU([p.pid for p in cpu.processes()["hub"]])
            if present < args.memories:
                before = threads.seconds()
                ingest = batched_writes(hub, corpus, cpu=cpu)  # already stored ones are deduplicated
                ingest_threads = by_thread(before, threads.seconds(), len(corpus))
            memory = resident_memory(hub)
            for clients in (1, 16, 64):
                print(f"searching with {clients} clients...", file=sys.stderr)
                before = threads.seconds()
                levels[clients] = searches(hub, questions, [ROOT], clients, max(4, args.searches // clients), cpu)
                level_threads[clients] = by_thread(before, threads.seconds(), len(levels[clients].latencies))
        # Printed as soon as measured: what follows opens the stores again and takes minutes at 1M memories.
        print(f"\nmemhub at scale on embedded defaults: {args.memories} memories in 17 namespaces (LoCoMo-derived)")
        if loaded is not None:
            print("vectors generated (normalised sums of two LoCoMo turns' embeddings), not embedded from each text")
        print(f"at the start: {started_load}; after the searches: {load_average()}")
        if args.env:
            print(f"hub settings: {' '.join(args.env)}")
        print(f"raw embedder (batched, alone):      {raw.summary()}")
        if loaded is not None:
            print(
                f"loaded without the write path:      {loaded / 60:.1f} min (COPY into Postgres, vectors generated from "
                "the two LoCoMo turns each text splices, not embedded; bench/bulk_load.py)"
            )
        elif ingest is not None:
            print(f"ingest (100/call, 4 writers):       {ingest.summary(raw)}")
            print(f"  the hub's CPU per memory by thread: {ingest_threads}")
        else:
            print("ingest: skipped (the data directory already held the corpus)")
        print(
            f"resident memory:                    hub {memory['hub']:.0f} MiB, Milvus Lite {memory['milvus']:.0f} MiB, "
            f"Postgres {memory['postgres']:.0f} MiB"
        )
        for clients, timed in levels.items():
            print(f"search, {clients:2d} clients (all namespaces): {timed.summary()}", flush=True)
            print(f"  the hub's CPU per search by thread: {level_threads[clients]}", flush=True)
        if args.recall_queries:
            recall = dense_recall_of(data, questions[: args.recall_queries], dict(kv.split("=", 1) for kv in args.env))
            print(
                f"dense channel recall@10 against exact search over the stored vectors: {recall.recall_at_10:.3f} "
                f"(worst query {recall.worst:.1f}; {recall.queries} LoCoMo questions, {recall.rows} rows)",
                flush=True,
            )
        if not args.no_anatomy:
            print("timing the parts of a search...", file=sys.stderr)
            parts = anatomy.measure(data, bench_policy_dir(data), questions, [ROOT])
            print()
            one = levels[1]
            print(anatomy.report(parts, (pct(one.latencies, 0.5), pct(one.latencies, 0.99))))
        print(f"at the end: {load_average()}")
    finally:
        if args.data_dir is None:
            shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
