"""The stores fail under a running hub, and the hub heals without a restart.

One hub (gRPC on loopback, a scratch database on the external Postgres, its
own embedded Milvus Lite) lives for the whole module. Against it:
- the Milvus collection is dropped by another client: the health monitor
  creates it again and queues every servable memory from Postgres, so
  searches find what was written before the drop, no longer degraded;
- every Postgres backend of the hub's database is terminated (what a
  Postgres restart or failover does to a pool): calls succeed again without
  a restart, and a call made at once fails at most once, with UNAVAILABLE;
- the hub's database refuses connections: health says so, calls answer
  UNAVAILABLE, and both recover when it accepts connections again.
Nothing here stops or reconfigures the shared Postgres server itself.

Below the hub, the pool's idle ping (memhub/db/engine.py) is checked on its own.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import grpc
import psycopg
import pytest
from conftest import create_scratch_database, drop_database, eventually, hub_config, serving
from pymilvus import MilvusClient
from sqlalchemy import Engine, text
from sqlalchemy.exc import OperationalError

from memhub.app import Hub
from memhub.auth import issue_token, load_secret
from memhub.client import MemhubClient, memory_input
from memhub.db import engine as db_engine

MEMORY = "memhub.v1.MemoryService"
ADMIN = "memhub.v1.AdminService"
COLLECTION = "healing"


@dataclasses.dataclass
class Healing:
    hub: Hub
    client: MemhubClient
    database_url: str
    admin_url: str

    @property
    def database(self) -> str:
        return self.database_url.rsplit("/", 1)[1]

    def terminate_backends(self) -> int:
        """What a Postgres restart does to the hub: every server process of its database ends."""
        with psycopg.connect(self.admin_url, autocommit=True) as admin:
            return terminate_backends(admin, self.database)

    def allow_connections(self, allowed: bool) -> None:
        """Make only the hub's database refuse (or accept again) new connections; the server keeps running."""
        with psycopg.connect(self.admin_url, autocommit=True) as admin:
            admin.execute(f'ALTER DATABASE "{self.database}" WITH ALLOW_CONNECTIONS {str(allowed).lower()}')


def terminate_backends(admin: psycopg.Connection, database: str) -> int:
    """Terminate every backend of ``database`` (``admin`` is connected to another database); returns how many."""
    row = admin.execute(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
        (database,),
    ).fetchone()
    assert row is not None
    return int(row[0])


@pytest.fixture(scope="module")
def healing(tmp_path_factory: pytest.TempPathFactory, external_pg_admin_url: str) -> Iterator[Healing]:
    root = tmp_path_factory.mktemp("healing")
    url = create_scratch_database(external_pg_admin_url)
    try:
        with serving(hub_config(root, url, COLLECTION)) as (hub, address):
            hub.monitor._interval = 0.5  # noqa: SLF001 - probe often, so tests do not wait 5 s for the monitor
            secret = load_secret(hub.config.auth.hs256_secret_file)
            token = issue_token(secret, agent_id="tester", groups=["testers"], ttl=timedelta(hours=1)).token
            client = MemhubClient(address, token=token)
            state = Healing(hub, client, url, external_pg_admin_url)
            try:
                yield state
            finally:
                state.allow_connections(True)  # in case a test failed half-way
                client.close()
    finally:
        drop_database(external_pg_admin_url, url)


def fresh_namespace() -> str:
    return f"heal/{uuid.uuid4().hex[:10]}"


# -- the Milvus collection disappears -------------------------------------------------


def drop_collection_elsewhere(hub: Hub) -> None:
    """Drop the hub's collection through a second client of the same served Milvus Lite, as an operator would."""
    other = MilvusClient(hub.index._server.uri)  # noqa: SLF001 - the address of the hub's own Lite server
    try:
        other.drop_collection(COLLECTION)
        assert not other.has_collection(COLLECTION)
    finally:
        other.close()


