"""Session-state quotas and policies, over real gRPC, on both Postgres backends.

One hub per backend runs the shipped policies (default.cedar + examples/fleet.cedar)
with small session limits, so the quotas are reached in a few puts: 4 keys
and 6,000 bytes per session, 2,048-byte values, 4 live sessions per
namespace, 5 per agent, and half of each shared quota at most for one agent
(issue 22). Agents get fresh ids per test where a per-agent count matters;
team namespaces (teams/support/<fresh>) are where several agents share.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import grpc
import pytest
from conftest import (
    GROUPS,
    REPO,
    backend_database,
    eventually,
    hub_config,
    rpc_error,
    serving,
)

from memhub.auth import issue_token, load_secret
from memhub.client import MemhubClient
from memhub.config import PolicyConfig
from memhub.session_state.config import SessionStateConfig
from memhub.v1 import admin_pb2

LIMITS = SessionStateConfig(
    max_value_bytes=2048, max_keys=4, max_session_bytes=6000, sessions_per_namespace=4, sessions_per_agent=5, agent_share=0.5
)
"""One agent's share: 2 keys and 3,000 bytes of a session, 2 sessions of a namespace."""


@dataclasses.dataclass
class PolicyHub:
    backend: str
    address: str
    secret: bytes

    def client(self, agent: str, groups: tuple[str, ...] | None = None) -> MemhubClient:
        groups = GROUPS.get(agent, ()) if groups is None else groups
        token = issue_token(self.secret, agent_id=agent, groups=list(groups), ttl=timedelta(hours=1)).token
        return MemhubClient(self.address, token=token)


