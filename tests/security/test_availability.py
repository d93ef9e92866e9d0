"""One agent must not be able to hurt the others: idle streams, floods, rate and concurrency limits (issue 10 items 1, 4).

The hub here has small limits (two RPC worker threads, one call slot per
agent, a one-second idle timeout) so each attack is cheap to mount and its
outcome does not depend on how fast the machine is: calls are held open by a
Postgres row lock the test controls, rate buckets refill once a minute.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import grpc
import psycopg
import pytest
from conftest import Stack, eventually, rpc_error
from google.protobuf.timestamp_pb2 import Timestamp
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from memhub.client import MemhubClient, memory_input
from memhub.config import CallLimit, LimitsConfig, ServerConfig
from memhub.v1 import admin_pb2
from security.hubs import SpecialStack, special_hub, tally

LOCK_TIMEOUT = "30s"  # the test's own row locks: a wait it did not foresee fails the test instead of hanging it
SLOW = 1 / 60  # one call a minute: a spent bucket stays spent for the whole test, however slow the machine
LIMITS = LimitsConfig(
    agent=CallLimit(concurrent=1, rate=0, burst=0),
    # One agent per test that spends its bucket, so no test depends on another's leftovers.
    agents=(("ratey", CallLimit(0, SLOW, 3)), ("audited", CallLimit(0, SLOW, 1)), ("viewed", CallLimit(0, SLOW, 1))),
    groups=(("reporters", CallLimit(0, SLOW, 2)),),
    queue=1,
    queue_timeout_s=120.0,
    streams_per_agent=4,
    public_streams_per_source=2,
    stream_idle_timeout_s=0,  # streams stay open until the test closes them (idle closing: the idle_hub below)
)


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory, external_pg_admin_url: str) -> Iterator[SpecialStack]:
    """Two RPC worker threads, one call slot per agent (one more may wait), small stream caps, slow buckets."""
    folder = tmp_path_factory.mktemp("limited")
    with special_hub(folder, external_pg_admin_url, server=ServerConfig(port=0, max_workers=2), limits=LIMITS) as stack:
        yield stack


@pytest.fixture(scope="module")
def idle_hub(tmp_path_factory: pytest.TempPathFactory, external_pg_admin_url: str) -> Iterator[SpecialStack]:
    folder = tmp_path_factory.mktemp("idle")
    limits = dataclasses.replace(LimitsConfig(), stream_idle_timeout_s=1.0)
    with special_hub(folder, external_pg_admin_url, limits=limits) as stack:
        yield stack


class IdleStream:
    """A server-reflection stream that sends nothing until released, on its own connection."""

    def __init__(self, stack: Stack, agent: str) -> None:
        self.channel = grpc.insecure_channel(stack.address, options=[("grpc.use_local_subchannel_pool", 1)])
        self._release = threading.Event()
        self.call = reflection_pb2_grpc.ServerReflectionStub(self.channel).ServerReflectionInfo(
            self._requests(), metadata=(("authorization", f"Bearer {stack.token(agent)}"),), timeout=60
        )

    def _requests(self) -> Iterator[reflection_pb2.ServerReflectionRequest]:
        self._release.wait()
        return
        yield  # a generator that sends nothing

    def outcome(self) -> grpc.RpcError:
        """Wait for the hub to end the stream; its error."""
        with pytest.raises(grpc.RpcError) as exc:
            next(self.call)
        return exc.value

    def close(self) -> None:
        self._release.set()
        self.call.cancel()
        self.channel.close()


# -- item 1: idle streams ---------------------------------------------------------------------


def test_more_idle_streams_than_workers_do_not_stall_other_agents(limited: Stack, ns: str) -> None:
    """Two RPC threads, eight idle reflection streams from two agents: a third agent is served as usual."""
    streams = [IdleStream(limited, f"idler-{i % 2}") for i in range(8)]
    try:
        eventually(lambda: _streams_open(limited, "idler-0", "idler-1") == 8, "the 8 streams are open")
        with limited.client_as("bystander") as other:
            other.write([memory_input(ns, "written while 8 streams idle")], wait_indexed=True)
            assert other.search("written while streams idle", [ns]).hits
    finally:
        for s in streams:
            s.close()


def _streams_open(stack: SpecialStack, *agents: str) -> int:
    return sum(a.streams for a in stack.server.limiter.snapshot() if a.name in agents)


def test_an_agent_gets_at_most_its_stream_cap(limited: Stack) -> None:
    streams = [IdleStream(limited, "streamer") for _ in range(4)]
    try:
        eventually(lambda: _streams_open(limited, "streamer") == 4, "4 streams are open")
        fifth = IdleStream(limited, "streamer")
        err = fifth.outcome()
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "4 open streams" in err.details()
        fifth.close()
    finally:
        for s in streams:
            s.close()


def test_an_idle_stream_is_closed_and_its_place_given_back(idle_hub: SpecialStack) -> None:
    streams = [IdleStream(idle_hub, "sleepy") for _ in range(4)]  # the default cap
    try:
        for stream in streams:
            err = stream.outcome()
            assert err.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            assert "idle streams are closed" in err.details()
    finally:
        for stream in streams:
            stream.close()
    eventually(lambda: _streams_open(idle_hub, "sleepy") == 0, "the closed streams are given back")


def test_a_stream_that_talks_stays_open(idle_hub: SpecialStack) -> None:
    """Closing is about idleness: a client using its stream is answered (its next request is sent at once)."""
    metadata = (("authorization", f"Bearer {idle_hub.token('chatty')}"),)
    with grpc.insecure_channel(idle_hub.address) as channel:
        requests = [reflection_pb2.ServerReflectionRequest(list_services="") for _ in range(3)]
        replies = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
            iter(requests), metadata=metadata, timeout=60
        )
        assert len([r.list_services_response for r in replies]) == 3


def test_unauthenticated_health_streams_are_capped_per_address(limited: Stack) -> None:
    channels = [grpc.insecure_channel(limited.address) for _ in range(3)]
    watches = []
    try:
        for channel in channels[:2]:  # one at a time, so which one is third is certain
            watches.append(health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest(), timeout=30))
            assert next(watches[-1]).status == health_pb2.HealthCheckResponse.SERVING
        watches.append(health_pb2_grpc.HealthStub(channels[2]).Watch(health_pb2.HealthCheckRequest(), timeout=30))
        with pytest.raises(grpc.RpcError) as exc:
            next(watches[2])
        assert exc.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        # Probes (Check) are never limited.
        check = health_pb2_grpc.HealthStub(channels[2]).Check(health_pb2.HealthCheckRequest(), timeout=10)
        assert check.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        for w in watches:
            w.cancel()
        for c in channels:
            c.close()


# -- item 4: per-agent call slots -------------------------------------------------------------


@dataclass
class Held:
    call: Future
    client: MemhubClient
    release: Callable[[], None]


@pytest.fixture
def held_call(limited: SpecialStack, ns: str) -> Iterator[Held]:
    """Agent "busy" with one call in progress until the test calls release(): a forget blocked on a row lock."""
    memory = limited.client.write([memory_input(ns, "locked by the test")], wait_indexed=True).results[0].memory
    lock = psycopg.connect(limited.hub.database_url.replace("postgresql+psycopg://", "postgresql://"))
    lock.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
    lock.execute("SELECT 1 FROM memories WHERE id = %s FOR UPDATE", (memory.id,))
    busy = limited.client_as("busy")
    pool = ThreadPoolExecutor(1)
    held = Held(pool.submit(busy.forget, ids=[memory.id], reason="held by a row lock"), busy, lock.rollback)
    try:
        eventually(lambda: _running(limited, "busy") == 1, "busy's call holds its slot")
        yield held
    finally:
        lock.rollback()
        lock.close()
        held.call.result(timeout=60)
        pool.shutdown()
        busy.close()


def _running(stack: Stack, agent: str) -> int:
    return sum(a.running for a in stack.server.limiter.snapshot() if a.name == agent)


def _waiting(stack: Stack, agent: str) -> int:
    return sum(a.waiting for a in stack.server.limiter.snapshot() if a.name == agent)


def test_calls_over_an_agents_slots_wait_then_are_refused_and_others_pass(
    limited: SpecialStack, ns: str, held_call: Held
) -> None:
    busy = held_call.client
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(busy.list, [ns])
        eventually(lambda: _waiting(limited, "busy") == 1, "the second call waits in line")
        with pytest.raises(grpc.RpcError) as exc:
            busy.search("a third call", [ns])
        code, details = rpc_error(exc)
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "too many calls at once" in details and "retry after 1 s" in details
        assert dict(exc.value.trailing_metadata())["retry-after"] == "1"
        with limited.client_as("someone-else") as other:  # another agent goes straight through
            other.write([memory_input(ns, "not held up")])
            assert other.get(other.list([ns]).memories[0].id)
        assert not waiting.done() and not held_call.call.done()
        held_call.release()  # the held call completes, and the waiting one gets its slot
        assert held_call.call.result(timeout=60).forgotten_ids
        assert waiting.result(timeout=60) is not None


# -- item 4: rate limits ----------------------------------------------------------------------


def test_an_agent_over_its_rate_is_refused_with_retry_advice(limited: Stack, ns: str) -> None:
    with limited.client_as("ratey") as ratey, limited.client_as("steady") as steady:
        for _ in range(3):  # the burst
            ratey.list([ns])
        with pytest.raises(grpc.RpcError) as exc:
            ratey.list([ns])
        code, details = rpc_error(exc)
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "over this agent's rate limit" in details
        assert float(dict(exc.value.trailing_metadata())["retry-after"]) > 1
        for _ in range(5):
            steady.list([ns])  # only ratey is limited


def test_a_group_shares_one_rate_limit(limited: Stack, ns: str) -> None:
    first = MemhubClient(limited.address, token=limited.token("reporter-1", groups=("reporters",)))
    second = MemhubClient(limited.address, token=limited.token("reporter-2", groups=("reporters",)))
    with first, second:
        first.list([ns])
        second.list([ns])
        with pytest.raises(grpc.RpcError) as exc:
            first.list([ns])
        assert exc.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "a group's shared rate limit" in exc.value.details()


def test_refusals_are_audited_in_aggregate(limited: SpecialStack, ns: str) -> None:
    limited.hub.events.flush()
    limited.hub.audit.flush()
    since = Timestamp()
    since.FromDatetime(datetime.now(timezone.utc))
    with limited.client_as("audited") as audited:
        audited.list([ns])  # its burst of one
        for _ in range(5):
            with pytest.raises(grpc.RpcError) as exc:
                audited.list([ns])
            assert exc.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    limited.hub.events.flush()
    limited.hub.audit.flush()
    rows = limited.client.call_admin(
        "QueryAuditLog", admin_pb2.QueryAuditLogRequest(action="limit", agent_id="audited", since=since)
    ).entries
    assert tally(rows) == {"agent-rate": 5}
    assert all(r.decision == admin_pb2.DECISION_DENY and r.rpc == "memhub.v1.MemoryService/ListMemories" for r in rows)


def test_limit_settings_are_read_from_the_environment(tmp_path: Path) -> None:
    from memhub.config import HubConfig

    config = HubConfig.from_env(
        {
            "MEMHUB_DATA_DIR": str(tmp_path),
            "MEMHUB_AGENT_MAX_CONCURRENT": "2",
            "MEMHUB_AGENT_RATE": "5",
            "MEMHUB_AGENT_LIMITS": "bot=16/500/1000",
            "MEMHUB_GROUP_LIMITS": "reporters=2/1, bench=0/0",
            "MEMHUB_STREAM_IDLE_TIMEOUT_S": "30",
        }
    ).limits
    assert config.agent == CallLimit(2, 5.0, 0) and config.agent.bucket == 10  # bursts of twice the rate
    assert config.limit_for("bot") == CallLimit(16, 500.0, 1000)
    assert dict(config.groups) == {"reporters": CallLimit(2, 1.0, 0), "bench": CallLimit(0, 0.0, 0)}
    assert config.stream_idle_timeout_s == 30.0
    from memhub.errors import StartupError

    with pytest.raises(StartupError, match="MEMHUB_GROUP_LIMITS: 'reporters' is not NAME=CONCURRENT/RATE"):
        HubConfig.from_env({"MEMHUB_DATA_DIR": str(tmp_path), "MEMHUB_GROUP_LIMITS": "reporters"})
    with pytest.raises(StartupError, match="is not CONCURRENT/RATE"):
        HubConfig.from_env({"MEMHUB_DATA_DIR": str(tmp_path), "MEMHUB_AGENT_LIMITS": "bot=fast"})


def test_admins_see_the_limits_the_refusals_and_who_uses_the_replica(limited: SpecialStack, ns: str) -> None:
    with limited.client_as("viewed") as viewed:
        viewed.list([ns])  # its burst of one
        with pytest.raises(grpc.RpcError):
            viewed.list([ns])
    report = limited.client.call_admin("GetLimits", admin_pb2.GetLimitsRequest())
    assert (report.agent.concurrent, report.agent.rate) == (1, 0)
    assert report.agents["ratey"].burst == 3 and report.groups["reporters"].burst == 2
    assert report.streams_per_agent == 4 and report.queue == 1
    assert report.refusals["limit/agent-rate"] >= 1
    usage = {(u.kind, u.name): u for u in report.usage}
    assert usage[("agent", "viewed")].refused == 1
    with MemhubClient(limited.address, token=limited.token("no-admin", groups=())) as outsider:
        with pytest.raises(grpc.RpcError) as exc:
            outsider.call_admin("GetLimits", admin_pb2.GetLimitsRequest())
    assert exc.value.code() == grpc.StatusCode.PERMISSION_DENIED


# -- issue 22: an agent's calls are held to its fair share while others are active -----------------

FAIR_LIMITS = dataclasses.replace(
    LimitsConfig(),
    agent=CallLimit(concurrent=3, rate=0, burst=0),
    queue=4,
    queue_timeout_s=120.0,
    fair_share_slots=2,  # two agents active: one call each
    fair_share_window_s=0,  # an agent counts while it has a call running or waiting, so nothing here depends on time
)


@pytest.fixture(scope="module")
def fair_hub(tmp_path_factory: pytest.TempPathFactory, external_pg_admin_url: str) -> Iterator[SpecialStack]:
    folder = tmp_path_factory.mktemp("fair")
    with special_hub(folder, external_pg_admin_url, limits=FAIR_LIMITS) as stack:
        yield stack


class RowLocks:
    """Memories whose rows the test holds locked, so forgets of them hold their call slots until released.

    Take them only once the rows are indexed (``wait_indexed``): the indexer updates a batch of rows in one
    transaction, and one blocked on a row the test already holds would hold the next rows the test asks for, a
    deadlock between the test and the hub. ``lock_timeout`` turns any wait the test did not foresee into an error."""

    def __init__(self, stack: SpecialStack, ids: list[str]) -> None:
        self.ids = ids
        self._conn = psycopg.connect(stack.hub.database_url.replace("postgresql+psycopg://", "postgresql://"))
        self._conn.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
        self._conn.execute("SELECT 1 FROM memories WHERE id = ANY(%s) FOR UPDATE", (self.ids,))

    def release(self) -> None:
        self._conn.rollback()

    def close(self) -> None:
        self._conn.rollback()
        self._conn.close()


def test_a_flooding_agent_is_held_to_its_fair_share_while_another_is_active(fair_hub: SpecialStack, ns: str) -> None:
    # Written before any lock is taken: a write may look at (and wait for) the namespace's other rows.
    topics = ["tide tables", "violin strings", "tax forms", "cactus care", "jazz chords", "bus timetables"]
    written = fair_hub.client.write([memory_input(ns, f"notes on {t}") for t in topics], wait_indexed=True)
    ids = [r.memory.id for r in written.results]
    first, later, victims = RowLocks(fair_hub, ids[:3]), RowLocks(fair_hub, ids[3:5]), RowLocks(fair_hub, ids[5:])
    heavy, victim = fair_hub.client_as("heavy"), fair_hub.client_as("victim")
    pool = ThreadPoolExecutor(6)
    try:
        held = [pool.submit(heavy.forget, ids=[i], reason="held") for i in first.ids]
        # Alone, an agent gets its whole limit (3), more than its fair share of two slots.
        eventually(lambda: _running(fair_hub, "heavy") == 3, "heavy alone runs 3 calls")
        queued = [pool.submit(heavy.forget, ids=[i], reason="held") for i in later.ids]
        eventually(lambda: _waiting(fair_hub, "heavy") == 2, "heavy's 4th and 5th calls wait for its own slots")
        victim_call = pool.submit(victim.forget, ids=victims.ids, reason="held")
        eventually(lambda: _running(fair_hub, "victim") == 1, "the victim's call runs beside heavy's three")
        first.release()
        for call in held:
            assert call.result(timeout=60).forgotten_ids
        # Two agents active: heavy's share is 2 // 2 = 1, so only one of its two waiting calls got a slot.
        eventually(lambda: _running(fair_hub, "heavy") == 1, "one of heavy's waiting calls runs")
        assert _waiting(fair_hub, "heavy") == 1
        victims.release()
        assert victim_call.result(timeout=60).forgotten_ids
        # The victim went idle: heavy is alone again and its last call gets a slot without any other call ending.
        eventually(lambda: _running(fair_hub, "heavy") == 2, "heavy gets its whole limit back")
        assert _waiting(fair_hub, "heavy") == 0
        later.release()
        for call in queued:
            assert call.result(timeout=60).forgotten_ids
    finally:
        for locks in (first, later, victims):
            locks.close()
        pool.shutdown(wait=True)
        heavy.close()
        victim.close()


def test_fair_share_settings_are_read_and_checked(tmp_path: Path) -> None:
    from memhub.config import HubConfig
    from memhub.errors import StartupError

    base = {"MEMHUB_DATA_DIR": str(tmp_path)}
    limits = HubConfig.from_env(base | {"MEMHUB_FAIR_SHARE_SLOTS": "8", "MEMHUB_FAIR_SHARE_WINDOW_S": "2.5"}).limits
    assert (limits.fair_share_slots, limits.fair_share_window_s) == (8, 2.5)
    assert (LimitsConfig().fair_share_slots, LimitsConfig().fair_share_window_s) == (0, 10.0)  # 0: the hub's CPUs
    with pytest.raises(StartupError, match=r"MEMHUB_FAIR_SHARE_WINDOW_S=-1 is out of range \(0 to 3600"):
        HubConfig.from_env(base | {"MEMHUB_FAIR_SHARE_WINDOW_S": "-1"})


def test_an_agent_that_went_idle_keeps_its_share_for_the_window_then_gives_it_back() -> None:
    """The limiter itself on an event loop, with its clock in the test's hands (the window is time, the test is not)."""
    import asyncio

    from memhub.api.call_limits import CallLimiter
    from memhub.core.model import Caller

    now = [0.0]
    config = dataclasses.replace(FAIR_LIMITS, fair_share_window_s=10.0)
    limiter = CallLimiter(config, clock=lambda: now[0])
    heavy, victim = Caller("heavy"), Caller("victim")

    def state(agent: str) -> tuple[int, int]:
        found = [(a.running, a.waiting) for a in limiter.snapshot() if a.kind == "agent" and a.name == agent]
        return found[0] if found else (0, 0)

    async def scenario() -> None:
        victims_call = await limiter.admit(victim)
        first = await limiter.admit(heavy)  # two agents active: heavy's share is one call
        waiting = [asyncio.create_task(limiter.admit(heavy)) for _ in range(2)]
        await asyncio.sleep(0)
        assert state("heavy") == (1, 2)
        now[0] = 1.0
        victims_call.release()  # the victim is between calls: it still counts for 10 s
        await asyncio.sleep(0)
        assert state("heavy") == (1, 2)
        now[0] = 20.0  # its window has passed: heavy is alone, and its next free slot lets both waiting calls in
        first.release()
        tickets = await asyncio.gather(*waiting)
        assert state("heavy") == (2, 0)
        for ticket in tickets:
            ticket.release()

    asyncio.run(scenario())


