"""Prometheus metrics: real RPCs over gRPC, read back from the hub's real /metrics endpoint.

A hub with metrics on (port 0, short sample intervals), on the embedded and
on the external Postgres. Counters are the process's (tests run hubs in one
process), so each test reads them before and after what it does and
compares the difference; hubs of other test modules serve no metrics and
make no calls meanwhile. The exposition is parsed with
prometheus_client.parser, as a scraper would.
"""

from __future__ import annotations

import dataclasses
import socket
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import grpc
import pytest
from conftest import Samples, Stack, backend_database, eventually, hub_config, rpc_error, samples_of, serving, value
from feed_support import Watcher
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from sqlalchemy import text

from memhub.client import MemhubClient, memory_input
from memhub.config import CallLimit, LimitsConfig
from memhub.errors import StartupError
from memhub.metrics import MetricsConfig, change_feed
from memhub.metrics.endpoint import MAX_CONNECTIONS, MetricsEndpoint
from memhub.metrics.instruments import AUTH_REASONS, LIMIT_REASONS
from memhub.retrieval_log.config import RetrievalLogConfig
from memhub.retrieval_log.writer import RetrievalLogWriter

SLOW = 1 / 600  # one call per ten minutes: a spent bucket stays spent for the whole module
LIMITS = LimitsConfig(agents=(("ratey", CallLimit(0, SLOW, 1)), ("bench", CallLimit(0, 0, 0))))
METRICS = MetricsConfig(port=0, sample_interval_s=0.2, status_interval_s=0.5)
WRITE = ("memhub.v1.MemoryService", "WriteMemories")
SEARCH = ("memhub.v1.MemoryService", "SearchMemories")


