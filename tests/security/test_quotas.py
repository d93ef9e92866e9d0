"""Quotas: namespaces per agent (issue 10 item 3) and storage per namespace (item 4).

Enforced by the memories triggers inside the write's transaction, after the
hub checked the write permission: exact under concurrent writers, nothing
stored by a refused write, and a caller that may not write somewhere learns
nothing about how full it is.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

import grpc
import pytest
from conftest import Stack, rpc_error
from google.protobuf.timestamp_pb2 import Timestamp

from memhub.client import MemhubClient, memory_input
from memhub.config import CallLimit, LimitsConfig
from memhub.db import namespace_usage
from memhub.v1 import admin_pb2
from security.hubs import SpecialStack, special_hub, tally

QUOTAS = LimitsConfig(
    agent=CallLimit(concurrent=8),
    namespaces_per_agent=3,
    namespace_max_memories=5,
    namespace_max_bytes=2_000,
)


@pytest.fixture(scope="module")
def quota_hub(tmp_path_factory: pytest.TempPathFactory, external_pg_admin_url: str) -> Iterator[SpecialStack]:
    with special_hub(tmp_path_factory.mktemp("quotas"), external_pg_admin_url, limits=QUOTAS) as stack:
        yield stack


def _exhausted(call) -> str:  # noqa: ANN001
    with pytest.raises(grpc.RpcError) as exc:
        call()
    code, details = rpc_error(exc)
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, details
    return details


def _agent(stack: Stack) -> MemhubClient:
    return stack.client_as(f"agent-{uuid.uuid4().hex[:8]}")


@pytest.fixture
def writer(quota_hub: SpecialStack) -> Iterator[MemhubClient]:
    """An agent of its own for each test: every new namespace counts against its creator's quota."""
    with _agent(quota_hub) as client:
        yield client


def test_an_agent_may_create_only_its_quota_of_namespaces(quota_hub: SpecialStack, ns: str) -> None:
    with _agent(quota_hub) as agent, _agent(quota_hub) as other:
        agent.write([memory_input(f"{ns}/a", "one"), memory_input(f"{ns}/b", "two")])
        agent.write([memory_input(f"{ns}/c", "three")])
        details = _exhausted(lambda: agent.write([memory_input(f"{ns}/d", "four"), memory_input(f"{ns}/a", "five")]))
        assert details.startswith("namespace quota: an agent may create at most 3 namespaces")
        assert "MEMHUB_NAMESPACES_PER_AGENT" in details
        assert [m.content for m in agent.list([f"{ns}/a"]).memories] == ["one"]  # the refused batch stored nothing
        agent.write([memory_input(f"{ns}/a", "existing namespaces still take writes")])
        other.write([memory_input(f"{ns}/d", "another agent has its own quota")])


def test_the_namespace_quota_is_exact_under_concurrent_writes(quota_hub: SpecialStack, ns: str) -> None:
    with _agent(quota_hub) as agent, ThreadPoolExecutor(8) as pool:

        def create(i: int) -> bool:
            try:
                agent.write([memory_input(f"{ns}/race{i}", f"racer {i}")])
                return True
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, exc.details()
                return False

        assert sum(pool.map(create, range(8))) == 3


def test_a_namespace_holds_at_most_its_quota_of_memories(writer: MemhubClient, ns: str) -> None:
    client = writer
    client.write([memory_input(ns, f"memory {i}") for i in range(5)])
    details = _exhausted(lambda: client.write([memory_input(ns, "the sixth")]))
    assert details == (
        f"storage quota: namespace '{ns}' may hold at most 5 memories; forget some of its memories, "
        "or ask an operator to raise MEMHUB_NAMESPACE_MAX_MEMORIES"
    )
    client.write([memory_input(ns, "memory 0")])  # an exact duplicate adds nothing: still accepted
    first = client.list([ns], page_size=1).memories[0]
    client.forget(ids=[first.id], reason="make room")
    client.write([memory_input(ns, "the sixth, after a forget")])
    assert len(client.list([ns]).memories) == 5