@pytest.fixture(scope="module")
def windowed_hub(tmp_path_factory: pytest.TempPathFactory, external_pg_admin_url: str) -> Iterator[SpecialStack]:
    folder = tmp_path_factory.mktemp("windowed")
    limits = dataclasses.replace(FAIR_LIMITS, fair_share_window_s=1.0)
    with special_hub(folder, external_pg_admin_url, limits=limits) as stack:
        yield stack


def test_a_waiting_call_gets_its_slot_once_the_other_agents_window_passes(windowed_hub: SpecialStack, ns: str) -> None:
    """No call of heavy's ends: only the hub's own timer can let its waiting call in."""
    written = windowed_hub.client.write([memory_input(ns, f"note {t}") for t in ("owl", "elm", "ore")], wait_indexed=True)
    ids = [r.memory.id for r in written.results]
    heavy_rows, victim_rows = RowLocks(windowed_hub, ids[:2]), RowLocks(windowed_hub, ids[2:])
    heavy, victim = windowed_hub.client_as("heavy"), windowed_hub.client_as("victim")
    pool = ThreadPoolExecutor(3)
    try:
        victim_call = pool.submit(victim.forget, ids=victim_rows.ids, reason="held")
        eventually(lambda: _running(windowed_hub, "victim") == 1, "the victim's call runs")
        heavy_calls = [pool.submit(heavy.forget, ids=[i], reason="held") for i in heavy_rows.ids]
        eventually(lambda: (_running(windowed_hub, "heavy"), _waiting(windowed_hub, "heavy")) == (1, 1), "heavy at its share")
        victim_rows.release()
        assert victim_call.result(timeout=60).forgotten_ids
        eventually(lambda: _running(windowed_hub, "heavy") == 2, "heavy's second call runs once the victim's window passed")
        heavy_rows.release()
        for call in heavy_calls:
            assert call.result(timeout=60).forgotten_ids
    finally:
        heavy_rows.close()
        victim_rows.close()
        pool.shutdown(wait=True)
        heavy.close()
        victim.close()
