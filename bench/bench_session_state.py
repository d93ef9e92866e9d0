"""Where the shared session state should live: the Postgres UNLOGGED table through the hub, versus Redis.

    .venv/bin/python bench/bench_session_state.py [--clients 16] [--ops 300] [--value-bytes 256] [--no-hub]

Put and get latency (p50/p99) and throughput with N concurrent clients (a
thread and a connection each), measured in one run so the figures compare:

1. through the hub (a `memhub serve` process, bench/hubproc.py) on its
   embedded Postgres: gRPC, token check, Cedar decisions (put: write and
   read; get: read), audit, the store;
2. through the hub on the external Postgres server (127.0.0.1:5432, a
   scratch database): the same, on a server with its own shared buffers;
3. the store alone (memhub/session_state/store.py in this process, no gRPC, no
   policy) on that external server, with the tables UNLOGGED (as shipped)
   and then switched to LOGGED, to show what skipping the WAL buys;
4. Redis directly (127.0.0.1:6379, redis-py, no hub): a Lua script with the
   same compare-and-set and TTL for a put (one round trip), HGETALL for a get.
   It does less than the hub: no identity, no policy, no audit, no quotas.

Every put is a compare-and-set on the version the client last wrote (so
the check is exercised, never refused: each client owns its keys); each
client cycles over 16 keys of its own session. Figures vary between runs on
this shared machine by tens of percent: compare within one run.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hubproc import running_hub  # noqa: E402
from sqlalchemy import text  # noqa: E402

from memhub.client import MemhubClient  # noqa: E402
from memhub.db import engine as db_engine  # noqa: E402
from memhub.db import migrate  # noqa: E402
from memhub.session_state.config import SessionStateConfig  # noqa: E402
from memhub.session_state.records import PutRequest  # noqa: E402
from memhub.session_state.store import SessionStore  # noqa: E402

KEYS_PER_CLIENT = 16

REDIS_PUT = """
local current = redis.call('HGET', KEYS[1], 'version')
local version = current and tonumber(current) or 0
if ARGV[3] ~= '' and tonumber(ARGV[3]) ~= version then return {0, version} end
local new = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], 'version', new, 'value', ARGV[1], 'by', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, new}
"""


@dataclass(frozen=True)
class Phase:
    rate: float
    latencies: list[float]

    def summary(self) -> str:
        ordered = sorted(self.latencies)

        def pct(p: float) -> float:
            return ordered[min(len(ordered) - 1, int(len(ordered) * p))] * 1000

        return f"p50 {pct(0.5):6.2f} ms  p99 {pct(0.99):7.2f} ms  {self.rate:7.0f} ops/s"


def run_clients(clients: int, ops: int, make_worker: Callable[[int], Callable[[int], None]]) -> Phase:
    """clients threads, each calling its worker ops times; all start together."""
    workers = [make_worker(i) for i in range(clients)]
    latencies: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(clients + 1)

    def run(i: int) -> None:
        mine = []
        barrier.wait()
        for n in range(ops):
            t0 = time.perf_counter()
            workers[i](n)
            mine.append(time.perf_counter() - t0)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return Phase(clients * ops / (time.perf_counter() - t0), latencies)


def value_of(size: int) -> str:
    return json.dumps({"step": 3, "owner": "bench", "notes": "x" * max(0, size - 40)})


# -- the options ----------------------------------------------------------------------------------------------


def through_hub(address: str, token: str, args: argparse.Namespace) -> tuple[Phase, Phase]:
    value = value_of(args.value_bytes)
    clients = [MemhubClient(address, token=token, timeout_s=60) for _ in range(args.clients)]
    ns = f"bench/sessions/{uuid.uuid4().hex[:6]}"
    versions: dict[tuple[int, int], int] = {}
    for i, c in enumerate(clients):  # warm the channels and create each client's keys
        for k in range(KEYS_PER_CLIENT):
            versions[i, k] = c.session_put(ns, f"s{i}", f"k{k}", value_json=value).entry.version

    def putter(i: int) -> Callable[[int], None]:
        def put(n: int) -> None:
            k = n % KEYS_PER_CLIENT
            reply = clients[i].session_put(ns, f"s{i}", f"k{k}", value_json=value, expected_version=versions[i, k])
            versions[i, k] = reply.entry.version

        return put

    def getter(i: int) -> Callable[[int], None]:
        return lambda n: clients[i].session_get(ns, f"s{i}", f"k{n % KEYS_PER_CLIENT}")

    puts = run_clients(args.clients, args.ops, putter)
    gets = run_clients(args.clients, args.ops, getter)
    for c in clients:
        c.close()
    return puts, gets


def store_alone(url: str, args: argparse.Namespace) -> tuple[Phase, Phase]:
    engine = db_engine.connect(url, pool_size=args.clients)
    store = SessionStore(engine, SessionStateConfig())
    value = value_of(args.value_bytes)
    ns = f"bench/store/{uuid.uuid4().hex[:6]}"
    versions: dict[tuple[int, int], int] = {}

    def request(i: int, k: int, expected: int | None) -> PutRequest:
        return PutRequest(ns, f"s{i}", f"k{k}", value, len(value), 3600.0, expected, "")

    for i in range(args.clients):
        for k in range(KEYS_PER_CLIENT):
            versions[i, k] = store.put("bench", request(i, k, None)).entry.version

    def putter(i: int) -> Callable[[int], None]:
        def put(n: int) -> None:
            k = n % KEYS_PER_CLIENT
            versions[i, k] = store.put("bench", request(i, k, versions[i, k])).entry.version

        return put

    def getter(i: int) -> Callable[[int], None]:
        return lambda n: store.get(ns, f"s{i}", f"k{n % KEYS_PER_CLIENT}")

    try:
        return run_clients(args.clients, args.ops, putter), run_clients(args.clients, args.ops, getter)
    finally:
        engine.dispose()


def redis_direct(url: str, args: argparse.Namespace) -> tuple[Phase, Phase]:
    import redis  # the bench's own dependency (the dev extra); the hub never imports it

    pool = redis.ConnectionPool.from_url(url, max_connections=args.clients)
    conns = [redis.Redis(connection_pool=pool) for _ in range(args.clients)]
    conns[0].ping()
    script = conns[0].register_script(REDIS_PUT)
    value = value_of(args.value_bytes)
    prefix = f"memhub-bench:{uuid.uuid4().hex[:6]}"
    counter = f"{prefix}:version"
    versions: dict[tuple[int, int], int] = {}
    for i in range(args.clients):
        for k in range(KEYS_PER_CLIENT):
            versions[i, k] = script(keys=[f"{prefix}:s{i}:k{k}", counter], args=[value, 3_600_000, "", "bench"])[1]

    def putter(i: int) -> Callable[[int], None]:
        def put(n: int) -> None:
            k = n % KEYS_PER_CLIENT
            ok, version = script(
                keys=[f"{prefix}:s{i}:k{k}", counter], args=[value, 3_600_000, versions[i, k], "bench"], client=conns[i]
            )
            assert ok == 1, "a compare-and-set the benchmark expected to pass was refused"
            versions[i, k] = version

        return put

    def getter(i: int) -> Callable[[int], None]:
        return lambda n: conns[i].hgetall(f"{prefix}:s{i}:k{n % KEYS_PER_CLIENT}")

    try:
        return run_clients(args.clients, args.ops, putter), run_clients(args.clients, args.ops, getter)
    finally:
        keys = list(conns[0].scan_iter(f"{prefix}:*"))
        if keys:
            conns[0].delete(*keys)
        pool.disconnect()


# -- the run --------------------------------------------------------------------------------------------------


def report(name: str, result: tuple[Phase, Phase]) -> None:
    puts, gets = result
    print(f"{name:<44} put {puts.summary()}   get {gets.summary()}", flush=True)


def scratch_database(admin_url: str) -> tuple[str, Callable[[], None]]:
    import psycopg

    name = f"memhub_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return f"{admin_url.rpartition('/')[0]}/{name}", drop


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients (default 16)")
    parser.add_argument("--ops", type=int, default=300, help="puts, then gets, per client (default 300)")
    parser.add_argument("--value-bytes", type=int, default=256, help="size of each value's JSON (default 256)")
    parser.add_argument("--external-pg", default="postgresql://postgres@127.0.0.1:5432/postgres", help="admin URL ('' skips)")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0", help="Redis URL ('' skips)")
    parser.add_argument("--no-hub", action="store_true", help="skip the two measurements through a hub")
    args = parser.parse_args()
    print(f"{args.clients} clients x {args.ops} puts then {args.ops} gets, {args.value_bytes}-byte values", flush=True)

    if not args.no_hub:
        with running_hub() as hub:
            report("hub, embedded Postgres (UNLOGGED)", through_hub(hub.address, hub.token, args))
    if args.external_pg:
        url, drop = scratch_database(args.external_pg)
        try:
            if not args.no_hub:
                with running_hub(extra_env={"MEMHUB_DATABASE_URL": url}) as hub:
                    report("hub, external Postgres 15 (UNLOGGED)", through_hub(hub.address, hub.token, args))
            engine = db_engine.connect(url)
            migrate.upgrade(engine)
            report("store alone, external Postgres (UNLOGGED)", store_alone(url, args))
            with engine.begin() as conn:
                conn.execute(text("ALTER TABLE session_state SET LOGGED"))
                conn.execute(text("ALTER TABLE session_state_sessions SET LOGGED"))
            engine.dispose()
            report("store alone, external Postgres (LOGGED)", store_alone(url, args))
        finally:
            drop()
    if args.redis:
        try:
            report("Redis directly (Lua CAS + TTL; HGETALL)", redis_direct(args.redis, args))
        except ImportError:
            print("Redis: skipped (pip install redis, or install the dev extra)")
        except Exception as exc:  # noqa: BLE001 - a benchmark reports what it could not measure
            print(f"Redis: skipped ({type(exc).__name__}: {exc})")


if __name__ == "__main__":
    main()