@dataclasses.dataclass
class MetricsStack(Stack):
    url: str = ""

    def scrape_text(self) -> str:
        with urllib.request.urlopen(self.url, timeout=10) as reply:
            assert reply.status == 200
            assert reply.headers["Content-Type"].startswith("text/plain; version=")
            return reply.read().decode()

    def scrape(self) -> Samples:
        return samples_of(self.scrape_text())


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum over every series of ``name`` whose labels include ``labels``."""
    want = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))


@pytest.fixture(scope="module", params=["embedded-pg", "external-pg"])
def metered(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MetricsStack]:
    backend = request.param
    with backend_database(request, backend) as database_url:
        folder = tmp_path_factory.mktemp(f"metrics-{backend}")
        config = dataclasses.replace(hub_config(folder, database_url, "metrics_test"), metrics=METRICS, limits=LIMITS)
        with serving(config) as (hub, address):
            assert hub.metrics is not None
            stack = MetricsStack(backend, hub, address, None, hub.metrics.url)  # type: ignore[arg-type]
            stack.client = stack.client_as("tester")
            try:
                yield stack
            finally:
                stack.client.close()


def rpc_count(samples: Samples, service_method: tuple[str, str], code: str) -> float:
    service, method = service_method
    return value(samples, "memhub_rpc_requests_total", service=service, method=method, code=code)


def rpc_timed(samples: Samples, service_method: tuple[str, str], code: str) -> float:
    service, method = service_method
    return value(samples, "memhub_rpc_duration_seconds_count", service=service, method=method, code=code)


# -- the RPCs: counts per method and code, policy decisions, refusals ---------------------------------------


def test_calls_are_counted_per_method_code_decision_and_refusal(metered: MetricsStack, ns: str) -> None:
    before = metered.scrape()
    client = metered.client
    client.write([memory_input(ns, "Deploys freeze on Fridays after 3pm")], wait_indexed=True)
    client.write([memory_input(ns, "The staging database is restored every Monday")])
    for query in ("can I deploy on Friday?", "when is staging restored?", "deploy freeze"):
        assert client.search(query, [ns]) is not None
    # Denied: an agent in no group may write nowhere under the test policy.
    with metered.client_as("outsider", groups=()) as outsider, pytest.raises(grpc.RpcError) as denied:
        outsider.write([memory_input(ns, "I should not be able to write this note")])
    assert rpc_error(denied)[0] == grpc.StatusCode.PERMISSION_DENIED
    # Unauthenticated: a token that is no JWT, and a token signed with another key.
    with MemhubClient(metered.address, token="not-a-jwt") as forged, pytest.raises(grpc.RpcError) as bad:
        forged.search("anything", [ns])
    assert rpc_error(bad)[0] == grpc.StatusCode.UNAUTHENTICATED
    # Rate-limited: agent "ratey" may make one call per ten minutes.
    with metered.client_as("ratey") as ratey:
        ratey.search("first call is allowed", [ns])
        with pytest.raises(grpc.RpcError) as limited:
            ratey.search("second call is over the rate", [ns])
    assert rpc_error(limited)[0] == grpc.StatusCode.RESOURCE_EXHAUSTED

    def counted() -> bool:
        now = metered.scrape()
        return rpc_count(now, SEARCH, "RESOURCE_EXHAUSTED") - rpc_count(before, SEARCH, "RESOURCE_EXHAUSTED") >= 1

    eventually(counted, "the refused search is counted")  # the count is made as the call unwinds
    after = metered.scrape()

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert rpc_count(after, WRITE, "OK") - rpc_count(before, WRITE, "OK") == 2
    assert rpc_count(after, SEARCH, "OK") - rpc_count(before, SEARCH, "OK") == 4  # three as tester, one as ratey
    assert rpc_count(after, WRITE, "PERMISSION_DENIED") - rpc_count(before, WRITE, "PERMISSION_DENIED") == 1
    assert rpc_count(after, SEARCH, "UNAUTHENTICATED") - rpc_count(before, SEARCH, "UNAUTHENTICATED") == 1
    assert rpc_count(after, SEARCH, "RESOURCE_EXHAUSTED") - rpc_count(before, SEARCH, "RESOURCE_EXHAUSTED") == 1
    # Each finished call is timed once, with the same labels.
    for method, code, n in ((WRITE, "OK", 2), (SEARCH, "OK", 4), (WRITE, "PERMISSION_DENIED", 1)):
        assert rpc_timed(after, method, code) - rpc_timed(before, method, code) == n
        service, name = method
        labels = {"service": service, "method": name, "code": code}
        inf = delta("memhub_rpc_duration_seconds_bucket", **labels, le="+Inf")
        assert inf == n and delta("memhub_rpc_duration_seconds_sum", **labels) > 0
    assert delta("memhub_auth_failures_total", reason="malformed-token") == 1
    assert delta("memhub_limit_refusals_total", reason="agent-rate") == 1
    assert delta("memhub_policy_decisions_total", action="write", effect="deny") == 1
    assert delta("memhub_policy_decisions_total", action="write", effect="allow") == 2
    # One scope per search, and each write asks whether its writer may read there (a blind write otherwise).
    assert delta("memhub_policy_decisions_total", action="read", effect="allow") == 4 + 2


def test_security_events_and_retrieval_log_drops_reach_the_scrape(
    metered: MetricsStack, ns: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both were OpenTelemetry counters without a meter provider: /metrics never showed them (issue 24)."""
    before = metered.scrape()
    assert ("memhub_security_events_total", (("action", "authenticate"), ("reason", "bad-signature"))) in before
    assert ("memhub_retrieval_log_dropped_total", ()) in before  # known series start at 0
    with MemhubClient(metered.address, token="not-a-jwt") as forged, pytest.raises(grpc.RpcError):
        forged.search("anything", [ns])
    # A real writer whose queue holds two searches and is never drained, in front of the hub's service.
    writer = RetrievalLogWriter(metered.hub.engine, RetrievalLogConfig(max_queue=2))
    monkeypatch.setattr(metered.hub.service, "_retrieval_log", writer)
    metered.client.write([memory_input(ns, "Backups run nightly at 02:00")], wait_indexed=True)
    for i in range(5):
        assert metered.client.search(f"when do backups run? ({i})", [ns]).search_id
    after = metered.scrape()
    forged_delta = value(after, "memhub_security_events_total", action="authenticate", reason="malformed-token") - value(
        before, "memhub_security_events_total", action="authenticate", reason="malformed-token"
    )
    assert forged_delta == 1
    dropped = value(after, "memhub_retrieval_log_dropped_total") - value(before, "memhub_retrieval_log_dropped_total")
    assert dropped == writer.dropped == 3


