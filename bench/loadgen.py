"""Load generation and measurement shared by the throughput and scale benchmarks.

Everything here talks to a running hub over gRPC (``hubproc.running_hub``)
from this process, as agents would, and measures wall-clock figures; the
machine is shared and noisy, so compare figures measured in one run. Beside
the wall clock, each phase counts the CPU time the hub, its Milvus and its
Postgres spent (``StackCPU``): per search or per memory, it moves far less
with the machine's load than rates and latencies do.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

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


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as uptime prints them."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"


class StackCPU:
    """CPU seconds (user + system) of the hub process, the Milvus under it and its embedded Postgres, for a phase.

    ``extra`` adds processes that are not the hub's children (a Milvus server started beside it)."""

    def __init__(self, hub: RunningHub, extra: Sequence[int] = ()) -> None:
        self._hub = hub
        self._extra = list(extra)

    def processes(self) -> dict[str, list[psutil.Process]]:
        hub_proc = psutil.Process(self._hub.pid)
        children = hub_proc.children(recursive=True)
        milvus = [c for c in children if "milvus" in c.name()]
        # `memhub serve --processes N`: the hub processes are the supervisor's children.
        hubs = [hub_proc] + [c for c in children if "--group-member" in " ".join(_cmdline(c))]
        milvus += [psutil.Process(pid) for pid in self._extra]
        data = str(Path(self._hub.data_dir).resolve())
        postgres = []
        for proc in psutil.process_iter(["name", "cmdline"]):
            try:
                if "postgres" in (proc.info["name"] or "") and data in " ".join(proc.info["cmdline"] or []):
                    postgres.append(proc)
                    postgres += proc.children(recursive=True)
            except psutil.Error:
                continue
        return {"hub": hubs, "milvus": milvus, "postgres": postgres}

    def seconds(self) -> dict[str, float]:
        """CPU seconds so far per part (processes that ended meanwhile are not counted)."""
        out = {}
        for part, procs in self.processes().items():
            total = 0.0
            for proc in {q.pid: q for q in procs}.values():
                try:
                    times = proc.cpu_times()
                    total += times.user + times.system + getattr(times, "children_user", 0) + getattr(times, "children_system", 0)
                except psutil.Error:
                    pass
            out[part] = total
        return out


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.Error:
        return []


def cpu_per(before: dict[str, float], after: dict[str, float], count: int) -> dict[str, float]:
    """Milliseconds of CPU per item (search, memory) for each part, between two ``StackCPU.seconds``."""
    return {part: 1000 * (after[part] - before.get(part, 0.0)) / max(1, count) for part in after}


def cpu_summary(per_item: dict[str, float], unit: str) -> str:
    parts = ", ".join(f"{part} {ms:.1f}" for part, ms in per_item.items())
    return f"CPU per {unit}: {sum(per_item.values()):.1f} ms ({parts})"


@dataclass(frozen=True)
class Timed:
    rate: float
    """Calls per second over the whole phase."""
    latencies: list[float]
    """Seconds per call."""
    cpu_ms: dict[str, float] = field(default_factory=dict)
    """CPU milliseconds per call of the hub, its Milvus and its Postgres, when measured."""
    clients_cpu_ms: float | None = None
    """CPU milliseconds per call of the clients themselves (this process), when the stack's is measured: on one
    machine they draw on the same cores, so the stack's share of them is what is left."""

    def summary(self, unit: str = "searches/s") -> str:
        line = f"p50 {pct(self.latencies, 0.5):7.1f} ms, p99 {pct(self.latencies, 0.99):7.1f} ms, {self.rate:6.1f} {unit}"
        if self.cpu_ms:
            line += "; " + cpu_summary(self.cpu_ms, "call")
        if self.clients_cpu_ms is not None:
            line += f"; the clients {self.clients_cpu_ms:.1f} ms a call"
        return line


class CPUMeter(Protocol):
    def seconds(self) -> dict[str, float]: ...


def timed_clients(
    hub: RunningHub | Sequence[RunningHub],
    concurrency: int,
    calls: Callable[[int], list[Call]],
    cpu: CPUMeter | None = None,
) -> Timed:
    """Run calls(i) on client i, all clients at once (a thread each); rate, per-call latencies and (with ``cpu``) the
    stack's CPU per call. Given several hubs, client i calls hub i mod their number (as a balancer spreads
    connections); the first hub's token serves them all (they share a JWT secret)."""
    hubs = [hub] if isinstance(hub, RunningHub) else list(hub)
    latencies: list[float] = []
    lock = threading.Lock()
    clients = [MemhubClient(hubs[i % len(hubs)].address, token=hubs[0].token, timeout_s=120) for i in range(concurrency)]
    for c in clients:  # warm the channels: connection set-up is not what we measure
        c.healthy()

    def worker(i: int) -> None:
        for call in calls(i):
            t0 = time.perf_counter()
            call(clients[i])
            with lock:
                latencies.append(time.perf_counter() - t0)

    started = cpu.seconds() if cpu else {}
    t0, clients_started = time.perf_counter(), time.process_time()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    # This process does nothing but the clients' calls meanwhile.
    clients_ms = 1000 * (time.process_time() - clients_started) / max(1, len(latencies)) if cpu else None
    spent = cpu_per(started, cpu.seconds(), len(latencies)) if cpu else {}
    for c in clients:
        c.close()
    return Timed(len(latencies) / elapsed, latencies, spent, clients_ms)


