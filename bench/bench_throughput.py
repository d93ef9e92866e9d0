"""Write throughput, indexing against the raw embedder, and search latency over gRPC, on the embedded defaults.

    .venv/bin/python bench/bench_throughput.py [--memories 10000] [--queries 320] [--data-dir DIR]

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
questions. Every phase also prints the CPU the hub, its Milvus Lite and its
Postgres spent per memory or per search, and the run prints the load average
at its start and end: on a shared machine compare runs by those, and rates
only within one run. ``--data-dir`` keeps the data (a second run with the
same directory measures searches without writing again).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anatomy  # noqa: E402
from hubproc import bench_policy_dir, running_hub, wait_until_indexed  # noqa: E402
from loadgen import (  # noqa: E402
    Call,
    StackCPU,
    batched_writes,
    load_average,
    pct,
    raw_embedder,
    resident_memory,
    searches,
    timed_clients,
)
from locomo import DEFAULT_PATH, load  # noqa: E402
from milvus_server import MilvusServerError, milvus_server  # noqa: E402
from thread_cpu import HubThreadCPU, by_thread  # noqa: E402

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
    parser.add_argument("--data-dir", type=Path, help="keep the hub's data here (reused when it already holds the corpus)")
    parser.add_argument("--no-anatomy", action="store_true", help="skip timing the parts of a search after the run")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE hub setting (repeatable)")
    parser.add_argument(
        "--milvus-server",
        action="store_true",
        help="index in a Milvus 2.3.5 server (the PyPI milvus package) instead of the embedded Milvus Lite; keywords then "
        "come from Postgres full-text search",
    )
    args = parser.parse_args()
    if any("=" not in kv for kv in args.env):
        parser.error("--env takes KEY=VALUE")
    started_load = load_average()
    items, questions = corpus(args.memories, args.data)
    print("measuring the raw embedder...", file=sys.stderr)
    raw = raw_embedder([text for _, text in items[:1500]])
    data = args.data_dir or Path(tempfile.mkdtemp(prefix="memhub-bench-"))
    data.mkdir(mode=0o700, parents=True, exist_ok=True)  # the hub refuses a data directory others can read
    ingest = single = None
    ingest_threads = search_threads = ""
    parts = []
    stack = contextlib.ExitStack()
    try:
        server = stack.enter_context(milvus_server(data / "milvus-server")) if args.milvus_server else None
        env = ({"MEMHUB_MILVUS_URI": server.uri} if server else {}) | dict(kv.split("=", 1) for kv in args.env)
        with running_hub(data_dir=data, extra_env=env) as hub:
            cpu = StackCPU(hub, server.pids if server else ())
            with MemhubClient(hub.address, token=hub.token) as client:
                fresh = not client.list(["bench/copy0"], page_size=1).memories
            threads = HubThreadCPU([p.pid for p in cpu.processes()["hub"]])
            if fresh:
                before = threads.seconds()
                ingest = batched_writes(hub, items, cpu=cpu)
                ingest_threads = by_thread(before, threads.seconds(), len(items))

                def single_calls(i: int) -> list[Call]:
                    texts = [f"single write {i}-{j} {time.time()}" for j in range(args.single_writes // 16)]
                    return [lambda c, t=t: c.write([memory_input("bench/single", t)]) for t in texts]

                single = timed_clients(hub, 16, single_calls, cpu)
                with MemhubClient(hub.address, token=hub.token) as client:
                    wait_until_indexed(client)  # the searches that follow should not compete with indexing
            memory = resident_memory(hub, server.pids if server else ())
            one = searches(hub, questions, ["bench"], 1, args.queries, cpu)
            before = threads.seconds()
            sixteen = searches(hub, questions, ["bench"], 16, max(1, args.queries // 16) * 2, cpu)
            search_threads = by_thread(before, threads.seconds(), len(sixteen.latencies))
        if not (args.no_anatomy or args.milvus_server):  # the anatomy opens the embedded stores
            print("timing the parts of a search...", file=sys.stderr)
            parts = anatomy.measure(data, bench_policy_dir(data), questions, ["bench"])
    finally:
        stack.close()
        if args.data_dir is None:
            shutil.rmtree(data, ignore_errors=True)
    where = "a Milvus 2.3.5 server (keywords: Postgres full-text)" if args.milvus_server else "embedded defaults"
    print(f"\nmemhub over gRPC on {where}, {args.memories} memories (+{args.single_writes} single writes)")
    print(f"at the start: {started_load}; at the end: {load_average()}")
    if args.env:
        print(f"hub settings: {' '.join(args.env)}")
    print(f"raw embedder (batched, alone):          {raw.summary()}")
    if ingest is not None and single is not None:
        print(f"batched writes (100/call, 4 writers):   {ingest.summary(raw)}")
        print(f"  the hub's CPU per memory by thread:   {ingest_threads}")
        print(f"single writes (16 clients):             {single.summary('memories/s')}")
    else:
        print("writes: skipped (the data directory already held the corpus)")
    print(
        f"resident memory:                        hub {memory['hub']:.0f} MiB, Milvus {memory['milvus']:.0f} MiB, "
        f"Postgres {memory['postgres']:.0f} MiB"
    )
    print(f"search, 1 client:                       {one.summary()}")
    print(f"search, 16 clients:                     {sixteen.summary()}")
    print(f"  the hub's CPU per search by thread:   {search_threads}")
    if parts:
        print()
        print(anatomy.report(parts, (pct(one.latencies, 0.5), pct(one.latencies, 0.99))))


if __name__ == "__main__":
    try:
        main()
    except MilvusServerError as exc:
        raise SystemExit(f"bench_throughput: {exc}") from None
