"""Write throughput, indexing against the raw embedder, and search latency over gRPC, on the embedded defaults.

    .venv/bin/python bench/bench_throughput.py [--memories 10000] [--queries 320]

Starts `memhub serve` in a scratch data directory (embedded Postgres, Milvus
Lite, local ONNX embedder), then measures from this process over loopback:
1. the raw embedder alone (its batched throughput on a sample of the same
   texts), the yardstick for indexing;
2. batched writes (100 per call, 4 writers): acknowledged memories/s, and
   memories/s until everything is searchable (embedding + Milvus included),
   as a share of the raw embedder's throughput;
3. single-memory writes from 16 concurrent clients;
4. search latency p50/p99 with 1 and 16 concurrent clients, each query
   spanning every namespace (17 of them);
5. after stopping the hub: the parts of a search timed alone against whole
   searches, on the same data (bench/anatomy.py).
The texts are LoCoMo turns (real conversational English), the queries LoCoMo
questions.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anatomy  # noqa: E402
from hubproc import bench_policy_dir, running_hub, wait_until_indexed  # noqa: E402
from loadgen import Call, batched_writes, pct, raw_embedder_rate, searches, timed_clients  # noqa: E402
from locomo import DEFAULT_PATH, load  # noqa: E402

from memhub.client import MemhubClient, memory_input  # noqa: E402


def corpus(n: int, path: Path) -> tuple[list[tuple[str, str]], list[str]]:
    conversations = load(path)
    texts = [(c.sample_id, t.text) for c in conversations for t in c.turns]
    questions = [q.text for c in conversations for q in c.questions]
    items = []
    copy = 0
    while len(items) < n:  # repeat the corpus in fresh namespaces (dedup is per namespace)
        items += [(f"bench/copy{copy}/{sid}", text) for sid, text in texts]
        copy += 1
    return items[:n], questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=320, help="queries per search phase")
    parser.add_argument("--single-writes", type=int, default=1_600)
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH, help="LoCoMo json (texts and queries)")
    args = parser.parse_args()
    items, questions = corpus(args.memories, args.data)
    print("measuring the raw embedder...", file=sys.stderr)
    raw_rate = raw_embedder_rate([text for _, text in items[:1500]])
    data = Path(tempfile.mkdtemp(prefix="memhub-bench-"))
    try:
        with running_hub(data_dir=data) as hub:
            ingest = batched_writes(hub, items)

            def single_calls(i: int) -> list[Call]:
                texts = [f"single write {i}-{j} {time.time()}" for j in range(args.single_writes // 16)]
                return [lambda c, t=t: c.write([memory_input("bench/single", t)]) for t in texts]

            single = timed_clients(hub, 16, single_calls)
            with MemhubClient(hub.address, token=hub.token) as client:
                wait_until_indexed(client)  # the searches that follow should not compete with indexing
            one = searches(hub, questions, ["bench"], 1, args.queries)
            sixteen = searches(hub, questions, ["bench"], 16, max(1, args.queries // 16) * 2)
        print("timing the parts of a search...", file=sys.stderr)
        parts = anatomy.measure(data, bench_policy_dir(data), questions, ["bench"])
    finally:
        shutil.rmtree(data, ignore_errors=True)
    print(f"\nmemhub over gRPC on embedded defaults, {args.memories} memories (+{args.single_writes} single writes)")
    print(f"raw embedder (batched, alone):          {raw_rate:7.1f} texts/s")
    print(
        f"batched writes (100/call, 4 writers):   {ingest.acknowledged_per_s:7.1f} memories/s acknowledged; "
        f"{ingest.searchable_per_s:.1f} memories/s until searchable "
        f"= {100 * ingest.searchable_per_s / raw_rate:.0f}% of the raw embedder"
    )
    print(f"single writes (16 clients):             {single.summary('memories/s')}")
    print(f"search, 1 client:                       {one.summary()}")
    print(f"search, 16 clients:                     {sixteen.summary()}")
    print()
    print(anatomy.report(parts, (pct(one.latencies, 0.5), pct(one.latencies, 0.99))))


if __name__ == "__main__":
    main()
