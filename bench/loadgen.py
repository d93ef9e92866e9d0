"""Load generation and measurement shared by the throughput and scale benchmarks.

Everything here talks to a running hub over gRPC (``hubproc.running_hub``)
from this process, as agents would, and measures wall-clock figures; the
machine is shared and noisy, so compare figures measured in one run.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psutil
from hubproc import RunningHub, wait_until_indexed
from tqdm import tqdm

from memhub.client import MemhubClient, memory_input
from memhub.embedding import EmbeddingConfig, build_embedder, embed_bulk

Call = Callable[[MemhubClient], object]


def pct(values: Sequence[float], p: float) -> float:
    """The p-quantile of seconds, in milliseconds."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] * 1000


@dataclass(frozen=True)
class Timed:
    rate: float
    """Calls per second over the whole phase."""
    latencies: list[float]
    """Seconds per call."""

    def summary(self, unit: str = "searches/s") -> str:
        return f"p50 {pct(self.latencies, 0.5):7.1f} ms, p99 {pct(self.latencies, 0.99):7.1f} ms, {self.rate:6.1f} {unit}"


def timed_clients(hub: RunningHub, concurrency: int, calls: Callable[[int], list[Call]]) -> Timed:
    """Run calls(i) on client i, all clients at once (a thread each); rate and per-call latencies."""
    latencies: list[float] = []
    lock = threading.Lock()
    clients = [MemhubClient(hub.address, token=hub.token, timeout_s=120) for _ in range(concurrency)]
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
    return Timed(len(latencies) / elapsed, latencies)


def searches(hub: RunningHub, queries: Sequence[str], roots: Sequence[str], concurrency: int, per_client: int) -> Timed:
    """``concurrency`` clients each search ``per_client`` queries (distinct across clients), top 10."""

    def calls(i: int) -> list[Call]:
        mine = [queries[(i * per_client + j) % len(queries)] for j in range(per_client)]
        return [lambda c, q=q: c.search(q, list(roots), top_k=10) for q in mine]

    return timed_clients(hub, concurrency, calls)


@dataclass(frozen=True)
class Ingest:
    acknowledged_per_s: float
    searchable_per_s: float
    seconds_to_searchable: float


def batched_writes(hub: RunningHub, items: Sequence[tuple[str, str]], writers: int = 4, batch: int = 100) -> Ingest:
    """Write (namespace, text) items 100 per call from ``writers`` clients; time until acknowledged and until searchable."""
    batches = [items[i : i + batch] for i in range(0, len(items), batch)]
    clients = [MemhubClient(hub.address, token=hub.token, timeout_s=300) for _ in range(writers)]
    t0 = time.perf_counter()
    with tqdm(total=len(items), desc="writes", unit="mem", file=sys.stderr) as bar, ThreadPoolExecutor(writers) as pool:

        def send(i: int) -> None:
            clients[i % writers].write([memory_input(ns, text) for ns, text in batches[i]])
            bar.update(len(batches[i]))

        list(pool.map(send, range(len(batches))))
    acked = time.perf_counter() - t0
    wait_until_indexed(clients[0], progress=True)
    searchable = time.perf_counter() - t0
    for c in clients:
        c.close()
    return Ingest(len(items) / acked, len(items) / searchable, searchable)


def raw_embedder_rate(texts: Sequence[str]) -> float:
    """Texts per second of the hub's default embedder (batched, all workers) on ``texts``, alone in this process.

    The yardstick for indexing throughput: indexing cannot beat embedding.
    """
    embedder = build_embedder(EmbeddingConfig())
    try:
        embed_bulk(embedder, list(texts[:64]))  # warm-up
        t0 = time.perf_counter()
        for start in range(0, len(texts), 256):
            embed_bulk(embedder, list(texts[start : start + 256]))
        return len(texts) / (time.perf_counter() - t0)
    finally:
        embedder.close()


def resident_memory(hub: RunningHub) -> dict[str, float]:
    """Resident memory in MiB of the hub process, its Milvus Lite child and the embedded Postgres processes."""
    hub_proc = psutil.Process(hub.pid)
    milvus = [c for c in hub_proc.children(recursive=True) if "milvus" in c.name()]
    data = str(Path(hub.data_dir).resolve())
    postgres = []
    for p in psutil.process_iter(["name", "cmdline"]):
        try:
            if "postgres" in (p.info["name"] or "") and data in " ".join(p.info["cmdline"] or []):
                postgres.append(p)
                postgres += p.children(recursive=True)
        except psutil.Error:
            continue

    def mib(procs: list[psutil.Process]) -> float:
        total = 0
        for p in {q.pid: q for q in procs}.values():
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        return total / 2**20

    return {"hub": mib([hub_proc]), "milvus": mib(milvus), "postgres": mib(postgres)}
