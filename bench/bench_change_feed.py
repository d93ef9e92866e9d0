"""The change feed: how soon a subscriber on another replica hears a write, and what the feed costs a write.

    .venv/bin/python bench/bench_change_feed.py [--subscribers 16] [--latency-writes 300] [--rounds 6]

Two `memhub serve` processes (bench/hubproc.py), A and B, share one database and one JWT secret; each
has its own data directory and Milvus Lite index. The database is an embedded PostgreSQL of the
benchmark's own by default: the feed waits for the oldest transaction on the whole database server
(memhub/db/changes.py), so on a server other work shares (--pg-admin-url, a scratch database there), its
long transactions show up as feed latency.

1. Latency: N subscribers (separate agents, one channel each, in a process of their own so that
   receiving does not slow the writers' threads) hold SubscribeChanges streams on hub B; one writer
   writes memories through hub A, one at a time, paced. For each write and subscriber: the time from
   the write's acknowledgement (its transaction committed) to the event's arrival, and from the moment
   the write was sent (CLOCK_MONOTONIC, the same clock in both processes).
2. Cost on writes: 4 writer threads write through hub A in rounds that alternate between the feed's
   triggers enabled and disabled (ALTER TABLE memories DISABLE TRIGGER ..., this scratch database only),
   order rotating, so noise hits both alike; first with no subscriber anywhere, then with the N
   subscribers connected to hub B (each woken by every commit, reading the table). Reported as write
   throughput and p50 latency, on/off ratios from the same run.
"""

from __future__ import annotations

import argparse
import atexit
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import timedelta
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg  # noqa: E402
from hubproc import running_hub  # noqa: E402

from memhub.auth import issue_token, load_secret  # noqa: E402
from memhub.client import MemhubClient, memory_input  # noqa: E402
from memhub.db import engine as db_engine  # noqa: E402

FEED_TRIGGERS = ("memories_changes_inserted", "memories_changes_status")
WRITERS = 4


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] * 1000


@dataclass
class Subscriber:
    """One agent's stream on hub B, recording when each memory's event arrived."""

    client: MemhubClient
    namespace: str
    arrivals: dict[str, float] = field(default_factory=dict)
    ready: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        self.call = self.client.subscribe_changes([self.namespace])
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for message in self.call:
                if message.WhichOneof("message") == "heartbeat":
                    self.ready.set()
                else:
                    self.arrivals.setdefault(message.change.memory.id, time.monotonic())
        except Exception:  # noqa: BLE001 - cancelled at the end
            pass

    def stop(self) -> None:
        self.call.cancel()
        self.thread.join(10)


def subscriber_process(address: str, tokens: list[str], namespace: str, pipe: Connection) -> None:
    """The subscribers' process: open every stream, say so, then on "stop" send back each one's arrivals."""
    clients = [MemhubClient(address, token=t) for t in tokens]
    subscribers = [Subscriber(c, namespace) for c in clients]
    for s in subscribers:
        s.start()
    pipe.send(all(s.ready.wait(60) for s in subscribers))
    while (command := pipe.recv()) != "stop":
        pipe.send([len(s.arrivals) for s in subscribers] if command == "counts" else None)
    for s in subscribers:
        s.stop()
    pipe.send([s.arrivals for s in subscribers])
    for c in clients:
        c.close()


class Subscribers:
    """N subscriber streams on hub B, in a child process."""

    def __init__(self, address: str, tokens: list[str], namespace: str) -> None:
        ctx = multiprocessing.get_context("spawn")  # no inherited gRPC state
        self._pipe, child = ctx.Pipe()
        self._proc = ctx.Process(target=subscriber_process, args=(address, tokens, namespace, child), daemon=True)
        self._proc.start()
        if not self._pipe.poll(120) or not self._pipe.recv():
            raise SystemExit("the subscribers' streams did not open")
        self.count = len(tokens)

    def received_at_least(self, n: int) -> bool:
        self._pipe.send("counts")
        return min(self._pipe.recv()) >= n

    def stop(self) -> list[dict[str, float]]:
        self._pipe.send("stop")
        arrivals = self._pipe.recv()
        self._proc.join(30)
        return arrivals