def test_no_agent_id_or_namespace_becomes_a_label(metered: MetricsStack, ns: str) -> None:
    agent = f"agent-{uuid.uuid4().hex[:8]}"
    with metered.client_as(agent) as client:
        client.write([memory_input(ns, "Invoices are sent on the first working day")], wait_indexed=True)
        client.search("when are invoices sent?", [ns])
    with MemhubClient(metered.address, token=f"{agent}.{ns}.forged") as forged, pytest.raises(grpc.RpcError):
        forged.search("anything", [ns])
    body = metered.scrape_text()
    assert agent not in body and ns not in body
    for family in text_string_to_metric_families(body):
        if family.name == "memhub_auth_failures":
            assert {s.labels["reason"] for s in family.samples} <= set(AUTH_REASONS)
        if family.name == "memhub_limit_refusals":
            assert {s.labels["reason"] for s in family.samples} <= set(LIMIT_REASONS)
        if family.name == "memhub_rpc_requests":
            assert {s.labels["service"] for s in family.samples} <= {
                "memhub.v1.MemoryService",
                "memhub.v1.AdminService",
                "memhub.v1.ChangeFeedService",
                "memhub.v1.SessionStateService",
                "grpc.health.v1.Health",
                "grpc.reflection.v1.ServerReflection",
                "grpc.reflection.v1alpha.ServerReflection",
            }


def test_an_unknown_method_is_not_a_label(metered: MetricsStack) -> None:
    """Its name is the caller's: UNIMPLEMENTED from gRPC, and no series."""
    method = f"/memhub.v1.MemoryService/Made{uuid.uuid4().hex[:8]}"
    with grpc.insecure_channel(metered.address) as channel, pytest.raises(grpc.RpcError) as exc:
        channel.unary_unary(method)(b"", timeout=10, metadata=(("authorization", f"Bearer {metered.token('tester')}"),))
    assert exc.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert method.rsplit("/", 1)[1] not in metered.scrape_text()


# -- the write and search paths: indexer, embedder, Milvus, Postgres ----------------------------------------


def test_the_stores_and_the_embedder_are_timed(metered: MetricsStack, ns: str) -> None:
    before = metered.scrape()
    reply = metered.client.write(
        [memory_input(ns, f"Release {i} ships with the new billing export") for i in range(3)], wait_indexed=True
    )
    assert reply.indexed
    metered.client.search("which release ships the billing export?", [ns])
    metered.client.forget(ids=[reply.results[0].memory.id], reason="metrics test")
    assert metered.hub.indexer.wait_indexed([reply.results[0].memory.id], 30)
    after = metered.scrape()

    def grew(name: str, **labels: str) -> float:
        return total(after, name, **labels) - total(before, name, **labels)

    assert grew("memhub_indexer_outbox_rows_total") >= 4  # three writes and a forget
    assert grew("memhub_indexer_memories_total", operation="upsert") >= 3
    assert grew("memhub_indexer_memories_total", operation="delete") >= 1
    assert grew("memhub_indexer_batches_total", outcome="ok") >= 1
    assert grew("memhub_indexer_batch_duration_seconds_count") >= 1
    assert grew("memhub_embedding_batch_texts_count", lane="bulk") >= 1
    assert grew("memhub_embedding_batch_texts_sum", lane="bulk") >= 3
    assert grew("memhub_embedding_batch_texts_count", lane="query") >= 1
    assert grew("memhub_embedding_duration_seconds_count", lane="query") >= 1
    assert grew("memhub_milvus_call_duration_seconds_count", operation="upsert", outcome="ok") >= 1
    assert grew("memhub_milvus_call_duration_seconds_count", operation="delete", outcome="ok") >= 1
    assert grew("memhub_milvus_call_duration_seconds_count", operation="search_dense", outcome="ok") >= 1
    assert grew("memhub_milvus_call_duration_seconds_count", operation="search_keyword", outcome="ok") >= 1
    for operation in ("select", "insert", "update", "delete"):
        assert grew("memhub_postgres_statement_duration_seconds_count", operation=operation, outcome="ok") >= 1, operation
    assert grew("memhub_postgres_statement_duration_seconds_sum") > 0