def test_check_once_recreates_a_dropped_collection_and_refills_it(healing: Healing) -> None:
    """check_once() recreates a dropped collection and queues every servable memory; searches heal after the drain.

    The background monitor is paused so that this test's check_once() is the one that heals.
    """
    hub, client, ns = healing.hub, healing.client, fresh_namespace()
    reply = client.write(
        [
            memory_input(ns, "The blue cluster runs Postgres 16"),
            memory_input(ns, "Kiwi deliveries arrive on Tuesdays"),
            memory_input(ns, "The staging cache is Redis 7"),
        ],
        wait_indexed=True,
    )
    assert reply.indexed
    blue, kiwi, redis = (r.memory.id for r in reply.results)
    client.forget(ids=[redis], reason="retired")
    assert hub.indexer.wait_indexed([redis], timeout_s=30)
    servable = hub.indexer.servable_count()

    hub.monitor.stop()
    try:
        drop_collection_elsewhere(hub)
        # Meanwhile searches still answer, from Postgres, and say so.
        during = client.search("kiwi deliveries", [ns])
        assert during.degraded and [h.memory.id for h in during.hits] == [kiwi]

        hub.monitor.check_once()
        assert hub.index.recorded_model() == (hub.embedder.model_id, hub.embedder.dimension)
        assert hub.index_health.ok
        eventually(lambda: hub.indexer.backlog() == 0, "the indexer drained the backfill")
    finally:
        hub.monitor.start()

    # Every servable memory is back (all of this hub's), the forgotten one is not.
    assert hub.index.count() == servable
    after = client.search("kiwi deliveries", [ns])
    assert not after.degraded and after.hits[0].memory.id == kiwi
    assert blue in {h.memory.id for h in client.search("blue cluster Postgres", [ns], channels=["dense"]).hits}
    # The recreated collection takes new writes as before.
    late = client.write([memory_input(ns, "Mango crates ship on Mondays")], wait_indexed=True)
    assert late.indexed
    assert client.search("mango crates", [ns]).hits[0].memory.id == late.results[0].memory.id


def test_the_running_monitor_heals_a_dropped_collection_by_itself(healing: Healing) -> None:
    """Nobody calls check_once(): the hub's own monitor notices the missing collection and the index heals."""
    client, ns = healing.client, fresh_namespace()
    reply = client.write([memory_input(ns, "The orion project ships in March")], wait_indexed=True)
    orion = reply.results[0].memory.id
    drop_collection_elsewhere(healing.hub)

    def healed() -> bool:
        result = client.search("orion project", [ns])
        return not result.degraded and [h.memory.id for h in result.hits] == [orion]

    eventually(healed, "a full (not degraded) search finds the memory written before the drop")
    assert client.healthy(service=MEMORY)


# -- Postgres connections die -------------------------------------------------------------


def test_calls_succeed_after_postgres_kills_every_connection(healing: Healing) -> None:
    """After every backend is terminated and the pool sat idle > 1 s, a search and a write both succeed, no restart."""
    client, ns = healing.client, fresh_namespace()
    before = client.write([memory_input(ns, "The failover drill is on Thursday")], wait_indexed=True).results[0].memory.id
    assert healing.terminate_backends() > 0

    time.sleep(1.5)  # idle longer than PING_AFTER_IDLE_S: pooled connections are pinged before use
    found = client.search("failover drill", [ns])
    assert [h.memory.id for h in found.hits] == [before] and not found.degraded
    after = client.write([memory_input(ns, "The failover drill moved to Friday")], wait_indexed=True)
    assert after.indexed
    assert client.get(after.results[0].memory.id).content == "The failover drill moved to Friday"
    assert healing.hub.monitor.database_ok and client.healthy(service=ADMIN)


def test_calls_right_after_the_kill_fail_at_most_once_and_as_unavailable(healing: Healing) -> None:
    """Calling at once after the kill: the first call may meet a dead connection, gets UNAVAILABLE (retryable, not
    INTERNAL), and invalidates the pool, so every later call succeeds."""
    client, ns = healing.client, fresh_namespace()
    before = client.write([memory_input(ns, "The cutover window opens at noon")], wait_indexed=True).results[0].memory.id
    with psycopg.connect(healing.admin_url, autocommit=True) as admin:
        # Use many pooled connections just now (so none is pinged at its next checkout), then kill them all.
        with ThreadPoolExecutor(16) as pool:
            assert all(pool.map(lambda _: client.search("cutover window", [ns]).hits, range(16)))
        assert terminate_backends(admin, healing.database) > 0

    outcomes: list[grpc.StatusCode] = []
    written: dict[str, str] = {}
    for i in range(6):
        try:
            if i % 2 == 0:
                assert before in {h.memory.id for h in client.search("cutover window", [ns]).hits}
            else:
                content = f"cutover note {i}"
                written[client.write([memory_input(ns, content)]).results[0].memory.id] = content
            outcomes.append(grpc.StatusCode.OK)
        except grpc.RpcError as exc:
            outcomes.append(exc.code())
    failures = [code for code in outcomes if code != grpc.StatusCode.OK]
    assert len(failures) <= 1, outcomes
    assert set(failures) <= {grpc.StatusCode.UNAVAILABLE}, outcomes
    assert outcomes[-2:] == [grpc.StatusCode.OK] * 2
    assert all(client.get(mid).content == content for mid, content in written.items())


