"""Identities stay out of telemetry: no agent id, and no agents/<id> namespace, in any span.

Trace backends are usually open to more people than the audit log, and a
span is kept wherever the operator ships it. What a span may carry is listed
in docs/operating/tracing.md; the hub's own request id on the RPC span
(`memhub.request_id`) leads from a trace to the audit rows, which hold the
identities.

The spans checked are all those this process records for the calls below:
the client's (the Python client, as the MCP bridge uses it) and the hub's
(the session's fleet hub serves in this process). Real hub, real tokens.
"""

from __future__ import annotations

import json
import time
import uuid

import grpc
import pytest
from conftest import Fleet
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memhub.client import memory_input
from memhub.span_privacy import mask_namespace, safe_description
from memhub.telemetry import span_to_dict
from memhub.v1 import admin_pb2
from memhub.v1 import memory_pb2 as pb

tracer = trace.get_tracer("tests.security.telemetry")


def spans_of(exporter: InMemorySpanExporter, trace_id: int, rpcs: int) -> list[dict]:
    """The finished spans of one trace, once its ``rpcs`` server spans have ended (they end after the reply)."""
    deadline = time.monotonic() + 10
    while True:
        found = [span_to_dict(s) for s in exporter.get_finished_spans() if s.context.trace_id == trace_id]
        if sum(s["kind"] == "SERVER" for s in found) >= rpcs or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def test_no_span_names_an_agent_or_an_agent_namespace(fleet: Fleet, spans: InMemorySpanExporter) -> None:
    # Agent ids made for this test, so a match cannot come from anything else in the trace.
    mallory, victim = f"mallory{uuid.uuid4().hex[:8]}", f"victim{uuid.uuid4().hex[:8]}"
    own, foreign = f"agents/{mallory}/notes", f"agents/{victim}/diary"
    with fleet.raw(fleet.token(victim)) as victim_client:
        victim_memory = victim_client.write([memory_input(foreign, "a private entry")]).results[0].memory
    calls = 0
    with fleet.raw(fleet.token(mallory)) as client, tracer.start_as_current_span("test.identities") as root:

        def attempt(call) -> None:  # noqa: ANN001
            nonlocal calls
            calls += 1
            try:
                call()
            except grpc.RpcError:
                pass

        attempt(lambda: client.write([memory_input(own, "my own note")]))  # allowed
        attempt(lambda: client.write([memory_input(foreign, "planted")]))  # PERMISSION_DENIED
        attempt(lambda: client.search("private entry", [foreign]))  # nothing readable
        attempt(lambda: client.search("note", []))  # every readable namespace
        attempt(lambda: client.get(victim_memory.id))  # NOT_FOUND
        attempt(lambda: client.list([own]))
        attempt(lambda: client.forget(ids=[victim_memory.id], reason="cleanup"))  # NOT_FOUND
        attempt(lambda: client.forget(filter=pb.ForgetFilter(namespace=foreign), reason="cleanup"))
        attempt(lambda: client.call_admin("GetPolicyInfo", admin_pb2.GetPolicyInfoRequest()))  # PERMISSION_DENIED
        attempt(lambda: client.write([memory_input("Agents/Bad Name", "x")]))  # INVALID_ARGUMENT, echoes input
    found = spans_of(spans, root.get_span_context().trace_id, calls)
    assert sum(s["kind"] == "SERVER" for s in found) == calls
    assert any(s["name"] == "policy.authorize" for s in found)
    text = json.dumps(found, ensure_ascii=False)
    for identity in (mallory, victim):
        assert identity not in text, [s for s in found if identity in json.dumps(s)][:3]
    # Namespaces are named with the agent's segment masked, so a trace still says which kind of namespace.
    assert "agents/*" in text
    # Each RPC span carries the hub's request id, which leads to the audit rows.
    assert all(s["attributes"].get("memhub.request_id") for s in found if s["kind"] == "SERVER")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("agents/alice", "agents/*"),
        ("agents/alice/notes/2026", "agents/*/notes/2026"),
        ("agents", "agents"),
        ("agents/", "agents/"),
        ("teams/agents/alice", "teams/agents/alice"),  # only the agents/ root is an agent's own space
        ("teams/support", "teams/support"),
    ],
)
def test_agent_namespaces_are_masked_others_kept(value: str, shown: str) -> None:
    assert mask_namespace(value) == shown


@pytest.mark.parametrize(
    ("description", "kept"),
    [
        ("PERMISSION_DENIED: permission denied: agent 'mallory' may not write", "PERMISSION_DENIED"),
        ("RpcError: <_InactiveRpcError of RPC that terminated with details = 'agent x'>", "RpcError"),
        ("StatusCode.NOT_FOUND:memory 1 not found", "StatusCode.NOT_FOUND"),
        ("agent 'mallory' may not write", None),  # no code in front: nothing is kept
        (None, None),
    ],
)
def test_status_descriptions_keep_only_their_code(description: str | None, kept: str | None) -> None:
    assert safe_description(description) == kept