def test_a_failed_statement_is_timed_as_an_error(metered: MetricsStack) -> None:
    before = metered.scrape()
    with pytest.raises(Exception, match="no_such_table"), metered.hub.engine.connect() as conn:
        conn.execute(text("SELECT * FROM no_such_table"))
    after = metered.scrape()
    name = "memhub_postgres_statement_duration_seconds_count"
    assert total(after, name, operation="select", outcome="error") - total(before, name, operation="select", outcome="error") == 1


# -- the sampled state ------------------------------------------------------------------------------------


def test_memories_per_status_follow_writes_and_forgets(metered: MetricsStack, ns: str) -> None:
    """A sample taken after a write and a forget equals the table's counts then (other hubs of the test session
    expire and archive memories meanwhile, so the sample is compared with Postgres, not with a delta)."""
    statuses = ("active", "superseded", "forgotten", "expired", "quarantined", "archived")
    started = time.time()
    reply = metered.client.write([memory_input(ns, f"Customer {i} prefers email over phone") for i in range(3)])
    metered.client.forget(ids=[reply.results[0].memory.id], reason="metrics test")
    with metered.hub.engine.connect() as conn:
        rows = conn.execute(text("SELECT status, count(*) FROM memories WHERE namespace = :ns GROUP BY status"), {"ns": ns})
        ours = {status: count for status, count in rows}
    assert ours == {"active": 2, "forgotten": 1}

    def sampled_as_stored() -> bool:
        now = metered.scrape()
        if value(now, "memhub_state_sample_timestamp_seconds", sample="statuses") <= started:
            return False  # no sample since the writes yet
        with metered.hub.engine.connect() as conn:
            rows = conn.execute(text("SELECT status, count(*) FROM memories GROUP BY status"))
            truth = {status: count for status, count in rows}
        return all(value(now, "memhub_memories", status=s) == truth.get(s, 0) for s in statuses)

    eventually(sampled_as_stored, "a status sample equals the memories table", timeout_s=30)
    now = metered.scrape()
    for status in statuses:
        assert ("memhub_memories", (("status", status),)) in now, status  # every status, 0 when none
    assert value(now, "memhub_memories", status="forgotten") >= 1 and value(now, "memhub_memories", status="active") >= 2


def test_outbox_depth_and_index_lag_come_from_the_outbox(metered: MetricsStack) -> None:
    """A real outbox row, an hour old and in back-off (nothing claims it), raises the lag and the depth."""
    engine = metered.hub.engine
    with engine.begin() as conn:
        row_id = conn.execute(
            text(
                "INSERT INTO outbox (memory_id, created_at, available_at, attempts, last_error) "
                "VALUES (:m, now() - interval '1 hour', now() + interval '1 hour', 1, 'metrics test') RETURNING id"
            ),
            {"m": str(uuid.uuid4())},
        ).scalar_one()
    try:

        def lagging() -> bool:
            now = metered.scrape()
            return value(now, "memhub_index_lag_seconds") >= 3600 and value(now, "memhub_outbox_retrying") >= 1

        eventually(lagging, "the sample sees the hour-old outbox row", timeout_s=30)
        assert value(metered.scrape(), "memhub_outbox_depth") >= 1
    finally:
        with engine.begin() as conn:
            conn.execute(text("DELETE FROM outbox WHERE id = :i"), {"i": row_id})
    eventually(lambda: value(metered.scrape(), "memhub_index_lag_seconds") < 3600, "the lag falls back once it is gone")


