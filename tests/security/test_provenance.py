"""Provenance a caller cannot forge: the hub's own request id beside the caller-supplied trace id.

A client's `traceparent` header decides the trace id the hub records (in a
memory's source and in audit rows): tracing must continue the caller's
trace. So the trace id proves nothing; every call also gets a hub-generated
request id, and the trace id is labelled as the caller's when it came from
outside. Real hub over gRPC, raw channels with hand-made headers.
"""

from __future__ import annotations

import uuid

import grpc
from conftest import Fleet

from memhub.client import memory_input
from memhub.v1 import admin_pb2
from memhub.v1 import memory_pb2 as pb
from memhub.v1 import memory_pb2_grpc as pb_grpc


def write_raw(fleet: Fleet, agent: str, content: str, traceparent: str | None) -> pb.Memory:
    """A write from a plain channel (no tracing in the client): the only trace context is the header we send."""
    metadata = [("authorization", f"Bearer {fleet.token(agent)}")]
    if traceparent is not None:
        metadata.append(("traceparent", traceparent))
    with grpc.insecure_channel(fleet.address) as channel:
        stub = pb_grpc.MemoryServiceStub(channel)
        request = pb.WriteMemoriesRequest(memories=[memory_input(f"agents/{agent}/notes", content)])
        return stub.WriteMemories(request, metadata=metadata, timeout=30).results[0].memory


def audit_rows(fleet: Fleet, agent: str) -> list[admin_pb2.AuditEntry]:
    fleet.hub.audit.flush()
    with fleet.client("root") as admin:
        return list(admin.call_admin("QueryAuditLog", admin_pb2.QueryAuditLogRequest(agent_id=agent, page_size=1000)).entries)


def is_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


def test_a_chosen_trace_id_is_recorded_as_the_callers_beside_the_hubs_own_request_id(fleet: Fleet) -> None:
    chosen = uuid.uuid4().hex
    # Two agents send the same traceparent: the trace id can be copied, the hub's request id cannot.
    header = f"00-{chosen}-{uuid.uuid4().hex[:16]}-01"
    alice = write_raw(fleet, "alice", f"alice's note {uuid.uuid4().hex}", header)
    eve = write_raw(fleet, "eve", f"eve's note {uuid.uuid4().hex}", header)

    for memory in (alice, eve):
        assert memory.source.trace_id == chosen
        assert memory.source.trace_id_from_caller
        assert is_uuid(memory.source.hub_request_id)
    assert alice.source.hub_request_id != eve.source.hub_request_id

    # The audit rows of the write carry the same pair, and the hub's id joins them to the memory.
    rows = [r for r in audit_rows(fleet, "eve") if r.hub_request_id == eve.source.hub_request_id]
    assert rows and all(r.action in ("write", "read") for r in rows)
    assert {(r.trace_id, r.trace_id_from_caller) for r in rows} == {(chosen, True)}
    assert any(r.action == "write" and r.decision == admin_pb2.DECISION_ALLOW for r in rows)


def test_a_trace_the_hub_started_is_not_labelled_as_the_callers(fleet: Fleet) -> None:
    for header in (None, "not-a-traceparent"):
        memory = write_raw(fleet, "bob", f"bob's note {uuid.uuid4().hex}", header)
        assert len(memory.source.trace_id) in (0, 32)  # 0: tracing is off in this process, so nothing was traced
        assert not memory.source.trace_id_from_caller
        assert is_uuid(memory.source.hub_request_id)
        rows = [r for r in audit_rows(fleet, "bob") if r.hub_request_id == memory.source.hub_request_id]
        assert rows and all(r.trace_id == memory.source.trace_id and not r.trace_id_from_caller for r in rows)


def test_every_call_gets_its_own_hub_request_id(fleet: Fleet) -> None:
    header = f"00-{uuid.uuid4().hex}-{uuid.uuid4().hex[:16]}-01"
    ids = {write_raw(fleet, "alice", f"note {i} {uuid.uuid4().hex}", header).source.hub_request_id for i in range(5)}
    assert len(ids) == 5