def searches(
    hub: RunningHub | Sequence[RunningHub],
    queries: Sequence[str],
    roots: Sequence[str],
    concurrency: int,
    per_client: int,
    cpu: CPUMeter | None = None,
) -> Timed:
    """``concurrency`` clients each search ``per_client`` queries (distinct across clients), top 10; spread over
    several hubs as ``timed_clients`` does."""

    def calls(i: int) -> list[Call]:
        mine = [queries[(i * per_client + j) % len(queries)] for j in range(per_client)]
        return [lambda c, q=q: c.search(q, list(roots), top_k=10) for q in mine]

    return timed_clients(hub, concurrency, calls, cpu)


@dataclass(frozen=True)
class Ingest:
    acknowledged_per_s: float
    searchable_per_s: float
    seconds_to_searchable: float
    cpu_ms: dict[str, float] = field(default_factory=dict)
    """CPU milliseconds per memory of the hub, its Milvus and its Postgres, from the first write until searchable."""

    def summary(self, raw: RawEmbedder) -> str:
        """``raw``: the embedder alone, measured in the same run."""
        rate = raw.rate
        line = (
            f"{self.acknowledged_per_s:7.1f} memories/s acknowledged; searchable after {self.seconds_to_searchable / 60:.1f} "
            f"min = {self.searchable_per_s:.1f} memories/s ({100 * self.searchable_per_s / rate:.0f}% of the raw "
            f"embedder); " + cpu_summary(self.cpu_ms, "memory")
        )
        if self.cpu_ms:
            # The embedder's own CPU per text over the whole stack's per memory: the share of the raw embedder's
            # throughput the stack reaches when the cores are the bound, whatever else loads the machine.
            line += f"; the embedder's CPU is {100 * raw.cpu_ms / sum(self.cpu_ms.values()):.0f}% of it"
        return line


def batched_writes(
    hub: RunningHub, items: Sequence[tuple[str, str]], writers: int = 4, batch: int = 100, cpu: StackCPU | None = None
) -> Ingest:
    """Write (namespace, text) items 100 per call from ``writers`` clients; time until acknowledged and until searchable."""
    batches = [items[i : i + batch] for i in range(0, len(items), batch)]
    clients = [MemhubClient(hub.address, token=hub.token, timeout_s=300) for _ in range(writers)]
    cpu = cpu or StackCPU(hub)
    started = cpu.seconds()
    t0 = time.perf_counter()
    with tqdm(total=len(items), desc="writes", unit="mem", file=sys.stderr) as bar, ThreadPoolExecutor(writers) as pool:

        def send(i: int) -> None:
            clients[i % writers].write([memory_input(ns, text) for ns, text in batches[i]])
            bar.update(len(batches[i]))

        list(pool.map(send, range(len(batches))))
    acked = time.perf_counter() - t0
    wait_until_indexed(clients[0], progress=True)
    searchable = time.perf_counter() - t0
    spent = cpu_per(started, cpu.seconds(), len(items))
    for c in clients:
        c.close()
    return Ingest(len(items) / acked, len(items) / searchable, searchable, spent)


@dataclass(frozen=True)
class RawEmbedder:
    """The hub's default embedder alone in this process, batched: the yardstick for indexing."""

    rate: float
    """Texts per second (wall clock: moves with the machine's load)."""
    cpu_ms: float
    """CPU milliseconds per text (all its threads): far steadier than the rate on a shared machine."""

    def summary(self) -> str:
        return f"{self.rate:7.1f} texts/s, CPU {self.cpu_ms:.1f} ms per text"


def raw_embedder(texts: Sequence[str]) -> RawEmbedder:
    """Throughput and CPU per text of the hub's default embedder (batched, all workers) on ``texts``.

    Indexing cannot beat embedding: ``Ingest.summary`` compares the hub's rate with ``rate``, and the stack's CPU per
    memory with ``cpu_ms`` (on 2 busy cores, CPU decides throughput, so that share is what the rate would be on a
    quiet machine).
    """
    embedder = build_embedder(EmbeddingConfig())
    try:
        embed_bulk(embedder, list(texts[:64]))  # warm-up
        t0, c0 = time.perf_counter(), time.process_time()
        for start in range(0, len(texts), 256):
            embed_bulk(embedder, list(texts[start : start + 256]))
        return RawEmbedder(len(texts) / (time.perf_counter() - t0), 1000 * (time.process_time() - c0) / len(texts))
    finally:
        embedder.close()


def resident_memory(hub: RunningHub, extra: Sequence[int] = ()) -> dict[str, float]:
    """Resident memory in MiB of the hub process, its Milvus (Lite child, or ``extra`` server processes) and the
    embedded Postgres processes."""

    def mib(procs: list[psutil.Process]) -> float:
        total = 0
        for p in {q.pid: q for q in procs}.values():
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        return total / 2**20

    return {part: mib(procs) for part, procs in StackCPU(hub, extra).processes().items()}
