"""What the web console adds to a call: its pages against the gRPC calls behind them, measured in one run.

    .venv/bin/python bench/bench_console.py [--memories 500] [--rounds 60]

Starts a hub (embedded Postgres, Milvus Lite, the shipped default policy plus an open one for the bench's
agent) and a console in this process, writes N memories, then times, alternating in each round so the
machine's load falls on both alike: ListMemories (page of 50) vs GET /memories, SearchMemories with
explain vs GET /search, QueryAuditLog (page of 100) vs GET /audit. Prints p50 and p95 of each and the
ratio of the medians (page / call): the console's cost is rendering and the HTTP round trip.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import httpx

from memhub.api.server import build_server
from memhub.app import Hub
from memhub.auth import issue_token, load_secret
from memhub.client import MemhubClient, memory_input
from memhub.config import HubConfig, PolicyConfig, ServerConfig, StoreConfig
from memhub.console.config import ConsoleConfig
from memhub.console.server import ConsoleServer
from memhub.db import embedded_pg
from memhub.v1 import admin_pb2 as apb

REPO = Path(__file__).resolve().parent.parent
OPEN = '@id("bench-open")\npermit(principal in Group::"bench", action, resource);\n'


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="memhub-bench-console-") as tmp:
        root = Path(tmp)
        data = root / "data"
        data.mkdir(mode=0o700)
        policies = root / "policies"
        policies.mkdir()
        shutil.copy(REPO / "policies" / "schema.cedarschema", policies)
        (policies / "open.cedar").write_text(OPEN)
        config = HubConfig(store=StoreConfig(data_dir=data), server=ServerConfig(port=0), policy=PolicyConfig(dir=policies))
        hub = Hub.open(config)
        server, port, _ = build_server(hub)
        server.start()
        hub.start_background()
        console = None
        try:
            address = f"127.0.0.1:{port}"
            token = issue_token(
                load_secret(hub.config.auth.hs256_secret_file), agent_id="bench", groups=["bench"], ttl=timedelta(hours=2)
            ).token
            client = MemhubClient(address, token=token)
            ns = "bench/console"
            for start in range(0, args.memories, 100):
                batch = [
                    memory_input(ns, f"Bench memory {i}: service {i % 17} answered in {i % 90} ms on host h{i % 5}", type="fact")
                    for i in range(start, min(start + 100, args.memories))
                ]
                client.write(batch, wait_indexed=True)
            console = ConsoleServer(ConsoleConfig(hub_address=address))
            console.start()
            http = httpx.Client(base_url=console.url, follow_redirects=False, timeout=60)
            form = http.get("/signin")
            csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', form.text).group(1)
            assert http.post("/signin", data={"csrf": csrf, "token": token}).status_code == 303
            pairs = {
                "list 50": (
                    lambda: client.list([ns], page_size=50),
                    lambda: http.get("/memories", params={"ns": ns, "page_size": "50"}),
                ),
                "search explain": (
                    lambda: client.search("which service answered slowly on host h3", [ns], explain=True),
                    lambda: http.get(
                        "/search", params={"q": "which service answered slowly on host h3", "ns": ns, "explain": "on"}
                    ),
                ),
                "audit 100": (
                    lambda: client.call_admin("QueryAuditLog", apb.QueryAuditLogRequest(page_size=100)),
                    lambda: http.get("/audit"),
                ),
            }
            timings: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in pairs}
            for _ in range(3):  # warm both paths
                for direct, page in pairs.values():
                    direct()
                    assert page().status_code == 200
            for _ in range(args.rounds):
                for name, (direct, page) in pairs.items():
                    t = time.perf_counter()
                    direct()
                    timings[name][0].append(time.perf_counter() - t)
                    t = time.perf_counter()
                    response = page()
                    timings[name][1].append(time.perf_counter() - t)
                    assert response.status_code == 200, response.text[:300]
            print(f"bench_console: {args.memories} memories, {args.rounds} rounds")
            print(f"{'':16} {'gRPC p50':>9} {'p95':>8} {'page p50':>9} {'p95':>8} {'page/gRPC':>10}")
            for name, (direct, page) in timings.items():
                d50, d95 = _percentiles(direct)
                p50, p95 = _percentiles(page)
                print(
                    f"{name:16} {d50 * 1000:8.1f}ms {d95 * 1000:7.1f}ms {p50 * 1000:8.1f}ms {p95 * 1000:7.1f}ms {p50 / d50:9.2f}x"
                )
            http.close()
            client.close()
        finally:
            if console is not None:
                console.stop()
            server.stop(grace=None)
            hub.close()
            embedded_pg.release(data)  # before the temporary directory goes
    return 0


if __name__ == "__main__":
    sys.exit(main())
