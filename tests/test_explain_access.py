"""AdminService.ExplainAccess over gRPC on the fleet hub (policies/default.cedar + examples/fleet.cedar): what the
caller's own policies let it do under some namespaces, the policies that decided, admin only, audited, bounded."""

from __future__ import annotations

import uuid
from datetime import timedelta

import grpc
import pytest
from conftest import Fleet, rpc_error

from memhub.auth import issue_token
from memhub.client import MemhubClient, memory_input
from memhub.core import access_report
from memhub.v1 import admin_pb2 as apb


def _as(fleet: Fleet, agent: str, groups: tuple[str, ...]) -> MemhubClient:
    return MemhubClient(
        fleet.address, token=issue_token(fleet.secret, agent_id=agent, groups=list(groups), ttl=timedelta(hours=1)).token
    )


@pytest.fixture
def area(fleet: Fleet) -> str:
    """teams/support/x<id> with two namespaces below it and one in the support secrets' twin."""
    root = f"teams/support/x{uuid.uuid4().hex[:8]}"
    with fleet.client("dave") as dave:
        dave.write(
            [memory_input(f"{root}/a", "Refunds above 500 EUR need a lead"), memory_input(f"{root}/b", "Calls are logged")]
        )
    return root


def _explain(client: MemhubClient, namespaces: list[str], action: str = "") -> apb.ExplainAccessResponse:
    return client.call_admin("ExplainAccess", apb.ExplainAccessRequest(namespaces=namespaces, action=action))


def test_counts_and_deciding_policies_for_the_callers_own_rights(fleet: Fleet, area: str) -> None:
    with _as(fleet, f"ops-{uuid.uuid4().hex[:6]}", ("admins",)) as admin_only:
        nothing = _explain(admin_only, [area])
    assert (nothing.action, nothing.namespaces, nothing.allowed, nothing.default_denied, nothing.forbidden) == (
        "read",
        2,
        0,
        2,
        0,
    )
    assert list(nothing.allowing_policy_ids) == [] and not nothing.capped and len(nothing.policy_version) == 64
    with _as(fleet, f"ops-{uuid.uuid4().hex[:6]}", ("admins", "auditors")) as operator:
        reads = _explain(operator, [area])
        writes = _explain(operator, [area], "write")
        secrets = _explain(operator, ["teams/support/secrets"])
    assert (reads.namespaces, reads.allowed) == (2, 2) and list(reads.allowing_policy_ids) == ["fleet.auditors-read-everything"]
    assert (writes.allowed, writes.forbidden, list(writes.forbidding_policy_ids)) == (0, 2, ["fleet.auditors-never-modify"])
    if secrets.namespaces:  # other tests write there; when they have, the forbid is what denies them all
        assert secrets.allowed == 0 and list(secrets.forbidding_policy_ids) == ["fleet.support-secrets-leads-only"]


def test_it_is_an_admin_call_audited_as_a_check(fleet: Fleet, area: str) -> None:
    with fleet.client("alice") as alice, pytest.raises(grpc.RpcError) as refused:
        _explain(alice, [area])
    assert rpc_error(refused)[0] == grpc.StatusCode.PERMISSION_DENIED
    agent = f"ops-{uuid.uuid4().hex[:6]}"
    with _as(fleet, agent, ("admins", "auditors")) as operator:
        _explain(operator, [area])
    fleet.hub.audit.flush()
    with fleet.client("root") as root:
        (entry,) = root.call_admin("QueryAuditLog", apb.QueryAuditLogRequest(agent_id=agent, action="check")).entries
    assert entry.namespace == area and entry.detail["explained"] == "own rights"
    assert (entry.detail["namespaces"], entry.detail["allowed"], entry.detail["action"]) == ("2", "2", "read")


@pytest.mark.parametrize(
    ("request_fields", "field"),
    [
        ({"action": "admin"}, "action"),
        ({"action": "teleport"}, "action"),
        ({"namespaces": ["Not/A/Namespace"]}, "namespaces[0]"),
        ({"namespaces": [f"n{i}" for i in range(65)]}, "namespaces"),
    ],
)
def test_bad_requests_name_the_field(fleet: Fleet, request_fields: dict, field: str) -> None:
    with fleet.client("root") as root, pytest.raises(grpc.RpcError) as refused:
        root.call_admin("ExplainAccess", apb.ExplainAccessRequest(**request_fields))
    code, details = rpc_error(refused)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith(f"{field}:"), details


def test_a_report_decides_a_bounded_number_of_namespaces(fleet: Fleet, area: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(access_report, "MAX_EXPLAINED", 1)
    with fleet.client("root") as root:
        capped = _explain(root, [area])
    assert (capped.namespaces, capped.capped) == (1, True)