def test_queue_and_health_gauges(metered: MetricsStack) -> None:
    now = metered.scrape()
    assert value(now, "memhub_database_up") == 1 and value(now, "memhub_index_up") == 1
    assert ("memhub_audit_queue_depth", ()) in now
    assert value(now, "memhub_audit_queue_capacity") == metered.hub.audit.capacity
    info = [labels for (name, labels) in now if name == "memhub_build_info"]
    assert info and dict(info[0])["embedding_model"] == metered.hub.embedder.model_id
    assert value(now, "process_resident_memory_bytes") > 0  # the process collector


def test_the_change_feed_gauge_counts_open_streams(metered: MetricsStack) -> None:
    base = value(metered.scrape(), "memhub_change_feed_streams")
    with change_feed.open_stream(), change_feed.open_stream():
        assert value(metered.scrape(), "memhub_change_feed_streams") == base + 2
        with pytest.raises(RuntimeError), change_feed.open_stream():  # a stream that fails is taken off too
            raise RuntimeError("the stream broke")
        assert change_feed.open_streams() == base + 2
    assert value(metered.scrape(), "memhub_change_feed_streams") == base


# -- the endpoint -----------------------------------------------------------------------------------------


def _settled_streams(metered: MetricsStack) -> float:
    """The open-streams gauge once it holds still for a second: the gauge is the process's, and a stream an earlier
    test closed may still be ending (seen: the base read 1, and that stream left while this test's was open)."""
    deadline = time.monotonic() + 30
    last = value(metered.scrape(), "memhub_change_feed_streams")
    while True:
        time.sleep(1.0)
        now = value(metered.scrape(), "memhub_change_feed_streams")
        if now == last or time.monotonic() > deadline:
            return now
        last = now


def test_a_real_subscription_is_an_open_stream_on_the_gauge(metered: MetricsStack, ns: str) -> None:
    base = _settled_streams(metered)
    with Watcher(metered.client, [ns]) as watcher:
        watcher.started()
        assert value(metered.scrape(), "memhub_change_feed_streams") == base + 1
    eventually(lambda: value(metered.scrape(), "memhub_change_feed_streams") == base, "the closed stream left the gauge")


def test_only_get_metrics_answers(metered: MetricsStack) -> None:
    root = metered.url.removesuffix("/metrics")
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{root}/other", timeout=10)
    assert missing.value.code == 404
    with pytest.raises(urllib.error.HTTPError) as posted:
        urllib.request.urlopen(urllib.request.Request(metered.url, data=b"x", method="POST"), timeout=10)
    assert posted.value.code == 405
    names = urllib.request.urlopen(f"{metered.url}?name[]=memhub_index_up", timeout=10).read().decode()
    assert "memhub_index_up 1.0" in names and "memhub_rpc_requests" not in names


def test_a_scrape_gets_through_while_idle_connections_are_held(metered: MetricsStack) -> None:
    """Issue 22: 20 connections that send nothing kept every scrape out (the bound is 16)."""
    host, port = metered.url.removeprefix("http://").split("/")[0].rsplit(":", 1)
    idle = [socket.create_connection((host, int(port)), timeout=10) for _ in range(MAX_CONNECTIONS + 4)]
    try:
        assert "memhub_index_up" in metered.scrape_text()  # the hub closes idle connections to make room
        assert "memhub_index_up" in metered.scrape_text()
        assert _closed_by_hub(idle[0]) and _closed_by_hub(idle[1])  # the oldest went first
    finally:
        for s in idle:
            s.close()


