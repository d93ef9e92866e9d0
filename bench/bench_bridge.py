"""What the MCP bridge costs: tool-call latency through the bridge versus a direct gRPC call, tracing off and on.

    .venv/bin/python bench/bench_bridge.py [--memories 1000] [--searches 300] [--writes 60]

For each tracing setting, one `memhub serve` process (bench/hubproc.py, embedded
defaults, scratch data directory) holding the same memories, and three ways to
make the same call, measured in one run, round-robin with a rotating order so
machine noise hits every path alike:
- direct gRPC: memhub.client.MemhubClient in this process (the baseline);
- bridge in memory: memhub.bridge.build_bridge + the SDK's in-process
  `mcp.Client(server)`: the bridge's own cost (SDK dispatch, argument
  validation, worker thread, result building) without any transport;
- bridge over HTTP: `memhub bridge --transport http` as its own process,
  called by the SDK's streamable HTTP client with the bridge's bearer token:
  what a remote MCP client (Dify, an agent framework) sees.
Calls: search (top_k 10 over every readable namespace) and write (one memory,
waiting until it is searchable, as the bridge's write_memory always does).

Tracing on means every process exports every span (the hub, the HTTP bridge,
and this process, which hosts the in-memory bridge and the clients) with
the file exporter (JSON lines, batched every 100 ms), so the figures include
span creation, context propagation and export; off means no exporter at all.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx2  # noqa: E402
from hubproc import REPO, running_hub  # noqa: E402
from locomo import DEFAULT_PATH, load  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from memhub import telemetry  # noqa: E402
from memhub.bridge import BridgeSettings, Narrowing, build_bridge  # noqa: E402
from memhub.client import MemhubClient, memory_input  # noqa: E402

NAMESPACE = "bench/bridge"
HTTP_TOKEN = "bench-" + uuid.uuid4().hex


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] * 1000


def fmt(values: list[float]) -> str:
    return f"p50 {pct(values, 0.5):7.2f} ms   p99 {pct(values, 0.99):7.2f} ms"


def texts_and_queries(memories: int) -> tuple[list[str], list[str]]:
    conversations = load(DEFAULT_PATH)
    texts = list(dict.fromkeys(t.text for c in conversations for t in c.turns))[:memories]
    queries = [q.text for c in conversations for q in c.questions]
    return texts, queries


def trace_env(tracing: bool, folder: Path, name: str) -> dict[str, str]:
    if not tracing:
        return {"MEMHUB_TRACES_EXPORTER": "none"}
    return {"MEMHUB_TRACES_EXPORTER": "file", "MEMHUB_TRACES_FILE": str(folder / f"{name}.jsonl")}


@contextlib.contextmanager
def http_bridge(address: str, token: str, env_extra: dict[str, str]) -> Iterator[str]:
    """A `memhub bridge --transport http --port 0` process; yields its URL."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHUB_", "OTEL_"))}
    env |= {"MEMHUB_TOKEN": token, "MEMHUB_BRIDGE_HTTP_TOKEN": HTTP_TOKEN} | env_extra
    proc = subprocess.Popen(
        [sys.executable, "-m", "memhub.cli.main", "bridge", "--hub", address, "--transport", "http", "--port", "0"]
        + ["--log-level", "warning"],
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
    )
    try:
        for line in proc.stderr:
            match = re.search(r" on (http://\S+/mcp)", line)
            if match:
                break
        else:
            raise SystemExit(f"the bridge did not start (exit code {proc.wait()})")
        # Keep draining stderr so the bridge never blocks on a full pipe.
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        yield match.group(1)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


@contextlib.asynccontextmanager
async def http_client(url: str) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {HTTP_TOKEN}"}, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


async def timed(fn: Callable[[], Awaitable[object]]) -> float:
    t0 = time.perf_counter()
    await fn()
    return time.perf_counter() - t0


