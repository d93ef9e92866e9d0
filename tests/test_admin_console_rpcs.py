"""The admin RPCs the web console needs: CheckAccess, GetIndexHealth, namespace usage, audit filters by policy and call.

Run against the shipped policies (the fleet: `root` is an admin, the others are not) on a real hub.
"""

from __future__ import annotations

import uuid

import grpc
import pytest
from conftest import Fleet, Stack, eventually, rpc_error
from sqlalchemy import insert, text

from memhub.client import memory_input
from memhub.db.schema import outbox
from memhub.v1 import admin_pb2 as apb


def _check(fleet: Fleet, agent: str, action: str, namespace: str, groups: tuple[str, ...] = (), caller: str = "root"):  # noqa: ANN202
    with fleet.client(caller) as client:
        return client.call_admin(
            "CheckAccess", apb.CheckAccessRequest(agent_id=agent, groups=list(groups), action=action, namespace=namespace)
        )


def test_check_access_answers_what_the_engine_decides_with_the_deciding_policies(fleet: Fleet) -> None:
    allowed = _check(fleet, "sue", "read", "teams/support/tickets", ("support",))
    assert allowed.allowed and list(allowed.policy_ids) == ["fleet.support-team-shares-support"]
    assert allowed.policy_version == fleet.hub.policies.current().version

    forbidden = _check(fleet, "sue", "read", "teams/support/secrets/keys", ("support",))
    assert not forbidden.allowed and list(forbidden.policy_ids) == ["fleet.support-secrets-leads-only"]

    default_deny = _check(fleet, "eve", "write", "teams/support")
    assert not default_deny.allowed and list(default_deny.policy_ids) == []

    admin = _check(fleet, "ops", "admin", "", ("admins",))
    assert admin.allowed and list(admin.policy_ids) == ["default.admins-administer-hub"]


def test_check_access_performs_nothing_and_is_audited_as_a_check(fleet: Fleet) -> None:
    ns = f"agents/eve/check-{uuid.uuid4().hex[:8]}"
    answer = _check(fleet, "eve", "write", ns)
    assert answer.allowed  # eve owns agents/eve/**, but nothing was written
    with fleet.client("root") as root:
        assert root.list([ns]).memories == []
        names = root.call_admin("ListNamespaces", apb.ListNamespacesRequest(under=ns)).namespaces
        assert list(names) == []

        def audited() -> bool:
            entries = root.call_admin("QueryAuditLog", apb.QueryAuditLogRequest(action="check", namespace=ns)).entries
            return len(entries) == 1

        eventually(audited, "the check is in the audit log")
        (entry,) = root.call_admin("QueryAuditLog", apb.QueryAuditLogRequest(action="check", namespace=ns)).entries
    assert entry.agent_id == "root" and entry.rpc.endswith("/CheckAccess")
    assert dict(entry.detail) == {"agent": "eve", "groups": "", "action": "write", "answer": "allow"}
    assert list(entry.policy_ids) == ["default.agent-owns-own-namespace"]


def test_check_access_is_admin_only(fleet: Fleet) -> None:
    with pytest.raises(grpc.RpcError) as info:
        _check(fleet, "eve", "read", "teams/support", caller="alice")
    code, details = rpc_error(info)
    assert code == grpc.StatusCode.PERMISSION_DENIED and "admin" in details


@pytest.mark.parametrize(
    ("request_fields", "field"),
    [
        ({"agent_id": "", "action": "read", "namespace": "a"}, "agent_id"),
        ({"agent_id": "x" * 129, "action": "read", "namespace": "a"}, "agent_id"),
        ({"agent_id": "a\nb", "action": "read", "namespace": "a"}, "agent_id"),
        ({"agent_id": "a", "action": "", "namespace": "a"}, "action"),
        ({"agent_id": "a", "action": "fly", "namespace": "a"}, "action"),
        ({"agent_id": "a", "action": "read", "namespace": ""}, "namespace"),
        ({"agent_id": "a", "action": "admin", "namespace": "teams"}, "namespace"),
        ({"agent_id": "a", "action": "read", "namespace": "Teams"}, "namespace"),
        ({"agent_id": "a", "action": "read", "namespace": "a", "groups": ["g"] * 33}, "groups"),
        ({"agent_id": "a", "action": "read", "namespace": "a", "groups": [""]}, "groups[0]"),
    ],
)
def test_check_access_refuses_bad_fields_by_name(fleet: Fleet, request_fields: dict, field: str) -> None:
    with fleet.client("root") as root, pytest.raises(grpc.RpcError) as info:
        root.call_admin("CheckAccess", apb.CheckAccessRequest(**request_fields))
    code, details = rpc_error(info)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith(f"{field}:"), details


