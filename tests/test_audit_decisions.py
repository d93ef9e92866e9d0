"""The audit log records what was decided and by which policy (issue 24), read back from its rows.

On the fleet hub (policies/default.cedar + examples/fleet.cedar), with an agent id of its own per test so the
rows a test reads are its own:
- a probe of the admin right that shapes an answer (may quarantined memories be shown in a lineage?) is no
  denial: `memhub why` (GetMemoryLineage) and the bridge's explain_memory by an ordinary agent leave no admin
  DENY; an admin's probe is audited as an allow with its purpose;
- a search's one read decision names the policies that decided it: the permits that allowed what it read,
  the forbid that took a namespace away, or none for the default deny, never a permit that allowed nothing
  there.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from conftest import Fleet
from test_bridge_tools import call_ok, connected

from memhub.auth import issue_token
from memhub.client import MemhubClient, memory_input
from memhub.v1 import admin_pb2 as apb


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _agent(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _client(fleet: Fleet, agent: str, groups: tuple[str, ...]) -> MemhubClient:
    token = issue_token(fleet.secret, agent_id=agent, groups=list(groups), ttl=timedelta(hours=1)).token
    return MemhubClient(fleet.address, token=token)


def _rows(fleet: Fleet, agent: str) -> list[apb.AuditEntry]:
    """Every audit row of ``agent``, oldest first (written out first: reads are audited in batches)."""
    fleet.hub.audit.flush()
    with fleet.client("root") as root:
        reply = root.call_admin("QueryAuditLog", apb.QueryAuditLogRequest(agent_id=agent, page_size=1000))
    return list(reversed(reply.entries))


def _decisions(rows: list[apb.AuditEntry], action: str) -> list[tuple[str, str, list[str]]]:
    return [(r.namespace, apb.Decision.Name(r.decision), list(r.policy_ids)) for r in rows if r.action == action]


@pytest.fixture
def shared(fleet: Fleet) -> Iterator[str]:
    """A namespace under teams/support with one memory, and one under its secrets (written by dave, a lead)."""
    ns = f"teams/support/a{uuid.uuid4().hex[:10]}"
    with fleet.client("dave") as dave:
        dave.write([memory_input(ns, "Refunds above 500 EUR need a lead's approval")], wait_indexed=True)
        dave.write([memory_input(f"teams/support/secrets/{ns.split('/')[-1]}", "The refund override code is kept offline")])
    yield ns


def test_lineage_by_an_ordinary_agent_logs_no_admin_denial(fleet: Fleet, shared: str) -> None:
    agent = _agent("sue")
    with _client(fleet, agent, ("support",)) as sue:
        memory = sue.search("refund approval", [shared]).hits[0].memory
        reply = sue.lineage(memory.id)
        assert reply.entries[0].memory.id == memory.id
    rows = _rows(fleet, agent)
    lineage = [r for r in rows if r.rpc.endswith("/GetMemoryLineage")]
    assert lineage, "the lineage call left no audit row"
    assert all(r.decision == apb.DECISION_ALLOW for r in lineage), [(r.action, r.decision) for r in lineage]
    assert not [r for r in rows if r.action == "admin"], "a probe of the admin right was audited"
    assert ("", "DECISION_ALLOW", ["fleet.support-team-shares-support"]) in _decisions(lineage, "read")


def test_lineage_by_an_admin_audits_the_probe_as_an_allow_with_its_purpose(fleet: Fleet, shared: str) -> None:
    agent = _agent("ops")
    with _client(fleet, agent, ("admins", "auditors")) as ops:
        memory = ops.search("refund approval", [shared]).hits[0].memory
        ops.lineage(memory.id)
    (probe,) = [r for r in _rows(fleet, agent) if r.action == "admin"]
    assert probe.decision == apb.DECISION_ALLOW and list(probe.policy_ids) == ["default.admins-administer-hub"]
    assert probe.rpc.endswith("/GetMemoryLineage") and probe.detail["purpose"] == "quarantined memories in a lineage"


@pytest.mark.anyio
async def test_explain_memory_through_the_bridge_logs_no_admin_denial(fleet: Fleet, shared: str) -> None:
    agent = _agent("sam")
    token = issue_token(fleet.secret, agent_id=agent, groups=["support"], ttl=timedelta(hours=1)).token
    with fleet.client("dave") as dave:
        memory_id = dave.search("refund approval", [shared]).hits[0].memory.id
    async with connected(fleet.address, token) as bridge:
        explained = await call_ok(bridge, "explain_memory", {"id": memory_id})
    assert explained["entries"][0]["memory"]["id"] == memory_id
    rows = _rows(fleet, agent)
    assert [r for r in rows if r.rpc.endswith("/GetMemoryLineage")]
    assert not [r for r in rows if r.decision == apb.DECISION_DENY], [(r.action, r.namespace, r.rpc) for r in rows]


def test_a_search_nothing_permits_is_a_default_deny_not_the_agents_own_permit(fleet: Fleet, shared: str) -> None:
    agent = _agent("eve")  # no groups: owns agents/<agent> and may read nothing else
    with _client(fleet, agent, ()) as eve:
        assert not eve.search("refund approval", [shared]).hits
        eve.write([memory_input(f"agents/{agent}/notes", "My own note about refunds")], wait_indexed=True)
        assert eve.search("refunds", []).hits  # its own namespace
    reads = _decisions(_rows(fleet, agent), "read")
    assert (shared, "DECISION_DENY", []) in reads, reads
    assert ("", "DECISION_ALLOW", ["default.agent-owns-own-namespace"]) in reads, reads


def test_a_search_a_forbid_empties_names_the_forbid(fleet: Fleet, shared: str) -> None:
    agent = _agent("audrey")  # an auditor reads everything but the support secrets
    secrets = f"teams/support/secrets/{shared.split('/')[-1]}"
    with _client(fleet, agent, ("auditors",)) as audrey:
        assert not audrey.search("override code", [secrets]).hits
        assert audrey.search("refund approval", [shared]).hits
    reads = _decisions(_rows(fleet, agent), "read")
    assert (secrets, "DECISION_DENY", ["fleet.support-secrets-leads-only"]) in reads, reads
    assert (shared, "DECISION_ALLOW", ["fleet.auditors-read-everything"]) in reads, reads


def test_a_search_over_several_grants_names_only_those_that_allowed_something(fleet: Fleet, shared: str) -> None:
    agent = _agent("lead")  # support lead: the team grant and the leads' grant both allow teams/support
    with _client(fleet, agent, ("support", "support-leads")) as lead:
        assert lead.search("refund approval", [shared]).hits
    reads = _decisions(_rows(fleet, agent), "read")
    # Its own agents/<id> permit could decide elsewhere but allowed nothing here: not named.
    assert reads == [(shared, "DECISION_ALLOW", ["fleet.support-leads-curate-support", "fleet.support-team-shares-support"])]
