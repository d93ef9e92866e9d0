"""Write throughput and search latency over gRPC, on the embedded defaults.

    .venv/bin/python bench/bench_throughput.py [--memories 10000] [--queries 300]

Starts `memhub serve` in a scratch data directory (embedded Postgres, Milvus
Lite, local ONNX embedder), then measures from this process over loopback:
1. batched writes (100 per call, 4 writers): acknowledged memories/s, and
   memories/s until everything is searchable (embedding + Milvus included);
2. single-memory writes from 16 concurrent clients (the embedder batches
   across them in the indexer);
3. search latency p50/p99 with 1 and with 16 concurrent clients, each query
   spanning every namespace.
The texts are LoCoMo turns (real conversational English), the queries LoCoMo
questions.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hubproc import RunningHub, running_hub, wait_until_indexed  # noqa: E402
from locomo import DEFAULT_PATH, load  # noqa: E402
from tqdm import tqdm  # noqa: E402

from hub.client import MemhubClient, memory_input  # noqa: E402


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


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] * 1000


def batched_writes(hub: RunningHub, items: list[tuple[str, str]]) -> tuple[float, float]:
    batches = [items[i : i + 100] for i in range(0, len(items), 100)]
    clients = [MemhubClient(hub.address, token=hub.token, timeout_s=120) for i in range(4)]
    t0 = time.perf_counter()
    with tqdm(total=len(items), desc="batched writes", unit="mem", file=sys.stderr) as bar, ThreadPoolExecutor(4) as pool:

        def send(i: int) -> None:
            clients[i % 4].write([memory_input(ns, text) for ns, text in batches[i]])
            bar.update(len(batches[i]))

        list(pool.map(send, range(len(batches))))
    acked = time.perf_counter() - t0
    wait_until_indexed(clients[0])
    indexed = time.perf_counter() - t0
    for c in clients:
        c.close()
    return len(items) / acked, len(items) / indexed


Call = Callable[[MemhubClient], object]


def timed_clients(hub: RunningHub, concurrency: int, calls: Callable[[int], list[Call]]) -> tuple[float, list[float]]:
    """Run calls(i) on client i, all clients at once; return (calls per second, per-call latencies)."""
    latencies: list[float] = []
    lock = threading.Lock()
    clients = [MemhubClient(hub.address, token=hub.token) for _ in range(concurrency)]
    for c in clients:  # warm the channels: connection set-up is not what we measure
        c.healthy()

    def worker(i: int) -> None:
        for call in calls(i):
            t0 = time.perf_counter()
            call(clients[i])
            with lock:
                latencies.append(time.perf_counter() - t0)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    for c in clients:
        c.close()
    return len(latencies) / elapsed, latencies


def single_writes(hub: RunningHub, n: int, concurrency: int = 16) -> tuple[float, list[float]]:
    def calls(i: int) -> list[Call]:
        texts = [f"single write {i}-{j} {time.time()}" for j in range(n // concurrency)]
        return [lambda c, t=t: c.write([memory_input("bench/single", t)]) for t in texts]

    result = timed_clients(hub, concurrency, calls)
    with MemhubClient(hub.address, token=hub.token) as client:
        wait_until_indexed(client)  # the searches that follow should not compete with indexing
    return result


def searches(hub: RunningHub, queries: list[str], concurrency: int) -> tuple[float, list[float]]:
    def calls(i: int) -> list[Call]:
        return [lambda c, q=q: c.search(q, ["bench"], top_k=10) for q in queries[i::concurrency]]

    return timed_clients(hub, concurrency, calls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=320, help="queries per search phase")
    parser.add_argument("--single-writes", type=int, default=1_600)
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH, help="LoCoMo json (texts and queries)")
    args = parser.parse_args()
    items, questions = corpus(args.memories, args.data)
    queries = (questions * (1 + args.queries // len(questions)))[: args.queries]
    with running_hub() as hub:
        ack_rate, indexed_rate = batched_writes(hub, items)
        single_rate, single_lat = single_writes(hub, args.single_writes)
        qps1, lat1 = searches(hub, queries, 1)
        qps16, lat16 = searches(hub, queries, 16)
    print(f"\nmemhub over gRPC on embedded defaults, {args.memories} memories (+{args.single_writes} single writes)")
    print(
        f"batched writes (100/call, 4 writers): {ack_rate:,.0f} memories/s acknowledged; "
        f"{indexed_rate:,.0f} memories/s until searchable"
    )
    print(
        f"single writes (16 clients):           {single_rate:,.0f} memories/s; "
        f"latency p50 {pct(single_lat, 0.5):.1f} ms, p99 {pct(single_lat, 0.99):.1f} ms"
    )
    print(
        f"search, 1 client:   p50 {pct(lat1, 0.5):.1f} ms, p99 {pct(lat1, 0.99):.1f} ms, "
        f"{qps1:.1f} searches/s (mean {1000 * statistics.mean(lat1):.1f} ms)"
    )
    print(f"search, 16 clients: p50 {pct(lat16, 0.5):.1f} ms, p99 {pct(lat16, 0.99):.1f} ms, {qps16:.1f} searches/s")


if __name__ == "__main__":
    main()