def test_a_client_trickling_its_headers_is_dropped() -> None:
    """A byte of one long header every 0.2 s never trips the socket's idle timeout (nor the stdlib's header count or
    line length); the whole header has a deadline."""
    endpoint = MetricsEndpoint("127.0.0.1", 0, _Nothing(), header_timeout_s=1.0)
    endpoint.start()
    try:
        with socket.create_connection(("127.0.0.1", endpoint.port), timeout=10) as slow:
            slow.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")

            def dropped() -> bool:
                try:
                    slow.sendall(b"a")
                except OSError:
                    return True
                time.sleep(0.2)
                return _closed_by_hub(slow, wait_s=0.01)

            eventually(dropped, "the hub drops the slow sender", timeout_s=30)
        with urllib.request.urlopen(endpoint.url, timeout=10) as reply:
            assert reply.status == 200  # and a scrape is answered as usual
    finally:
        endpoint.stop()


def _closed_by_hub(conn: socket.socket, wait_s: float = 5.0) -> bool:
    """True when the hub ended the connection (end of stream or reset), False when it is still open."""
    conn.settimeout(wait_s)
    try:
        return conn.recv(1024) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def _scrapes(stack: MetricsStack) -> bool:
    try:
        return "memhub_index_up" in stack.scrape_text()
    except OSError:
        return False


# -- configuration ----------------------------------------------------------------------------------------


def test_metrics_are_off_unless_a_port_is_set() -> None:
    assert MetricsConfig.from_env({}).enabled is False
    config = MetricsConfig.from_env({"MEMHUB_METRICS_PORT": "9464"})
    assert (config.port, config.host, config.enabled) == (9464, "127.0.0.1", True)
    config = MetricsConfig.from_env({"MEMHUB_METRICS_PORT": "0", "MEMHUB_METRICS_HOST": "0.0.0.0"})
    assert (config.port, config.host) == (0, "0.0.0.0")
    assert MetricsConfig.from_env({"MEMHUB_METRICS_SAMPLE_S": "30"}).sample_interval_s == 30


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"MEMHUB_METRICS_PORT": "http"}, "MEMHUB_METRICS_PORT"),
        ({"MEMHUB_METRICS_PORT": "70000"}, "MEMHUB_METRICS_PORT"),
        ({"MEMHUB_METRICS_PORT": "-1"}, "MEMHUB_METRICS_PORT"),
        ({"MEMHUB_METRICS_HOST": "not a host"}, "MEMHUB_METRICS_HOST"),
        ({"MEMHUB_METRICS_SAMPLE_S": "0"}, "MEMHUB_METRICS_SAMPLE_S"),
        ({"MEMHUB_METRICS_SAMPLE_S": "nan"}, "MEMHUB_METRICS_SAMPLE_S"),
        ({"MEMHUB_METRICS_STATUS_SAMPLE_S": "1"}, "MEMHUB_METRICS_STATUS_SAMPLE_S"),
    ],
)
def test_malformed_settings_name_the_variable(env: dict[str, str], variable: str) -> None:
    with pytest.raises(StartupError, match=variable):
        MetricsConfig.from_env(env)


class _Nothing(Collector):
    def collect(self) -> Iterator:
        return iter(())


def test_a_taken_port_fails_the_start_naming_the_setting(metered: MetricsStack) -> None:
    port = metered.hub.metrics.endpoint.port
    with pytest.raises(StartupError, match="MEMHUB_METRICS_PORT") as exc:
        MetricsEndpoint("127.0.0.1", port, _Nothing())
    assert str(port) in str(exc.value)


def test_a_hub_without_metrics_has_no_endpoint_and_counts_no_calls(
    metered: MetricsStack, tmp_path: Path, request: pytest.FixtureRequest, ns: str
) -> None:
    with backend_database(request, "embedded-pg") as url, serving(hub_config(tmp_path, url, "metrics_off")) as (hub, address):
        assert hub.metrics is None
        before = metered.scrape()
        token = Stack("embedded-pg", hub, address, None).token("tester", ttl=timedelta(minutes=5))  # type: ignore[arg-type]
        with MemhubClient(address, token=token) as client:
            client.search("nothing here", [ns])
        after = metered.scrape()
    assert rpc_count(after, SEARCH, "OK") == rpc_count(before, SEARCH, "OK")
