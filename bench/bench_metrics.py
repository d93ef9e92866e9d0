"""What the Prometheus metrics cost a call: search and write latency with metrics on versus off, in one run.

    .venv/bin/python bench/bench_metrics.py [--memories 2000] [--rounds 300]

Two `memhub serve` processes (bench/hubproc.py, embedded defaults, scratch
data directories) run side by side with the same memories: one with
MEMHUB_METRICS_PORT set (the RPC interceptor, every instrument recording,
the store sampler: the outbox every 15 s, memories per status every 5 s
instead of 60; and this script scraping it every --scrape-s seconds
meanwhile, more often than Prometheus' default 15 s), one without (nothing
recorded). Calls alternate between the two, the
order flipped every round, so machine noise hits both alike. Calls: search
(top_k 10 over the namespace) and write (one memory, answered once
committed; the indexing that follows runs in the background of both hubs).

Latency on a shared machine is noisy, so the CPU time each hub process
used during the calls is printed too: both did the same work, so the ratio
is the metrics' own cost (the Python process only: its Milvus Lite child
and its Postgres are not counted). Also printed: what one scrape costs
(time to read /metrics, its size and series), and how long the samples of
the stores took at this size.
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psutil  # noqa: E402
from hubproc import running_hub, wait_until_indexed  # noqa: E402
from locomo import DEFAULT_PATH, load  # noqa: E402
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from memhub.client import MemhubClient, memory_input  # noqa: E402

NAMESPACE = "bench/metrics"


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] * 1000


def fmt(values: list[float]) -> str:
    return f"p50 {pct(values, 0.5):7.2f} ms   p99 {pct(values, 0.99):7.2f} ms"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_memories(client: MemhubClient, texts: list[str]) -> None:
    for start in range(0, len(texts), 100):
        client.write([memory_input(NAMESPACE, t) for t in texts[start : start + 100]])
    wait_until_indexed(client)


def scrape(url: str) -> tuple[float, int, int]:
    """(seconds, bytes, series) of one scrape."""
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=10) as reply:
        body = reply.read()
    took = time.perf_counter() - started
    series = sum(len(f.samples) for f in text_string_to_metric_families(body.decode()))
    return took, len(body), series


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2000, help="memories loaded into each hub first")
    parser.add_argument("--rounds", type=int, default=300, help="rounds of one search and one write on each hub")
    parser.add_argument("--scrape-s", type=float, default=5.0, help="seconds between scrapes of the metrics hub")
    args = parser.parse_args()

    conversations = load(DEFAULT_PATH)
    texts = list(dict.fromkeys(t.text for c in conversations for t in c.turns))[: args.memories]
    queries = [q.text for c in conversations for q in c.questions]
    port = free_port()
    # The outbox at its default interval; memories per status every 5 s (default 60 s), so its figure is at this size.
    metrics_env = {"MEMHUB_METRICS_PORT": str(port), "MEMHUB_METRICS_STATUS_SAMPLE_S": "5"}
    url = f"http://127.0.0.1:{port}/metrics"
    print(f"starting two hubs and loading {len(texts)} memories into each...", file=sys.stderr)
    with running_hub(extra_env=metrics_env) as on_hub, running_hub() as off_hub:
        on = MemhubClient(on_hub.address, token=on_hub.token)
        off = MemhubClient(off_hub.address, token=off_hub.token)
        for client in (on, off):
            load_memories(client, texts)
        for i in range(20):  # warm-up: connections, caches, the embedder
            for client in (on, off):
                client.search(queries[i], [NAMESPACE], top_k=10)

        stop = threading.Event()
        scrapes: list[tuple[float, int, int]] = []

        def scraper() -> None:  # a Prometheus scraping while the calls run
            while not stop.wait(args.scrape_s):
                scrapes.append(scrape(url))

        processes = {"on ": psutil.Process(on_hub.pid), "off": psutil.Process(off_hub.pid)}
        cpu_before = {label: sum(p.cpu_times()[:2]) for label, p in processes.items()}
        thread = threading.Thread(target=scraper, daemon=True)
        thread.start()
        results: dict[tuple[str, str], list[float]] = {}
        tag = uuid.uuid4().hex[:8]
        for n in range(args.rounds):
            pairs = [("on ", on), ("off", off)]
            if n % 2:
                pairs.reverse()
            query = queries[(20 + n) % len(queries)]
            for label, client in pairs:
                started = time.perf_counter()
                client.search(query, [NAMESPACE], top_k=10)
                results.setdefault(("search", label), []).append(time.perf_counter() - started)
            for label, client in pairs:
                item = memory_input(NAMESPACE, f"bench write {tag} {n}: {texts[n % len(texts)]}")
                started = time.perf_counter()
                client.write([item], request_id=uuid.uuid4().hex)
                results.setdefault(("write", label), []).append(time.perf_counter() - started)
        stop.set()
        thread.join()
        cpu = {label: sum(p.cpu_times()[:2]) - cpu_before[label] for label, p in processes.items()}
        after = {}
        for family in text_string_to_metric_families(urllib.request.urlopen(url, timeout=10).read().decode()):
            for sample in family.samples:
                if sample.name == "memhub_state_sample_duration_seconds":
                    after[sample.labels["sample"]] = sample.value
                if sample.name == "memhub_memories":
                    after["rows"] = after.get("rows", 0) + sample.value
        on.close()
        off.close()

    print(f"\nmetrics cost: {len(texts)} memories per hub, {args.rounds} searches and {args.rounds} writes per hub, one run")
    for (kind, label), values in sorted(results.items()):
        print(f"  {kind:6}  metrics {label}  {fmt(values)}")
    for kind in ("search", "write"):
        ratio = pct(results[(kind, "on ")], 0.5) / pct(results[(kind, "off")], 0.5)
        print(f"  {kind:6}  p50 on/off: {ratio:.3f}")
    on_cpu, off_cpu = cpu["on "], cpu["off"]
    print(f"  hub process CPU during the calls: on {on_cpu:.2f} s, off {off_cpu:.2f} s, on/off {on_cpu / off_cpu:.3f}")
    if scrapes:
        print(
            f"\nscrape of /metrics ({len(scrapes)} during the calls): {fmt([s[0] for s in scrapes])}, "
            f"{scrapes[-1][1] / 1024:.1f} KiB, {scrapes[-1][2]} series"
        )
    print(
        f"store samples at {after.get('rows', 0):.0f} memories: outbox {after.get('outbox', 0) * 1000:.1f} ms, "
        f"memories per status {after.get('statuses', 0) * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