def test_a_namespace_holds_at_most_its_quota_of_bytes(writer: MemhubClient, ns: str) -> None:
    client = writer
    client.write([memory_input(ns, "x" * 1_500)])
    details = _exhausted(lambda: client.write([memory_input(ns, "é" * 300)]))  # 600 bytes of UTF-8
    assert "may hold at most 2000 bytes of content" in details and "MEMHUB_NAMESPACE_MAX_BYTES" in details
    client.write([memory_input(ns, "y" * 400)])


def test_a_namespace_filled_by_one_writer_refuses_the_next_without_naming_anyone(
    quota_hub: SpecialStack, writer: MemhubClient, ns: str
) -> None:
    """Issue 22: the storage quota is the namespace's, shared by all its writers (not split per writer: see
    memhub/core/quotas.py); another writer's refusal names the quota and its limit, and nothing about who filled it."""
    writer.write([memory_input(ns, f"filler memory {i}") for i in range(5)])
    with _agent(quota_hub) as other:
        details = _exhausted(lambda: other.write([memory_input(ns, "another writer's first")]))
    assert details == (
        f"storage quota: namespace '{ns}' may hold at most 5 memories; forget some of its memories, "
        "or ask an operator to raise MEMHUB_NAMESPACE_MAX_MEMORIES"
    )


def test_usage_is_exact_after_writes_forgets_and_folding(quota_hub: SpecialStack, ns: str) -> None:
    client = quota_hub.client_as("usage-writer")
    ids = [r.memory.id for r in client.write([memory_input(ns, f"{i}" * 10) for i in range(4)]).results]
    client.forget(ids=ids[:1], reason="erased content no longer counts")
    with quota_hub.hub.engine.connect() as conn:
        before = namespace_usage.usage(conn, ns)
    quota_hub.hub.usage_folder.fold()
    with quota_hub.hub.engine.connect() as conn:
        after = namespace_usage.usage(conn, ns)
    assert before == after
    assert (after.memories, after.bytes, after.created_by) == (3, 30, "usage-writer")


def test_a_caller_without_write_permission_learns_nothing_about_fullness(
    quota_hub: SpecialStack, writer: MemhubClient, ns: str
) -> None:
    writer.write([memory_input(ns, f"full {i}") for i in range(5)])
    with MemhubClient(quota_hub.address, token=quota_hub.token("outsider", groups=())) as outsider:
        with pytest.raises(grpc.RpcError) as exc:
            outsider.write([memory_input(ns, "let me in")])
    assert exc.value.code() == grpc.StatusCode.PERMISSION_DENIED


def test_quota_refusals_are_audited(quota_hub: SpecialStack, ns: str) -> None:
    quota_hub.hub.events.flush()
    quota_hub.hub.audit.flush()
    since = Timestamp()
    since.FromDatetime(datetime.now(timezone.utc))
    writer = quota_hub.client_as("quota-auditee")
    writer.write([memory_input(ns, f"quota memory {i}") for i in range(5)])
    for _ in range(2):
        _exhausted(lambda: writer.write([memory_input(ns, "one too many")]))
    quota_hub.hub.events.flush()
    quota_hub.hub.audit.flush()
    rows = quota_hub.client.call_admin(
        "QueryAuditLog", admin_pb2.QueryAuditLogRequest(action="quota", agent_id="quota-auditee", since=since)
    ).entries
    assert tally(rows) == {"namespace-memories": 2}


def test_admins_see_a_namespaces_use_against_its_quota(quota_hub: SpecialStack, writer: MemhubClient, ns: str) -> None:
    writer.write([memory_input(ns, "abc"), memory_input(ns, "défg")])
    report = quota_hub.client.call_admin("GetLimits", admin_pb2.GetLimitsRequest(namespace=ns))
    assert (report.namespace.memories, report.namespace.bytes, report.namespace.exists) == (2, 8, True)
    assert report.namespace.created_by.startswith("agent-")
    assert (report.namespace_max_memories, report.namespace_max_bytes, report.namespaces_per_agent) == (5, 2000, 3)
    missing = quota_hub.client.call_admin("GetLimits", admin_pb2.GetLimitsRequest(namespace=f"{ns}/none"))
    assert not missing.namespace.exists and missing.namespace.memories == 0
