"""Tracing: a client's trace continues into the hub (RPC, policy, embedding, Milvus, Postgres spans).

An InMemorySpanExporter is attached to this process's provider for the
module (memhub.telemetry.add_span_processor: the global TracerProvider can be
set once per process, so tests add processors to it instead). The hub
fixtures may have started before: the hub's tracers follow the provider
installed later. Each test makes its own root span and looks only at the
spans of that trace, so other tests' traffic does not matter.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import grpc
import numpy as np
import pytest
from conftest import REPO, Fleet, Stack
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memhub import telemetry
from memhub.api.identity import current_trace_id
from memhub.client import MemhubClient, memory_input
from memhub.embedding import BatchingEmbedder
from memhub.errors import StartupError
from memhub.telemetry import JsonLinesSpanExporter, TelemetryConfig, read_spans_file, span_to_dict
from memhub.v1 import admin_pb2
from memhub.v1 import memory_pb2 as pb
from memhub.v1 import memory_pb2_grpc as pb_grpc

WRITE = "/memhub.v1.MemoryService/WriteMemories"
SEARCH = "/memhub.v1.MemoryService/SearchMemories"
test_tracer = trace.get_tracer("tests.tracing")


def trace_of(exporter: InMemorySpanExporter, trace_id: int, until: Callable[[list[dict]], bool]) -> list[dict]:
    """The finished spans of one trace, once `until` holds for them (or after 10 s, for the asserts to explain)."""
    deadline = time.monotonic() + 10
    while True:
        found = [span_to_dict(s) for s in exporter.get_finished_spans() if s.context.trace_id == trace_id]
        if until(found) or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def has(*names: str) -> Callable[[list[dict]], bool]:
    """All these spans have finished; for an RPC ("/service/method"), its SERVER span.

    The server span of a failed call may finish a moment after the client saw
    the status (the status is sent, then the handler unwinds), so waiting for
    the client's span alone would race.
    """

    def done(found: list[dict]) -> bool:
        return all(any(s["name"] == n and (not n.startswith("/") or s["kind"] == "SERVER") for s in found) for n in names)

    return done


def one(found: list[dict], name: str, kind: str | None = None) -> dict:
    matches = [s for s in found if s["name"] == name and (kind is None or s["kind"] == kind)]
    assert len(matches) == 1, (name, kind, [(s["name"], s["kind"]) for s in found])
    return matches[0]


def children(found: list[dict], parent: dict) -> list[dict]:
    return [s for s in found if s["parent_span_id"] == parent["span_id"]]


def hex_id(trace_id: int) -> str:
    return format(trace_id, "032x")


# -- one trace from the client into the hub ---------------------------------------------------------


def test_write_and_search_continue_the_callers_trace(stack: Stack, ns: str, spans: InMemorySpanExporter) -> None:
    with test_tracer.start_as_current_span("test.write") as root:
        reply = stack.client.write([memory_input(ns, "The backup window is 02:00 to 03:00 UTC")], wait_indexed=True)
    assert reply.indexed
    assert reply.results[0].memory.source.trace_id == hex_id(root.get_span_context().trace_id)
    found = trace_of(spans, root.get_span_context().trace_id, has("test.write", WRITE, "policy.authorize"))
    test_span = one(found, "test.write")
    client = one(found, WRITE, "CLIENT")
    server = one(found, WRITE, "SERVER")
    assert client["parent_span_id"] == test_span["span_id"]
    assert server["parent_span_id"] == client["span_id"] and server["parent_is_remote"]
    assert server["attributes"]["rpc.system"] == "grpc" and server["attributes"]["rpc.method"] == "WriteMemories"
    assert server["attributes"]["memhub.memories"] == 1 and server["status"]["code"] == "UNSET"
    # A write decides write, then read (a writer that cannot read writes blind: memhub/service/write.py).
    decided = [s for s in found if s["name"] == "policy.authorize"]
    assert sorted(s["attributes"]["memhub.action"] for s in decided) == ["read", "write"]
    policy = next(s for s in decided if s["attributes"]["memhub.action"] == "write")
    assert policy["parent_span_id"] == server["span_id"]
    assert policy["attributes"]["memhub.namespace"] == ns
    assert policy["attributes"]["memhub.decision"] == "allow"
    assert policy["attributes"]["memhub.policy_ids"] == ["tests-open"]
    assert len(policy["attributes"]["memhub.policy_version"]) == 64
    sql = [s for s in children(found, server) if s["attributes"].get("db.system") == "postgresql"]
    assert {"INSERT"} <= {s["attributes"]["db.operation"] for s in sql}
    assert all(
        s["kind"] == "CLIENT" and s["name"] == f"{s['attributes']['db.operation']} {s['attributes']['db.name']}" for s in sql
    )

    with test_tracer.start_as_current_span("test.search") as root:
        hits = stack.client.search("when is the backup window?", [ns]).hits
    assert [h.memory.namespace for h in hits] == [ns]
    found = trace_of(
        spans,
        root.get_span_context().trace_id,
        has("test.search", SEARCH, "embedding.embed", "milvus.search_dense", "milvus.search_keyword"),
    )
    server = one(found, SEARCH, "SERVER")
    assert one(found, SEARCH, "CLIENT")["span_id"] == server["parent_span_id"]
    # The channels ran on the search pool; the embedding model on the batcher's worker: all children of the RPC.
    under_rpc = {s["name"] for s in children(found, server)}
    assert {"policy.authorize", "embedding.embed", "milvus.search_dense", "milvus.search_keyword"} <= under_rpc
    assert any(s["attributes"].get("db.system") == "postgresql" for s in children(found, server))
    embed = one(found, "embedding.embed")
    assert embed["attributes"]["memhub.embedding.texts"] == 1
    assert embed["attributes"]["gen_ai.request.model"] == stack.hub.embedder.model_id
    assert embed["attributes"]["memhub.embedding.batch_texts"] >= 1
    assert [e["name"] for e in embed["events"]] == ["model.start"]
    for name in ("milvus.search_dense", "milvus.search_keyword"):
        milvus = one(found, name)
        assert milvus["kind"] == "CLIENT" and milvus["attributes"]["db.system"] == "milvus"
        assert milvus["attributes"]["db.collection.name"] == "memhub_test"
        assert milvus["attributes"]["memhub.milvus.hits"] >= 1
    many = one(found, "policy.authorize")  # one span for the whole decide_many
    assert many["attributes"]["memhub.decision"] == "allow" and many["attributes"]["memhub.namespaces_allowed"] == [ns]
    assert server["attributes"]["memhub.search.hits"] == 1


def test_indexer_batches_are_their_own_root_traces(stack: Stack, ns: str, spans: InMemorySpanExporter) -> None:
    with test_tracer.start_as_current_span("test.write") as root:
        stack.client.write([memory_input(ns, "Indexed in a background batch")], wait_indexed=True)
    request_trace = root.get_span_context().trace_id

    def batch_with_upsert() -> dict | None:
        for s in spans.get_finished_spans():
            if s.name == "indexer.batch" and s.context.trace_id != request_trace and s.start_time >= root.start_time:
                names = {
                    c.name for c in spans.get_finished_spans() if c.parent is not None and c.parent.span_id == s.context.span_id
                }
                if {"embedding.embed", "milvus.upsert"} <= names:
                    return span_to_dict(s)
        return None

    deadline = time.monotonic() + 10
    while (batch := batch_with_upsert()) is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert batch is not None, "no indexer.batch span with embedding and upsert children"
    assert batch["parent_span_id"] is None
    assert batch["attributes"]["memhub.indexer.claimed"] >= 1 and batch["attributes"]["memhub.indexer.upserted"] >= 1
    assert not any(s.name == "indexer.batch" for s in spans.get_finished_spans() if s.context.trace_id == request_trace)


def test_a_denied_write_is_traced_with_the_deciding_policy_and_audited_with_the_trace_id(
    fleet: Fleet, spans: InMemorySpanExporter
) -> None:
    ns = f"teams/support/t{uuid.uuid4().hex[:8]}"
    request_id = f"trace-deny-{uuid.uuid4().hex[:8]}"
    with fleet.client("carol") as carol, test_tracer.start_as_current_span("test.denied") as root:
        with pytest.raises(grpc.RpcError) as excinfo:
            carol.write([memory_input(ns, "auditors may not write this")], request_id=request_id)
    assert excinfo.value.code() == grpc.StatusCode.PERMISSION_DENIED
    trace_id = root.get_span_context().trace_id
    found = trace_of(spans, trace_id, has("test.denied", WRITE, "policy.authorize"))
    server = one(found, WRITE, "SERVER")
    assert server["status"]["code"] == "ERROR" and server["status"]["description"].startswith("PERMISSION_DENIED")
    assert server["attributes"]["rpc.grpc.status_code"] == grpc.StatusCode.PERMISSION_DENIED.value[0]
    assert server["attributes"]["error.type"] == "PERMISSION_DENIED"
    assert one(found, WRITE, "CLIENT")["status"]["code"] == "ERROR"
    policy = one(found, "policy.authorize")
    assert policy["parent_span_id"] == server["span_id"]
    assert policy["attributes"]["memhub.decision"] == "deny"
    assert policy["attributes"]["memhub.policy_ids"] == ["fleet.auditors-never-modify"]
    assert policy["attributes"]["memhub.namespace"] == ns and policy["attributes"]["memhub.action"] == "write"
    assert not any(s["attributes"].get("db.operation") == "INSERT" for s in found)  # nothing was stored

    fleet.hub.audit.flush()
    with fleet.client("root") as admin:
        entries = admin.call_admin(
            "QueryAuditLog", admin_pb2.QueryAuditLogRequest(agent_id="carol", action="write", decision=admin_pb2.DECISION_DENY)
        ).entries
    entry = next(e for e in entries if e.request_id == request_id)
    assert entry.trace_id == hex_id(trace_id)


def test_unauthenticated_calls_are_traced_too(stack: Stack, spans: InMemorySpanExporter) -> None:
    for token in (None, "not-a-jwt"):
        with MemhubClient(stack.address, token=token) as anonymous, test_tracer.start_as_current_span("test.anon") as root:
            with pytest.raises(grpc.RpcError) as excinfo:
                anonymous.search("anything", ["x"])
        assert excinfo.value.code() == grpc.StatusCode.UNAUTHENTICATED
        found = trace_of(spans, root.get_span_context().trace_id, has("test.anon", SEARCH))
        server = one(found, SEARCH, "SERVER")
        assert server["parent_span_id"] == one(found, SEARCH, "CLIENT")["span_id"]
        assert server["status"]["code"] == "ERROR" and server["status"]["description"].startswith("UNAUTHENTICATED")
        assert server["attributes"]["rpc.grpc.status_code"] == grpc.StatusCode.UNAUTHENTICATED.value[0]
        assert not children(found, server)  # refused before any work


def test_not_found_marks_the_rpc_span(stack: Stack, spans: InMemorySpanExporter) -> None:
    with test_tracer.start_as_current_span("test.get") as root:
        with pytest.raises(grpc.RpcError):
            stack.client.get(str(uuid.uuid4()))
    found = trace_of(spans, root.get_span_context().trace_id, has("test.get", "/memhub.v1.MemoryService/GetMemory"))
    server = one(found, "/memhub.v1.MemoryService/GetMemory", "SERVER")
    assert server["status"]["code"] == "ERROR" and server["attributes"]["error.type"] == "NOT_FOUND"


def test_health_checks_are_not_traced(stack: Stack, spans: InMemorySpanExporter) -> None:
    with test_tracer.start_as_current_span("test.health") as root:
        assert stack.client.healthy()
    found = trace_of(spans, root.get_span_context().trace_id, has("test.health"))
    assert [s["name"] for s in found] == ["test.health"]
    assert not any("grpc.health" in s.name for s in spans.get_finished_spans())


def test_explicit_traceparent_is_continued_without_an_active_span(stack: Stack, spans: InMemorySpanExporter) -> None:
    trace_hex, parent_hex = uuid.uuid4().hex, uuid.uuid4().hex[:16]
    traceparent = ("traceparent", f"00-{trace_hex}-{parent_hex}-01")
    # Through MemhubClient (its OpenTelemetry interceptor would otherwise start a new trace) ...
    with pytest.raises(grpc.RpcError):
        stack.client._stub.GetMemory(pb.GetMemoryRequest(id=str(uuid.uuid4())), metadata=(*stack.client.metadata, traceparent))
    found = trace_of(spans, int(trace_hex, 16), has("/memhub.v1.MemoryService/GetMemory"))
    client = one(found, "/memhub.v1.MemoryService/GetMemory", "CLIENT")
    assert client["parent_span_id"] == parent_hex and client["parent_is_remote"]
    assert one(found, "/memhub.v1.MemoryService/GetMemory", "SERVER")["parent_span_id"] == client["span_id"]
    # ... and from a plain gRPC channel with no instrumentation at all.
    trace_hex2 = uuid.uuid4().hex
    with grpc.insecure_channel(stack.address) as channel:
        with pytest.raises(grpc.RpcError):
            pb_grpc.MemoryServiceStub(channel).GetMemory(
                pb.GetMemoryRequest(id=str(uuid.uuid4())),
                metadata=(*stack.client.metadata, ("traceparent", f"00-{trace_hex2}-{parent_hex}-01")),
            )
    found = trace_of(spans, int(trace_hex2, 16), has("/memhub.v1.MemoryService/GetMemory"))
    server = one(found, "/memhub.v1.MemoryService/GetMemory", "SERVER")
    assert server["parent_span_id"] == parent_hex and server["parent_is_remote"]


def test_a_call_without_trace_context_records_the_trace_the_hub_started(
    stack: Stack, ns: str, spans: InMemorySpanExporter
) -> None:
    with grpc.insecure_channel(stack.address) as channel:
        reply = pb_grpc.MemoryServiceStub(channel).WriteMemories(
            pb.WriteMemoriesRequest(memories=[memory_input(ns, "written with no traceparent")]), metadata=stack.client.metadata
        )
    trace_hex = reply.results[0].memory.source.trace_id
    assert len(trace_hex) == 32
    found = trace_of(spans, int(trace_hex, 16), has(WRITE))
    server = one(found, WRITE, "SERVER")
    assert server["parent_span_id"] is None


def test_no_span_carries_memory_content_or_query_text(stack: Stack, ns: str, spans: InMemorySpanExporter) -> None:
    secret = f"zq{uuid.uuid4().hex[:10]}"
    content = f"The vault combination is {secret}"
    query = f"what opens the vault {uuid.uuid4().hex[:10]}"
    before = len(spans.get_finished_spans())
    with test_tracer.start_as_current_span("test.privacy") as root:
        stack.client.write([memory_input(ns, content, tags=["privacy"])], wait_indexed=True)
        assert stack.client.search(query, [ns]).hits
        assert stack.client.search(secret, [ns]).hits
    trace_of(spans, root.get_span_context().trace_id, has("test.privacy", "embedding.embed", "milvus.search_keyword"))
    produced = [span_to_dict(s) for s in spans.get_finished_spans()[before:]]  # the request's trace and the indexer's
    assert any(s["name"] == "milvus.upsert" for s in produced)  # the indexer's spans are checked too
    text = json.dumps(produced, ensure_ascii=False)
    for needle in (secret, content, query, "vault"):
        assert needle not in text


# -- context across the embedding batcher ------------------------------------------------------------


class _FakeModel:
    model_id = "fake-model"
    dimension = 4

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 4), dtype=np.float32)

    def close(self) -> None:
        pass


def test_embedding_span_is_a_child_of_each_callers_span(spans: InMemorySpanExporter) -> None:
    embedder = BatchingEmbedder(_FakeModel(), max_batch=8, max_wait_ms=5)
    roots: dict[str, trace.Span] = {}

    def call(name: str) -> None:
        with test_tracer.start_as_current_span(name) as root:
            roots[name] = root
            embedder.embed([f"text of {name}", "another"])

    try:
        threads = [threading.Thread(target=call, args=(f"caller-{i}",)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        embedder.close()
    for name, root in roots.items():
        found = trace_of(spans, root.get_span_context().trace_id, has(name, "embedding.embed"))
        embed = one(found, "embedding.embed")
        assert embed["parent_span_id"] == one(found, name)["span_id"]
        assert embed["attributes"]["memhub.embedding.texts"] == 2
        assert embed["attributes"]["memhub.embedding.batch_texts"] >= 2
        assert embed["attributes"]["gen_ai.request.model"] == "fake-model"


def test_caller_trace_id_falls_back_to_the_traceparent_header_without_a_span() -> None:
    header = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
    assert current_trace_id(header) == "4bf92f3577b34da6a3ce929d0e0e4736"
    with test_tracer.start_as_current_span("test.current") as span:
        assert current_trace_id(header) == hex_id(span.get_span_context().trace_id)


# -- configuration -------------------------------------------------------------------------------------


def test_from_env_defaults_and_choices(tmp_path: Path) -> None:
    assert TelemetryConfig.from_env({}, "svc") == TelemetryConfig("svc", "none")
    assert TelemetryConfig.from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}, "svc").exporter == "otlp"
    assert TelemetryConfig.from_env({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "collector:4317"}, "svc").exporter == "otlp"
    assert TelemetryConfig.from_env({"MEMHUB_TRACES_EXPORTER": "Console"}, "svc").exporter == "console"
    env = {"MEMHUB_TRACES_EXPORTER": "file", "MEMHUB_TRACES_FILE": str(tmp_path / "t.jsonl")}
    assert TelemetryConfig.from_env(env, "svc") == TelemetryConfig("svc", "file", tmp_path / "t.jsonl")
    both = {"MEMHUB_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}
    assert TelemetryConfig.from_env(both, "svc").exporter == "none"
    disabled = {"MEMHUB_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}
    assert TelemetryConfig.from_env(disabled, "svc").exporter == "none"
    assert TelemetryConfig.from_env({"OTEL_SERVICE_NAME": "hub-eu"}, "svc").service_name == "hub-eu"


OTLP = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}


@pytest.mark.parametrize(
    ("env", "variable"),
    [
        ({"MEMHUB_TRACES_EXPORTER": "jaeger"}, "MEMHUB_TRACES_EXPORTER"),
        ({"MEMHUB_TRACES_EXPORTER": "file"}, "MEMHUB_TRACES_FILE"),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "ftp://c:4317"}, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "collector"}, "OTEL_EXPORTER_OTLP_ENDPOINT"),
        ({**OTLP, "OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}, "OTEL_EXPORTER_OTLP_TIMEOUT"),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_COMPRESSION": "zip"},
            "OTEL_EXPORTER_OTLP_COMPRESSION",
        ),
        ({**OTLP, "OTEL_EXPORTER_OTLP_INSECURE": "yes"}, "OTEL_EXPORTER_OTLP_INSECURE"),
    ],
)
def test_from_env_names_the_bad_variable(env: dict[str, str], variable: str) -> None:
    with pytest.raises(StartupError, match=variable):
        TelemetryConfig.from_env(env, "svc")


def test_bad_otlp_headers_are_refused_without_echoing_them() -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_HEADERS": "api-key-s3cr3t"}
    with pytest.raises(StartupError, match="OTEL_EXPORTER_OTLP_HEADERS") as excinfo:
        TelemetryConfig.from_env(env, "svc")
    assert "s3cr3t" not in str(excinfo.value)


def test_unwritable_trace_file_is_a_startup_error(tmp_path: Path) -> None:
    with pytest.raises(StartupError, match="MEMHUB_TRACES_FILE"):
        telemetry.setup_tracing(TelemetryConfig("svc", "file", tmp_path / "missing-dir" / "t.jsonl"))
    telemetry.shutdown_tracing()


def test_setup_twice_keeps_the_first_configuration(tmp_path: Path, spans: InMemorySpanExporter, caplog) -> None:  # noqa: ANN001
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    telemetry.setup_tracing(TelemetryConfig("memhub-tests", "file", first))
    # A test that ran before in this process may have installed the provider under another service name, which
    # the first call rightly warns about; what is checked is the second, identical call.
    caplog.clear()
    try:
        telemetry.setup_tracing(TelemetryConfig("memhub-tests", "file", first))  # the same: silently nothing
        assert not caplog.records
        with caplog.at_level(logging.WARNING, logger="memhub.telemetry"):
            telemetry.setup_tracing(TelemetryConfig("memhub-tests", "file", second))
        assert "already set up" in caplog.text
        with test_tracer.start_as_current_span("test.twice") as span:
            pass
    finally:
        telemetry.shutdown_tracing()
    trace_hex = hex_id(span.get_span_context().trace_id)
    assert [s["name"] for s in read_spans_file(first) if s["trace_id"] == trace_hex] == ["test.twice"]
    assert not second.exists()
    # After shutdown the exporter is detached, and tracing may be set up again.
    with test_tracer.start_as_current_span("test.after") as span:
        pass
    assert not any(s["name"] == "test.after" for s in read_spans_file(first))
    telemetry.setup_tracing(TelemetryConfig("memhub-tests", "file", second))
    try:
        with test_tracer.start_as_current_span("test.again"):
            pass
    finally:
        telemetry.shutdown_tracing()
    assert [s["name"] for s in read_spans_file(second) if s["name"].startswith("test.")] == ["test.again"]


# -- the file exporter -------------------------------------------------------------------------------------


def test_file_exporter_writes_one_json_object_per_span(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    provider = TracerProvider(shutdown_on_exit=False)  # a private provider: the global one is not touched
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesSpanExporter(path)))
    local = provider.get_tracer("tests.file")
    with local.start_as_current_span("outer", kind=trace.SpanKind.SERVER, attributes={"memhub.policy_ids": ["a", "b"]}) as outer:
        with local.start_as_current_span("inner", attributes={"n": 3}) as inner:
            inner.set_status(trace.StatusCode.ERROR, "PERMISSION_DENIED: nope")
            inner.add_event("model.start", {"k": "v"})
    provider.shutdown()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert first["name"] == "inner" and second["name"] == "outer"
    assert first["trace_id"] == second["trace_id"] == hex_id(outer.get_span_context().trace_id)
    assert first["parent_span_id"] == second["span_id"] == format(outer.get_span_context().span_id, "016x")
    assert second["parent_span_id"] is None and second["kind"] == "SERVER" and first["kind"] == "INTERNAL"
    assert second["attributes"] == {"memhub.policy_ids": ["a", "b"]} and first["attributes"] == {"n": 3}
    assert first["status"] == {"code": "ERROR", "description": "PERMISSION_DENIED: nope"}
    assert first["events"][0]["name"] == "model.start" and first["events"][0]["attributes"] == {"k": "v"}
    assert first["start_time_unix_nano"] <= first["end_time_unix_nano"]
    assert (path.stat().st_mode & 0o777) == 0o600
    # A reader racing a writer skips a half-written last line.
    with path.open("a", encoding="utf-8") as f:
        f.write('{"name": "half')
    assert [s["name"] for s in read_spans_file(path)] == ["inner", "outer"]


_SUBPROCESS = textwrap.dedent(
    """
    import sys
    from memhub import telemetry
    telemetry.setup_tracing(telemetry.TelemetryConfig.from_env(None, "probe"))
    tracer = telemetry.tracer("probe")
    with tracer.start_as_current_span("outer", attributes={"who": "child"}):
        with tracer.start_as_current_span("inner"):
            pass
    if sys.argv[1] == "shutdown":
        telemetry.shutdown_tracing()
    """
)


@pytest.mark.parametrize("ending", ["shutdown", "exit"])
def test_file_exporter_set_up_from_the_environment_in_another_process(tmp_path: Path, ending: str) -> None:
    path = tmp_path / "child.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MEMHUB_TRACES"))}
    env.update({"MEMHUB_TRACES_EXPORTER": "file", "MEMHUB_TRACES_FILE": str(path), "PYTHONPATH": str(REPO)})
    subprocess.run([sys.executable, "-c", _SUBPROCESS, ending], env=env, cwd=REPO, check=True, timeout=120)
    found = {s["name"]: s for s in read_spans_file(path)}
    assert set(found) == {"outer", "inner"}
    assert found["inner"]["parent_span_id"] == found["outer"]["span_id"]
    assert found["inner"]["trace_id"] == found["outer"]["trace_id"]
    assert found["outer"]["service_name"] == "probe" and found["outer"]["attributes"] == {"who": "child"}


def test_a_client_process_without_tracing_still_passes_the_context_on(stack: Stack, spans: InMemorySpanExporter) -> None:
    trace_hex, parent_hex = uuid.uuid4().hex, uuid.uuid4().hex[:16]
    script = textwrap.dedent(
        f"""
        from memhub.client import MemhubClient
        with MemhubClient({stack.address!r}, token={stack.token("tester")!r}) as c:
            assert c.healthy()
            c.search("no trace context here", ["nowhere"])
            c.metadata = (*c.metadata, ("traceparent", "00-{trace_hex}-{parent_hex}-01"))
            c.search("anything", ["nowhere"])
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "MEMHUB_TRACES"))}
    env["PYTHONPATH"] = str(REPO)
    subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO, check=True, timeout=120)
    found = trace_of(spans, int(trace_hex, 16), has(SEARCH))
    server = one(found, SEARCH, "SERVER")
    assert server["parent_span_id"] == parent_hex  # the no-op client span passes the caller's context through unchanged
    assert not any(s["name"] == SEARCH and s["kind"] == "CLIENT" for s in found)  # nothing recorded in the untraced process