def test_namespace_usage_counts_each_namespace_of_the_page(fleet: Fleet) -> None:
    base = f"agents/root/usage-{uuid.uuid4().hex[:8]}"
    with fleet.client("root") as root:
        root.write([memory_input(f"{base}/a", f"fact number {i} about the usage page", type="fact") for i in range(3)])
        root.write([memory_input(f"{base}/b", "a single note stored in the second namespace", type="note")])
        reply = root.call_admin("ListNamespaces", apb.ListNamespacesRequest(under=base, with_usage=True))
        plain = root.call_admin("ListNamespaces", apb.ListNamespacesRequest(under=base))
    assert list(reply.namespaces) == [f"{base}/a", f"{base}/b"]
    assert [(u.namespace, u.memories, u.created_by, u.exists) for u in reply.usage] == [
        (f"{base}/a", 3, "root", True),
        (f"{base}/b", 1, "root", True),
    ]
    assert reply.usage[1].bytes == len(b"a single note stored in the second namespace")
    assert list(plain.usage) == []  # only when asked


def test_audit_log_filters_by_policy_and_by_the_hub_request_id_of_a_write(fleet: Fleet) -> None:
    ns = f"teams/support/console-{uuid.uuid4().hex[:8]}"
    with fleet.client("alice") as alice:
        written = alice.write([memory_input(ns, "The printer on floor 3 needs toner every Monday", type="fact")])
    request_id = written.results[0].memory.source.hub_request_id
    assert request_id
    with fleet.client("root") as root:

        def entries(**filters: str) -> list:
            return list(root.call_admin("QueryAuditLog", apb.QueryAuditLogRequest(**filters)).entries)

        eventually(lambda: any(e.action == "write" for e in entries(hub_request_id=request_id)), "the write is audited")
        by_call = entries(hub_request_id=request_id)
        # The write's own decisions (write, and read for the duplicate check), nothing from other calls.
        assert ("write", ns, "alice") in {(e.action, e.namespace, e.agent_id) for e in by_call}
        assert {e.hub_request_id for e in by_call} == {request_id} and {e.namespace for e in by_call} == {ns}
        by_policy = entries(policy_id="fleet.support-team-shares-support", namespace=ns)
        assert by_policy and all("fleet.support-team-shares-support" in e.policy_ids for e in by_policy)
        assert entries(policy_id="fleet.auditors-never-modify", namespace=ns) == []
        for bad, field in (({"policy_id": "no spaces"}, "policy_id"), ({"hub_request_id": "nope"}, "hub_request_id")):
            with pytest.raises(grpc.RpcError) as info:
                entries(**bad)
            code, details = rpc_error(info)
            assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith(f"{field}:")


def test_index_health_reports_the_outbox_and_the_index_state(stack: Stack) -> None:
    report = stack.client.call_admin("GetIndexHealth", apb.GetIndexHealthRequest())
    assert report.index_ok and report.database_ok and report.indexer_enabled
    assert report.embedding_model == stack.hub.embedder.model_id
    assert report.collection == stack.hub.config.store.milvus_collection
    assert report.outbox_depth >= 0 and not report.outbox_depth_capped

    # A queued row that failed once: the report shows it waiting, retrying, its error and the lag.
    memory_id = str(uuid.uuid4())
    with stack.hub.engine.begin() as conn:
        row_id = conn.execute(
            insert(outbox)
            .values(
                memory_id=memory_id,
                attempts=2,
                last_error="milvus said no (test)",
                created_at=text("now() - interval '90 seconds'"),
                available_at=text("now() + interval '1 hour'"),
            )
            .returning(outbox.c.id)
        ).scalar_one()
    try:
        report = stack.client.call_admin("GetIndexHealth", apb.GetIndexHealthRequest())
        assert report.outbox_depth >= 1 and report.outbox_retrying >= 1
        assert report.last_error == "milvus said no (test)" and report.last_error_memory_id == memory_id
        assert report.last_error_attempts == 2
        assert report.lag_seconds >= 89 and report.HasField("oldest_queued_at")
    finally:
        with stack.hub.engine.begin() as conn:
            conn.execute(outbox.delete().where(outbox.c.id == row_id))