@pytest.fixture(scope="module", params=["embedded-pg", "external-pg"])
def policy_hub(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[PolicyHub]:
    root = tmp_path_factory.mktemp(f"session-limits-{request.param}")
    policy_dir = root / "policies"
    shutil.copytree(REPO / "policies", policy_dir)
    with backend_database(request, request.param) as url:
        config = hub_config(root, url, "session_limits")
        config = dataclasses.replace(
            config,
            policy=PolicyConfig(dir=policy_dir, files=("default.cedar", "examples/fleet.cedar"), poll_interval_s=0.2),
            session_state=LIMITS,
        )
        with serving(config) as (hub, address):
            yield PolicyHub(request.param, address, load_secret(Path(hub.config.auth.hs256_secret_file)))


def agent() -> str:
    return f"ag-{uuid.uuid4().hex[:8]}"


def sid() -> str:
    return f"s-{uuid.uuid4().hex[:8]}"


def refused(call: Callable[[], object]) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as excinfo:
        call()
    return rpc_error(excinfo)


# -- quotas ---------------------------------------------------------------------------------------------------


def test_keys_per_session(policy_hub: PolicyHub) -> None:
    me = agent()
    ns, session = f"agents/{me}/work", sid()
    with policy_hub.client(me) as c:
        for i in range(LIMITS.agent_max_keys):
            c.session_put(ns, session, f"k{i}", i)
        code, message = refused(lambda: c.session_put(ns, session, "one-more", 1))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert message.startswith(f"session quota (agent-session-keys): agent {me!r} wrote 2 other live keys")
        assert "MEMHUB_SESSION_AGENT_SHARE=0.5 of MEMHUB_SESSION_MAX_KEYS=4" in message
        c.session_put(ns, session, "k0", "replacing a key adds none")
        c.session_delete(ns, session, "k1")
        c.session_put(ns, session, "one-more", 1)
        assert [e.key for e in c.session_list(ns, session).entries] == ["k0", "one-more"]


def team() -> str:
    return f"teams/support/{uuid.uuid4().hex[:8]}"


def member(policy_hub: PolicyHub, name: str) -> MemhubClient:
    """A support team member (fresh names: the per-agent session count spans every test)."""
    return policy_hub.client(name, groups=("support",))


def admin_writer(policy_hub: PolicyHub) -> MemhubClient:
    """A support member who is also a hub admin: the one caller told who holds a full quota."""
    return policy_hub.client(f"lead-{uuid.uuid4().hex[:6]}", groups=("support", "admins"))


def test_one_agent_cannot_fill_a_shared_session(policy_hub: PolicyHub) -> None:
    ns, session = team(), sid()
    a, b, d = (f"{who}-{uuid.uuid4().hex[:6]}" for who in ("alice", "bob", "dave"))
    with member(policy_hub, a) as alice, member(policy_hub, b) as bob, member(policy_hub, d) as dave:
        alice.session_put(ns, session, "a1", 1)
        alice.session_put(ns, session, "a2", 2)
        assert refused(lambda: alice.session_put(ns, session, "a3", 3))[0] == grpc.StatusCode.RESOURCE_EXHAUSTED
        bob.session_put(ns, session, "b1", 1)  # alice's share is full, the session is not
        bob.session_put(ns, session, "b2", 2)
        # Now the whole session is full: dave is told the quota and its limit, and nothing about who holds it.
        code, message = refused(lambda: dave.session_put(ns, session, "d1", 1))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert message.startswith("session quota (session-keys): ") and "MEMHUB_SESSION_MAX_KEYS=4" in message
        assert a not in message and b not in message and "wrote the most" not in message
        with admin_writer(policy_hub) as lead:
            _, told = refused(lambda: lead.session_put(ns, session, "l1", 1))
        assert f"; agent {a!r} wrote the most of them (2 keys, " in told


def test_bytes_per_session_count_keys_and_values(policy_hub: PolicyHub) -> None:
    me = agent()
    ns, session = f"agents/{me}/work", sid()
    with policy_hub.client(me) as c:
        c.session_put(ns, session, "a", value_json=json.dumps("x" * 1498))  # 1,500 + 1 bytes
        code, message = refused(lambda: c.session_put(ns, session, "b", value_json=json.dumps("y" * 1498)))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and message.startswith("session quota (agent-session-bytes): ")
        assert (
            "would hold 3,002 bytes" in message and "MEMHUB_SESSION_AGENT_SHARE=0.5 of MEMHUB_SESSION_MAX_BYTES=6,000" in message
        )
        c.session_put(ns, session, "b", value_json=json.dumps("y" * 1496))  # exactly 3,000
        # Shrinking a value makes room: the limit counts what will be stored.
        c.session_put(ns, session, "a", "small")
        c.session_put(ns, session, "b", value_json=json.dumps("w" * 2000))
        code, message = refused(lambda: c.session_put(ns, session, "e", value_json=json.dumps("v" * 2047)))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith("value_json: is 2,049 bytes")


def test_the_whole_of_a_shared_sessions_bytes(policy_hub: PolicyHub) -> None:
    ns, session = team(), sid()
    a, b, d = (f"{who}-{uuid.uuid4().hex[:6]}" for who in ("alice", "bob", "dave"))
    with member(policy_hub, a) as alice, member(policy_hub, b) as bob, member(policy_hub, d) as dave:
        alice.session_put(ns, session, "a", value_json=json.dumps("x" * 1998))  # 2,001 bytes
        bob.session_put(ns, session, "b", value_json=json.dumps("y" * 1997))  # 2,000
        dave.session_put(ns, session, "c", value_json=json.dumps("z" * 1900))  # 1,903: 5,904 in all
        with member(policy_hub, agent()) as cleo:
            code, message = refused(lambda: cleo.session_put(ns, session, "d", value_json=json.dumps("w" * 94)))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and message.startswith("session quota (session-bytes): ")
        assert "6,001 bytes" in message and "MEMHUB_SESSION_MAX_BYTES=6,000" in message
        assert not any(name in message for name in (a, b, d, "wrote the most"))
        with admin_writer(policy_hub) as lead:
            _, told = refused(lambda: lead.session_put(ns, session, "d", value_json=json.dumps("w" * 94)))
        assert f"; agent {a!r} wrote the most of them (1 keys, 2,001 bytes)" in told


def test_sessions_per_namespace_and_per_agent(policy_hub: PolicyHub) -> None:
    me = agent()
    ns = f"agents/{me}/work"
    with policy_hub.client(me) as c:
        sessions = [sid() for _ in range(LIMITS.agent_sessions_per_namespace)]
        for s in sessions:
            c.session_put(ns, s, "k", 1)
        code, message = refused(lambda: c.session_put(ns, sid(), "k", 1))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert message.startswith(f"session quota (agent-sessions-per-namespace): agent {me!r} created 2 of the live")
        assert "MEMHUB_SESSION_AGENT_SHARE=0.5 of MEMHUB_SESSIONS_PER_NAMESPACE=4" in message
        c.session_put(ns, sessions[0], "more", 2)  # an existing session takes more keys
        assert c.session_delete(ns, sessions[0], whole_session=True).deleted == 2
        c.session_put(ns, sid(), "k", 1)  # a deleted session frees its place

        # Five live sessions in all for one agent, whatever the namespaces.
        c.session_put(f"agents/{me}/other", sid(), "k", 1)
        c.session_put(f"agents/{me}/other", sid(), "k", 1)
        c.session_put(f"agents/{me}/third", sid(), "k", 1)
        code, message = refused(lambda: c.session_put(f"agents/{me}/fourth", sid(), "k", 1))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and message.startswith("session quota (sessions-per-agent): ")
        assert "MEMHUB_SESSIONS_PER_AGENT=5" in message


def test_one_agent_cannot_fill_a_shared_namespace_with_sessions(policy_hub: PolicyHub) -> None:
    """Issue 22: one member of a namespace created all its sessions and every other writer was refused for days."""
    ns = team()
    a, b, d = (f"{who}-{uuid.uuid4().hex[:6]}" for who in ("alice", "bob", "dave"))
    with member(policy_hub, a) as alice, member(policy_hub, b) as bob, member(policy_hub, d) as dave:
        for _ in range(LIMITS.agent_sessions_per_namespace):
            alice.session_put(ns, sid(), "k", 1)
        code, message = refused(lambda: alice.session_put(ns, sid(), "k", 1))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert message.startswith(f"session quota (agent-sessions-per-namespace): agent {a!r} created 2 ")
        for _ in range(LIMITS.agent_sessions_per_namespace):
            bob.session_put(ns, sid(), "k", 1)  # alice's share is full; bob still creates sessions
        code, message = refused(lambda: dave.session_put(ns, sid(), "k", 1))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert message.startswith(f"session quota (sessions-per-namespace): namespace {ns!r} has 4 live sessions, ")
        assert "MEMHUB_SESSIONS_PER_NAMESPACE=4" in message
        assert not any(name in message for name in (a, b, "created the most"))
        with admin_writer(policy_hub) as lead:
            _, told = refused(lambda: lead.session_put(ns, sid(), "k", 1))
        assert f"; agent {a!r} created the most of them (2)" in told


def test_expired_sessions_free_their_place(policy_hub: PolicyHub) -> None:
    me = agent()
    ns = f"agents/{me}/work"
    with policy_hub.client(me) as c:
        for _ in range(LIMITS.agent_sessions_per_namespace):
            c.session_put(ns, sid(), "k", 1, ttl=timedelta(seconds=1))

        def room() -> bool:
            try:
                c.session_put(ns, sid(), "k", 1)
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                return False
            return True

        eventually(room, "the 1-second sessions expired and a new one fits", timeout_s=30)


def _concurrently(count: int, fn: Callable[[int], object]) -> tuple[int, list[str]]:
    """Run fn(0..count-1) in threads released together; (successes, refusal codes)."""
    barrier = threading.Barrier(count)
    ok, codes, lock = [], [], threading.Lock()

    def run(i: int) -> None:
        barrier.wait()
        try:
            fn(i)
        except grpc.RpcError as exc:
            with lock:
                codes.append(exc.code().name)
        else:
            with lock:
                ok.append(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return len(ok), codes


def test_quotas_hold_under_concurrent_puts(policy_hub: PolicyHub) -> None:
    me = agent()
    ns = f"agents/{me}/work"
    clients = [policy_hub.client(me) for _ in range(16)]
    members = [policy_hub.client(f"member-{uuid.uuid4().hex[:6]}", groups=("support",)) for _ in range(16)]
    try:
        # Sixteen new sessions in one namespace at once, by one agent: exactly its share of two is created.
        made, codes = _concurrently(16, lambda i: clients[i].session_put(ns, f"race-{i}", "k", i))
        assert made == LIMITS.agent_sessions_per_namespace and codes == ["RESOURCE_EXHAUSTED"] * 14
        # Sixteen new keys in one session at once: exactly the agent's two fit.
        session = sid()
        other_ns = f"agents/{me}/keys"
        made, codes = _concurrently(16, lambda i: clients[i].session_put(other_ns, session, f"key-{i}", i))
        assert made == LIMITS.agent_max_keys and codes == ["RESOURCE_EXHAUSTED"] * 14
        assert len(clients[0].session_list(other_ns, session).entries) == LIMITS.agent_max_keys
        # Sixteen agents creating a session each in a shared namespace: exactly the whole quota's four.
        shared = team()
        made, codes = _concurrently(16, lambda i: members[i].session_put(shared, f"race-{i}", "k", i))
        assert made == LIMITS.sessions_per_namespace and codes == ["RESOURCE_EXHAUSTED"] * 12
        # Sixteen agents writing a key each in one new shared session: exactly the whole quota's four.
        shared, session = team(), sid()
        made, codes = _concurrently(16, lambda i: members[i].session_put(shared, session, f"key-{i}", i))
        assert made == LIMITS.max_keys and codes == ["RESOURCE_EXHAUSTED"] * 12
    finally:
        for c in clients + members:
            c.close()


def test_quota_refusals_are_audited_in_aggregate(policy_hub: PolicyHub) -> None:
    me = agent()
    ns, session = f"agents/{me}/work", sid()
    with policy_hub.client(me) as c, policy_hub.client("root") as root:
        for i in range(LIMITS.agent_max_keys):
            c.session_put(ns, session, f"k{i}", i)
        refused(lambda: c.session_put(ns, session, "over", 1))

        def audited() -> bool:
            rows = root.call_admin("QueryAuditLog", admin_pb2.QueryAuditLogRequest(agent_id=me, action="quota")).entries
            return any(r.detail.get("reason") == "agent-session-keys" for r in rows)

        eventually(audited, "the refusal is in the audit log with its reason")


# -- policies -------------------------------------------------------------------------------------------------


def test_an_agent_owns_the_sessions_of_its_namespace_and_no_other_agent_sees_them(policy_hub: PolicyHub) -> None:
    owner, other = agent(), agent()
    ns, session = f"agents/{owner}/task", sid()
    with policy_hub.client(owner) as mine, policy_hub.client(other) as theirs:
        version = mine.session_put(ns, session, "plan", {"step": 1}).entry.version
        for call, action in [
            (lambda: theirs.session_get(ns, session, "plan"), "read"),
            (lambda: theirs.session_list(ns, session), "read"),
            (lambda: theirs.session_put(ns, session, "plan", {"step": 2}, expected_version=version), "write"),
            (lambda: theirs.session_delete(ns, session, "plan"), "write"),
            (lambda: theirs.session_delete(ns, session, whole_session=True), "write"),
        ]:
            code, message = refused(call)
            assert code == grpc.StatusCode.PERMISSION_DENIED
            assert message == f"permission denied: agent {other!r} may not {action} in namespace {ns!r}"
        assert json.loads(mine.session_get(ns, session, "plan").value_json) == {"step": 1}
        # Even a missing key answers PERMISSION_DENIED, not NOT_FOUND: nothing about the namespace leaks.
        assert refused(lambda: theirs.session_get(ns, session, "never-set"))[0] == grpc.StatusCode.PERMISSION_DENIED


def test_a_team_namespace_shares_its_sessions(policy_hub: PolicyHub) -> None:
    ns, session = f"teams/support/{uuid.uuid4().hex[:8]}", sid()
    with policy_hub.client("alice") as alice, policy_hub.client("bob") as bob:
        v = alice.session_put(ns, session, "ticket-4312", {"status": "investigating"}, expected_version=0).entry.version
        assert bob.session_get(ns, session, "ticket-4312").updated_by == "alice"
        bob.session_put(ns, session, "ticket-4312", {"status": "fixed"}, expected_version=v)
        assert json.loads(alice.session_get(ns, session, "ticket-4312").value_json) == {"status": "fixed"}


def test_reading_needs_read_and_changing_needs_write_and_read(policy_hub: PolicyHub) -> None:
    ns, session = f"teams/support/{uuid.uuid4().hex[:8]}", sid()
    inbox = f"teams/support/inbox/{uuid.uuid4().hex[:8]}"
    with (
        policy_hub.client("alice") as alice,
        policy_hub.client("carol") as auditor,
        policy_hub.client("mallory") as write_only,
        policy_hub.client("eve") as nobody,
    ):
        alice.session_put(ns, session, "k", 1)
        alice.session_put(inbox, session, "k", 1)
        # Auditors read everything and may change nothing (fleet.auditors-never-modify).
        assert auditor.session_get(ns, session, "k").value_json == "1"
        assert [e.key for e in auditor.session_list(ns, session).entries] == ["k"]
        code, message = refused(lambda: auditor.session_put(ns, session, "k", 2))
        assert code == grpc.StatusCode.PERMISSION_DENIED and "may not write" in message
        assert refused(lambda: auditor.session_delete(ns, session, "k"))[0] == grpc.StatusCode.PERMISSION_DENIED
        # The write-only group may write the inbox but not read it, so it may not use its sessions at all:
        # a put's answer (a version, a conflict's current version) would tell it what the inbox holds.
        code, message = refused(lambda: write_only.session_put(inbox, session, "k", 2, expected_version=0))
        assert code == grpc.StatusCode.PERMISSION_DENIED and message.endswith(f"may not read in namespace {inbox!r}")
        assert refused(lambda: write_only.session_get(inbox, session, "k"))[0] == grpc.StatusCode.PERMISSION_DENIED
        # An agent with no grant at all.
        assert refused(lambda: nobody.session_list(ns, session))[0] == grpc.StatusCode.PERMISSION_DENIED
        assert alice.session_get(ns, session, "k").value_json == "1" and alice.session_get(inbox, session, "k").value_json == "1"


def test_every_decision_is_audited_with_the_rpc(policy_hub: PolicyHub) -> None:
    me, stranger = agent(), agent()
    ns, session = f"agents/{me}/audit", sid()
    with policy_hub.client(me) as c, policy_hub.client(stranger) as s, policy_hub.client("root") as root:
        c.session_put(ns, session, "k", 1)
        c.session_get(ns, session, "k")
        refused(lambda: s.session_list(ns, session))

        def rows() -> set[tuple[str, str, str, str]]:
            found = set()
            for who in (me, stranger):
                reply = root.call_admin("QueryAuditLog", admin_pb2.QueryAuditLogRequest(agent_id=who, namespace=ns))
                found |= {(e.agent_id, e.rpc, e.action, e.decision) for e in reply.entries}
            return found

        allow, deny = admin_pb2.DECISION_ALLOW, admin_pb2.DECISION_DENY
        rpc = "memhub.v1.SessionStateService/"
        expected = {
            (me, rpc + "PutSessionState", "write", allow),
            (me, rpc + "PutSessionState", "read", allow),
            (me, rpc + "GetSessionState", "read", allow),
            (stranger, rpc + "ListSessionState", "read", deny),
        }
        eventually(lambda: expected <= rows(), "the decisions are audited")


# -- settings -------------------------------------------------------------------------------------------------


def test_the_agent_share_is_read_checked_and_always_below_the_whole() -> None:
    from memhub.errors import StartupError

    c = SessionStateConfig.from_env({})
    assert c.agent_share == 0.5
    assert (c.agent_sessions_per_namespace, c.agent_max_keys, c.agent_max_session_bytes) == (500, 128, 2**19)
    c = SessionStateConfig.from_env({"MEMHUB_SESSION_AGENT_SHARE": "0.1", "MEMHUB_SESSIONS_PER_NAMESPACE": "2"})
    assert c.agent_sessions_per_namespace == 1  # rounded down, at least one, and still less than the whole
    for raw in ("1", "0", "0.95", "nan"):
        with pytest.raises(StartupError, match=r"MEMHUB_SESSION_AGENT_SHARE=.* (is out of range \(0.01 to 0.9\)|is not)"):
            SessionStateConfig.from_env({"MEMHUB_SESSION_AGENT_SHARE": raw})
    # A whole quota of one cannot be shared.
    with pytest.raises(StartupError, match=r"MEMHUB_SESSIONS_PER_NAMESPACE=1 is out of range \(2 to"):
        SessionStateConfig.from_env({"MEMHUB_SESSIONS_PER_NAMESPACE": "1"})
    # One agent's share of a session must still hold the largest value.
    with pytest.raises(StartupError, match=r"MEMHUB_SESSION_MAX_BYTES=100000 is out of range \(131,328|131328 to"):
        SessionStateConfig.from_env({"MEMHUB_SESSION_MAX_BYTES": "100000"})
    with pytest.raises(StartupError, match="MEMHUB_SESSION_MAX_VALUE_BYTES=1048576 and MEMHUB_SESSION_AGENT_SHARE=0.2 need"):
        SessionStateConfig.from_env({"MEMHUB_SESSION_MAX_VALUE_BYTES": str(2**20), "MEMHUB_SESSION_AGENT_SHARE": "0.2"})
    with pytest.raises(ValueError, match="agent_share must be above 0 and below 1"):
        SessionStateConfig(agent_share=1.0)