def test_a_database_refusing_connections_is_reported_and_recovered_from(healing: Healing) -> None:
    """While the hub's database refuses connections: database_ok is False, AdminService and MemoryService are
    NOT_SERVING, calls fail with UNAVAILABLE; once it accepts them again everything answers."""
    hub, client, ns = healing.hub, healing.client, fresh_namespace()
    memory = client.write([memory_input(ns, "The archive moves to cold storage")], wait_indexed=True).results[0].memory.id
    healing.allow_connections(False)
    try:
        healing.terminate_backends()
        hub.monitor.check_once()
        assert hub.monitor.database_ok is False
        eventually(lambda: not client.healthy(service=ADMIN), "AdminService reports NOT_SERVING")
        assert not client.healthy(service=MEMORY)
        assert client.healthy()  # liveness: the process itself is fine
        for call in (lambda: client.search("archive", [ns]), lambda: client.write([memory_input(ns, "refused")])):
            with pytest.raises(grpc.RpcError) as excinfo:
                call()
            assert excinfo.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        healing.allow_connections(True)
    hub.monitor.check_once()
    assert hub.monitor.database_ok is True
    eventually(lambda: client.healthy(service=ADMIN) and client.healthy(service=MEMORY), "both services report SERVING")
    assert [h.memory.id for h in client.search("archive cold storage", [ns]).hits] == [memory]


# -- the pool's idle ping, on its own ---------------------------------------------------------


@pytest.fixture
def small_engine(external_pg_admin_url: str) -> Iterator[tuple[Engine, str]]:
    url = create_scratch_database(external_pg_admin_url)
    engine = db_engine.connect(url, pool_size=3)
    try:
        yield engine, url.rsplit("/", 1)[1]
    finally:
        engine.dispose()
        drop_database(external_pg_admin_url, url)


def fill_pool(engine: Engine, n: int) -> set[int]:
    """Open n connections at once and return them to the pool; their server process ids."""
    conns = [engine.connect() for _ in range(n)]
    try:
        return {c.execute(text("SELECT pg_backend_pid()")).scalar_one() for c in conns}
    finally:
        for c in conns:
            c.close()


def test_idle_dead_connections_are_replaced_before_use(small_engine: tuple[Engine, str], external_pg_admin_url: str) -> None:
    """Connections idle > 1 s are pinged at checkout, so after a restart none of the dead ones ever reaches a caller."""
    engine, database = small_engine
    killed = fill_pool(engine, 3)
    with psycopg.connect(external_pg_admin_url, autocommit=True) as admin:
        assert terminate_backends(admin, database) == 3
    time.sleep(1.5)
    # All three pooled connections are checked out (and pinged) at once; none fails.
    assert fill_pool(engine, 3).isdisjoint(killed)


def test_a_dead_connection_used_at_once_fails_once_then_the_pool_is_renewed(
    small_engine: tuple[Engine, str], external_pg_admin_url: str
) -> None:
    """A connection used < 1 s ago is not pinged; if it is dead the statement fails (OperationalError, which the API
    maps to UNAVAILABLE) and the whole pool is invalidated: the other dead connections never fail a caller."""
    engine, database = small_engine
    with psycopg.connect(external_pg_admin_url, autocommit=True) as admin:
        killed = fill_pool(engine, 3)
        assert terminate_backends(admin, database) == 3
    failures = 0
    pids = set()
    for _ in range(4):
        try:
            with engine.connect() as conn:
                pids.add(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())
        except OperationalError:
            failures += 1
    assert failures <= 1
    assert pids and pids.isdisjoint(killed)