async def run_phase(
    tracing: bool, args: argparse.Namespace, texts: list[str], queries: list[str], spans: Path
) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}
    with running_hub(extra_env=trace_env(tracing, spans, "hub")) as hub:
        direct = MemhubClient(hub.address, token=hub.token)
        for start in range(0, len(texts), 100):
            direct.write([memory_input(NAMESPACE, t) for t in texts[start : start + 100]], wait_indexed=True)
        if tracing:
            telemetry.setup_tracing(telemetry.TelemetryConfig("memhub-bench", "file", spans / "bench.jsonl"))
        settings = BridgeSettings(hub_address=hub.address, token=hub.token, narrowing=Narrowing(default_namespace=NAMESPACE))
        with build_bridge(settings) as bridge, http_bridge(hub.address, hub.token, trace_env(tracing, spans, "bridge")) as url:
            async with Client(bridge.server) as in_memory, http_client(url) as over_http:
                tag = uuid.uuid4().hex[:8]

                def search_paths(q: str) -> dict[str, Callable[[], Awaitable[object]]]:
                    async def direct_search() -> None:
                        direct.search(q, [], top_k=10)  # blocking, as an agent using the gRPC client would call it

                    return {
                        "search  direct gRPC      ": direct_search,
                        "search  bridge, in memory": lambda: in_memory.call_tool("search_memories", {"query": q}),
                        "search  bridge, HTTP     ": lambda: over_http.call_tool("search_memories", {"query": q}),
                    }

                def write_paths(i: int) -> dict[str, Callable[[], Awaitable[object]]]:
                    async def direct_write() -> None:
                        item = memory_input(NAMESPACE, f"bench write {tag} {i} via gRPC: {texts[i % len(texts)]}")
                        direct.write([item], request_id=uuid.uuid4().hex, wait_indexed=True)

                    return {
                        "write   direct gRPC      ": direct_write,
                        "write   bridge, in memory": lambda: in_memory.call_tool(
                            "write_memory", {"content": f"bench write {tag} {i} in memory: {texts[i % len(texts)]}"}
                        ),
                        "write   bridge, HTTP     ": lambda: over_http.call_tool(
                            "write_memory", {"content": f"bench write {tag} {i} over HTTP: {texts[i % len(texts)]}"}
                        ),
                    }

                for i in range(20):  # warm-up: connections, caches, the embedder
                    for fn in search_paths(queries[i]).values():
                        await fn()
                rounds = [("search", i) for i in range(args.searches)] + [("write", i) for i in range(args.writes)]
                for n, (kind, i) in enumerate(rounds):
                    paths = search_paths(queries[(20 + i) % len(queries)]) if kind == "search" else write_paths(i)
                    items = list(paths.items())
                    shift = n % len(items)  # rotate which path goes first
                    for label, fn in items[shift:] + items[:shift]:
                        results.setdefault(label, []).append(await timed(fn))
        direct.close()
        if tracing:
            telemetry.shutdown_tracing()
    return results


async def main_async(args: argparse.Namespace) -> None:
    texts, queries = texts_and_queries(args.memories)
    spans = Path(tempfile.mkdtemp(prefix="memhub-bench-bridge-spans-"))
    try:
        report = {}
        for tracing in (False, True):
            print(f"tracing {'on' if tracing else 'off'}: starting a hub and a bridge...", file=sys.stderr)
            report[tracing] = await run_phase(tracing, args, texts, queries, spans)
        counts = {f.stem: len(telemetry.read_spans_file(f)) for f in sorted(spans.glob("*.jsonl"))}
    finally:
        shutil.rmtree(spans, ignore_errors=True)

    print(f"\nbridge cost: {len(texts)} memories, {args.searches} searches and {args.writes} writes per path, one run")
    for tracing, results in report.items():
        print(f"\ntracing {'on (file exporter in every process)' if tracing else 'off'}")
        for label, values in results.items():
            print(f"  {label}  {fmt(values)}")
    print(f"\nspans exported with tracing on: {', '.join(f'{k} {v}' for k, v in counts.items())}")


def main() -> None:
    # Before build_bridge: MCPServer() calls logging.basicConfig(level=INFO) when nothing configured logging,
    # which would print every HTTP request the benchmark makes.
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--writes", type=int, default=60)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
