"""Session-state quotas and policies, over real gRPC, on both Postgres backends.

One hub per backend runs the shipped policies (default.cedar + examples/fleet.cedar)
with small session limits, so the quotas are reached in a few puts: 4 keys
and 6,000 bytes per session, 4,096-byte values, 3 live sessions per
namespace, 5 per agent. Agents get fresh ids per test where a per-agent
count matters.
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
from memhub.v1 import admin_pb2

from hub.auth import issue_token, load_secret
from hub.client import MemhubClient
from hub.config import PolicyConfig
from hub.session_state.config import SessionStateConfig

LIMITS = SessionStateConfig(
    max_value_bytes=4096, max_keys=4, max_session_bytes=6000, sessions_per_namespace=3, sessions_per_agent=5
)


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
        for i in range(LIMITS.max_keys):
            c.session_put(ns, session, f"k{i}", i)
        code, message = refused(lambda: c.session_put(ns, session, "one-more", 1))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert message.startswith("session quota (session-keys): ") and "MEMHUB_SESSION_MAX_KEYS=4" in message
        c.session_put(ns, session, "k0", "replacing a key adds none")
        c.session_delete(ns, session, "k1")
        c.session_put(ns, session, "one-more", 1)
        assert [e.key for e in c.session_list(ns, session).entries] == ["k0", "k2", "k3", "one-more"]


def test_bytes_per_session_count_keys_and_values(policy_hub: PolicyHub) -> None:
    me = agent()
    ns, session = f"agents/{me}/work", sid()
    with policy_hub.client(me) as c:
        c.session_put(ns, session, "a", value_json=json.dumps("x" * 2998))  # 3,000 + 1 bytes
        c.session_put(ns, session, "b", value_json=json.dumps("y" * 2900))  # 2,902 + 1: 5,904 in all
        code, message = refused(lambda: c.session_put(ns, session, "c", value_json=json.dumps("z" * 94)))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and message.startswith("session quota (session-bytes): ")
        assert "6,001 bytes" in message and "MEMHUB_SESSION_MAX_BYTES=6,000" in message
        c.session_put(ns, session, "c", value_json=json.dumps("z" * 93))  # exactly 6,000
        # Shrinking a value makes room: the limit counts what will be stored.
        c.session_put(ns, session, "a", "small")
        c.session_put(ns, session, "d", value_json=json.dumps("w" * 2000))
        code, message = refused(lambda: c.session_put(ns, session, "e", value_json=json.dumps("v" * 4095)))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith("value_json: is 4,097 bytes")


def test_sessions_per_namespace_and_per_agent(policy_hub: PolicyHub) -> None:
    me = agent()
    ns = f"agents/{me}/work"
    with policy_hub.client(me) as c:
        sessions = [sid() for _ in range(LIMITS.sessions_per_namespace)]
        for s in sessions:
            c.session_put(ns, s, "k", 1)
        code, message = refused(lambda: c.session_put(ns, sid(), "k", 1))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and message.startswith("session quota (sessions-per-namespace): ")
        c.session_put(ns, sessions[0], "more", 2)  # an existing session takes more keys
        assert c.session_delete(ns, sessions[0], whole_session=True).deleted == 2
        c.session_put(ns, sid(), "k", 1)  # a deleted session frees its place

        # Five live sessions in all for one agent, whatever the namespaces.
        c.session_put(f"agents/{me}/other", sid(), "k", 1)
        c.session_put(f"agents/{me}/third", sid(), "k", 1)
        code, message = refused(lambda: c.session_put(f"agents/{me}/fourth", sid(), "k", 1))
        assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and message.startswith("session quota (sessions-per-agent): ")
        assert "MEMHUB_SESSIONS_PER_AGENT=5" in message


def test_expired_sessions_free_their_place(policy_hub: PolicyHub) -> None:
    me = agent()
    ns = f"agents/{me}/work"
    with policy_hub.client(me) as c:
        for _ in range(LIMITS.sessions_per_namespace):
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
    try:
        # Sixteen new sessions in one namespace at once: exactly the quota's three are created.
        made, codes = _concurrently(16, lambda i: clients[i].session_put(ns, f"race-{i}", "k", i))
        assert made == LIMITS.sessions_per_namespace and codes == ["RESOURCE_EXHAUSTED"] * 13
        # Sixteen new keys in one session at once: exactly four fit.
        session = sid()
        other_ns = f"agents/{me}/keys"
        made, codes = _concurrently(16, lambda i: clients[i].session_put(other_ns, session, f"key-{i}", i))
        assert made == LIMITS.max_keys and codes == ["RESOURCE_EXHAUSTED"] * 12
        assert len(clients[0].session_list(other_ns, session).entries) == LIMITS.max_keys
    finally:
        for c in clients:
            c.close()


def test_quota_refusals_are_audited_in_aggregate(policy_hub: PolicyHub) -> None:
    me = agent()
    ns, session = f"agents/{me}/work", sid()
    with policy_hub.client(me) as c, policy_hub.client("root") as root:
        for i in range(LIMITS.max_keys):
            c.session_put(ns, session, f"k{i}", i)
        refused(lambda: c.session_put(ns, session, "over", 1))

        def audited() -> bool:
            rows = root.call_admin("QueryAuditLog", admin_pb2.QueryAuditLogRequest(agent_id=me, action="quota")).entries
            return any(r.detail.get("reason") == "session-keys" for r in rows)

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
