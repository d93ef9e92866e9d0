"""Search latency through memhub's three clients, side by side, against one hub started for the run.

    .venv/bin/python bench/bench_clients.py [--queries 400] [--memories 300]

Prints p50 (and p90) of a search's round trip through: the synchronous Python client (one call at a time), the
asyncio client with 16 concurrent tasks on one channel in one process (so p50 includes queueing behind the
other 15; throughput is printed too), and the TypeScript client (clients/typescript, one call at a time; built
with npm first). The load average is printed at the start and the end: on a shared machine compare the ratios
of one run, not absolute figures across runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from hubproc import running_hub  # noqa: E402

from memhub.aio import AsyncMemhubClient  # noqa: E402
from memhub.client import MemhubClient, memory_input  # noqa: E402

NAMESPACE = "bench/clients"
TASKS = 16


def _query(i: int) -> str:
    return f"which team owns service {i % 50}?"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def sync_latencies(address: str, token: str, count: int) -> list[float]:
    with MemhubClient(address, token=token) as client:
        for i in range(20):
            client.search(_query(i), [NAMESPACE], top_k=5)
        out = []
        for i in range(count):
            started = time.perf_counter()
            client.search(_query(i), [NAMESPACE], top_k=5)
            out.append((time.perf_counter() - started) * 1000)
        return out


async def async_latencies(address: str, token: str, count: int) -> tuple[list[float], float]:
    async with AsyncMemhubClient(address, token=token) as client:
        await asyncio.gather(*(client.search(_query(i), [NAMESPACE], top_k=5) for i in range(TASKS)))
        out: list[float] = []

        async def worker(first: int) -> None:
            for i in range(first, count, TASKS):
                started = time.perf_counter()
                await client.search(_query(i), [NAMESPACE], top_k=5)
                out.append((time.perf_counter() - started) * 1000)

        began = time.perf_counter()
        await asyncio.gather(*(worker(t) for t in range(TASKS)))
        return out, count / (time.perf_counter() - began)


def typescript_latencies(address: str, token: str, count: int) -> list[float]:
    package = REPO / "clients" / "typescript"
    if not (package / "node_modules").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=package, check=True, capture_output=True)
    subprocess.run(["npm", "run", "build"], cwd=package, check=True, capture_output=True)
    env = {
        **os.environ,
        "MEMHUB_ADDRESS": address,
        "MEMHUB_TOKEN": token,
        "BENCH_NAMESPACE": NAMESPACE,
        "BENCH_QUERIES": str(count),
    }
    proc = subprocess.run(
        ["node", "dist/bench/search-latency.js"], cwd=package, check=True, capture_output=True, text=True, env=env
    )
    latencies: list[float] = json.loads(proc.stdout.strip().splitlines()[-1])["latencies_ms"]
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=400, help="searches per client (default 400)")
    parser.add_argument("--memories", type=int, default=300, help="memories to search over (default 300)")
    args = parser.parse_args()
    if args.queries < TASKS or args.memories < 1:
        parser.error(f"--queries must be at least {TASKS} and --memories at least 1")
    print(f"load average at start: {_load()} ({os.cpu_count()} cores)", flush=True)
    with running_hub() as hub:
        with MemhubClient(hub.address, token=hub.token) as client:
            for start in range(0, args.memories, 100):
                batch = [
                    memory_input(NAMESPACE, f"Service {i} is owned by team {i % 7} and deployed from region {i % 3}", type="fact")
                    for i in range(start, min(start + 100, args.memories))
                ]
                client.write(batch, wait_indexed=True)
        print(f"hub up, {args.memories} memories written; {args.queries} searches per client", flush=True)
        rows = [("python sync, 1 at a time", sync_latencies(hub.address, hub.token, args.queries), None)]
        concurrent, rate = asyncio.run(async_latencies(hub.address, hub.token, args.queries))
        rows.append((f"python asyncio, {TASKS} tasks", concurrent, rate))
        rows.append(("typescript, 1 at a time", typescript_latencies(hub.address, hub.token, args.queries), None))
    print(f"{'client':<28} {'p50 ms':>8} {'p90 ms':>8} {'mean ms':>8} {'searches/s':>11}")
    for name, values, throughput in rows:
        per_s = throughput if throughput is not None else 1000 / statistics.mean(values)
        p50, p90 = _percentile(values, 0.5), _percentile(values, 0.9)
        print(f"{name:<28} {p50:8.2f} {p90:8.2f} {statistics.mean(values):8.2f} {per_s:11.1f}")
    print(f"load average at end: {_load()}")


if __name__ == "__main__":
    main()