def set_triggers(db_url: str, enabled: bool) -> None:
    verb = "ENABLE" if enabled else "DISABLE"
    with psycopg.connect(db_url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
        conn.execute(f"ALTER TABLE memories {verb} TRIGGER {FEED_TRIGGERS[0]}, {verb} TRIGGER {FEED_TRIGGERS[1]}")


def text(label: str) -> str:
    return f"{label}: the measurement {uuid.uuid4().hex} finished within its budget"


def latency_run(writer: MemhubClient, subscribers: Subscribers, namespace: str, count: int) -> None:
    sent: dict[str, tuple[float, float]] = {}
    for _ in range(count):
        start = time.monotonic()
        mid = writer.write([memory_input(namespace, text("latency"), type="fact")]).results[0].memory.id
        sent[mid] = (start, time.monotonic())
        time.sleep(0.05)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not subscribers.received_at_least(count):
        time.sleep(0.2)
    arrivals = subscribers.stop()
    after_ack, after_send, missing = [], [], 0
    for received in arrivals:
        for mid, (start, ack) in sent.items():
            if mid not in received:
                missing += 1
                continue
            after_ack.append(received[mid] - ack)
            after_send.append(received[mid] - start)
    writes = [ack - start for start, ack in sent.values()]
    print(f"  {count} writes through hub A, {subscribers.count} subscribers on hub B, {len(after_ack)} events received")
    print(f"  write acknowledged -> event on B: p50 {pct(after_ack, 0.5):6.1f} ms   p99 {pct(after_ack, 0.99):6.1f} ms")
    print(f"  write sent         -> event on B: p50 {pct(after_send, 0.5):6.1f} ms   p99 {pct(after_send, 0.99):6.1f} ms")
    print(f"  (the write itself: p50 {pct(writes, 0.5):6.1f} ms; events missing after 60 s: {missing})")


def _write_round(clients: list[MemhubClient], namespace: str, per_writer: int, label: str) -> tuple[list[float], float]:
    """Every client writes ``per_writer`` memories at once; the write latencies and the round's writes per second."""
    latencies: list[float] = []
    lock = threading.Lock()

    def write(client: MemhubClient) -> None:
        for _ in range(per_writer):
            start = time.monotonic()
            client.write([memory_input(namespace, text(label), type="fact")])
            with lock:
                latencies.append(time.monotonic() - start)

    threads = [threading.Thread(target=write, args=(c,)) for c in clients]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, len(latencies) / (time.monotonic() - began)


def write_rounds(clients: list[MemhubClient], db_url: str, namespace: str, rounds: int, per_writer: int) -> dict[bool, dict]:
    """Alternate feed-on and feed-off rounds (the order rotating); per mode: write latencies and round throughputs."""
    results: dict[bool, dict] = {True: {"latency": [], "rate": []}, False: {"latency": [], "rate": []}}
    for r in range(rounds):
        for enabled in (True, False) if r % 2 == 0 else (False, True):
            set_triggers(db_url, enabled)
            latencies, rate = _write_round(clients, namespace, per_writer, "on" if enabled else "off")
            results[enabled]["rate"].append(rate)
            results[enabled]["latency"] += latencies
    set_triggers(db_url, True)
    return results


def report_rounds(title: str, results: dict[bool, dict]) -> None:
    on, off = results[True], results[False]
    rate_on, rate_off = statistics.median(on["rate"]), statistics.median(off["rate"])
    p50_on, p50_off = pct(on["latency"], 0.5), pct(off["latency"], 0.5)
    print(f"  {title}")
    print(f"    feed off: {rate_off:6.1f} writes/s   p50 {p50_off:6.1f} ms   p99 {pct(off['latency'], 0.99):6.1f} ms")
    print(f"    feed on:  {rate_on:6.1f} writes/s   p50 {p50_on:6.1f} ms   p99 {pct(on['latency'], 0.99):6.1f} ms")
    print(f"    on/off: throughput x{rate_on / rate_off:.3f}, p50 latency x{p50_on / p50_off:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=16)
    parser.add_argument("--latency-writes", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=6, help="rounds per mode in the cost measurement")
    parser.add_argument("--per-writer", type=int, default=25, help="writes per writer thread per round")
    parser.add_argument(
        "--pg-admin-url", default="", help="a PostgreSQL server to make a scratch database on (default: an embedded one)"
    )
    args = parser.parse_args()

    name = f"memhub_bench_feed_{uuid.uuid4().hex[:8]}"
    root = Path(tempfile.mkdtemp(prefix="memhub-bench-feed-"))  # 0700, and so are the data directories in it
    for sub in ("a", "b", "pg"):
        (root / sub).mkdir(mode=0o700)
    if args.pg_admin_url:
        with psycopg.connect(args.pg_admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        db_url = args.pg_admin_url.rsplit("/", 1)[0] + f"/{name}"
    else:
        # atexit runs last-in first-out: the embedded server (registered by start_embedded) stops before this runs.
        atexit.register(shutil.rmtree, root, True)
        db_url = db_engine.start_embedded(root / "pg")
    print(f"database: {'a scratch database on ' + args.pg_admin_url if args.pg_admin_url else 'embedded'}", flush=True)
    secret_file = root / "jwt-secret"
    secret_file.write_text(os.urandom(32).hex() + "\n")
    secret_file.chmod(0o600)
    env = {"MEMHUB_DATABASE_URL": db_url, "MEMHUB_JWT_SECRET_FILE": str(secret_file)}
    try:
        with ExitStack() as stack:
            hub_a = stack.enter_context(running_hub(root / "a", env))
            hub_b = stack.enter_context(running_hub(root / "b", env))
            secret = load_secret(secret_file)

            def client(hub, agent: str) -> MemhubClient:  # noqa: ANN001
                token = issue_token(secret, agent_id=agent, groups=["bench"], ttl=timedelta(hours=2)).token
                return stack.enter_context(MemhubClient(hub.address, token=token))

            writers = [client(hub_a, "bench") for _ in range(WRITERS)]
            writers[0].write([memory_input("bench/feed/warmup", text("warm-up"), type="fact")])
            print("write cost, no subscriber:", flush=True)
            report_rounds(
                f"{WRITERS} writers through hub A, {args.rounds} rounds per mode",
                write_rounds(writers, db_url, "bench/feed/cost", args.rounds, args.per_writer),
            )
            namespace = "bench/feed/latency"
            tokens = [
                issue_token(secret, agent_id=f"bench-sub-{i}", groups=["bench"], ttl=timedelta(hours=2)).token
                for i in range(args.subscribers)
            ]
            print(f"write cost, {args.subscribers} subscribers on hub B (woken by every commit):", flush=True)
            cost_subscribers = Subscribers(hub_b.address, tokens, "bench/feed/cost-subscribed")
            report_rounds(
                f"{WRITERS} writers through hub A, {args.rounds} rounds per mode",
                write_rounds(writers, db_url, "bench/feed/cost-subscribed", args.rounds, args.per_writer),
            )
            cost_subscribers.stop()
            print(f"feed latency across replicas, {args.subscribers} subscribers:", flush=True)
            latency_run(writers[0], Subscribers(hub_b.address, tokens, namespace), namespace, args.latency_writes)
    finally:
        if args.pg_admin_url:
            with psycopg.connect(args.pg_admin_url, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
