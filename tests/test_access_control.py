"""Access control end to end: real tokens, the shipped Cedar policies, a real hub over gRPC.

The hub here runs policies/default.cedar + policies/examples/fleet.cedar.
Agents: alice and bob (support), dave (support-lead), carol (auditor),
root (admin), eve (no groups).
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timedelta, timezone

import grpc
import jwt
import pytest
from conftest import Fleet, rpc_error
from cryptography.hazmat.primitives.asymmetric import rsa
from grpc_health.v1 import health_pb2, health_pb2_grpc

from memhub.auth import issue_token
from memhub.client import MemhubClient, memory_input
from memhub.v1 import admin_pb2
from memhub.v1 import memory_pb2 as pb


def _write(client: MemhubClient, ns: str, content: str) -> pb.Memory:
    return client.write([memory_input(ns, content)], wait_indexed=True).results[0].memory


def _code(call) -> tuple[grpc.StatusCode, str]:  # noqa: ANN001
    with pytest.raises(grpc.RpcError) as exc:
        call()
    return rpc_error(exc)


# -- identity -------------------------------------------------------------------


def test_health_needs_no_token_but_everything_else_does(fleet: Fleet) -> None:
    channel = grpc.insecure_channel(fleet.address)
    reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING
    channel.close()
    with fleet.raw(None) as anonymous:
        code, details = _code(lambda: anonymous.search("anything", []))
        assert code == grpc.StatusCode.UNAUTHENTICATED and "bearer token" in details
        code, _ = _code(lambda: anonymous.call_admin("GetPolicyInfo", admin_pb2.GetPolicyInfoRequest()))
        assert code == grpc.StatusCode.UNAUTHENTICATED
        code, _ = _code(lambda: anonymous.write([memory_input("agents/x", "sneaky")]))
        assert code == grpc.StatusCode.UNAUTHENTICATED


def _claims(**overrides) -> dict:  # noqa: ANN003
    now = datetime.now(timezone.utc)
    claims = {
        "sub": "alice",
        "groups": ["support"],
        "aud": "memhub",
        "iss": "memhub",
        "iat": now,
        "nbf": now,
        "exp": now + timedelta(hours=1),
        "jti": uuid.uuid4().hex,
    }
    claims.update(overrides)
    return {k: v for k, v in claims.items() if v is not None}


def _bad_tokens(fleet: Fleet) -> dict[str, str]:
    """Tokens the hub must refuse. (HS/RS key confusion needs a hub that trusts an RSA key: tests/test_auth_tokens.py.)"""
    now = datetime.now(timezone.utc)
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return {
        "forged signature": jwt.encode(_claims(), b"x" * 64, algorithm="HS256"),
        "alg none": jwt.encode(_claims(), None, algorithm="none"),
        "RS256 signed by a stranger": jwt.encode(_claims(), stranger, algorithm="RS256"),
        "expired": jwt.encode(
            _claims(exp=now - timedelta(minutes=10), iat=now - timedelta(hours=2), nbf=now - timedelta(hours=2)),
            fleet.secret,
            algorithm="HS256",
        ),
        "not yet valid": jwt.encode(_claims(nbf=now + timedelta(hours=1)), fleet.secret, algorithm="HS256"),
        "wrong audience": jwt.encode(_claims(aud="another-service"), fleet.secret, algorithm="HS256"),
        "wrong issuer": jwt.encode(_claims(iss="someone-else"), fleet.secret, algorithm="HS256"),
        "no jti": jwt.encode(_claims(jti=None), fleet.secret, algorithm="HS256"),
        "garbage": "not.a.jwt",
    }


def test_every_bad_token_is_refused(fleet: Fleet) -> None:
    with fleet.client("alice") as alice:
        stored = _write(alice, "agents/alice/tokens", "alice's private note about tokens")
    for name, token in _bad_tokens(fleet).items():
        with fleet.raw(token) as client:
            code, details = _code(lambda: client.get(stored.id))
            assert code == grpc.StatusCode.UNAUTHENTICATED, f"{name}: {code} {details}"
            assert token not in details
            code, _ = _code(lambda: client.write([memory_input("agents/alice/tokens", f"written with {name}")]))
            assert code == grpc.StatusCode.UNAUTHENTICATED, name
    with fleet.client("alice") as alice:
        assert [m.content for m in alice.list(["agents/alice/tokens"]).memories] == ["alice's private note about tokens"]


def test_a_revoked_token_is_refused_within_seconds(fleet: Fleet) -> None:
    issued = issue_token(fleet.secret, agent_id="bob", groups=["support"], ttl=timedelta(hours=1))
    with fleet.raw(issued.token) as bob, fleet.client("root") as root:
        bob.search("anything", ["agents/bob"])  # the token works before it is revoked
        reply = root.call_admin("RevokeToken", admin_pb2.RevokeTokenRequest(token_id=issued.jti, reason="laptop stolen"))
        assert reply.revoked
        deadline = time.monotonic() + 15
        while True:
            try:
                bob.search("anything", ["agents/bob"])
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.UNAUTHENTICATED and "revoked" in exc.details()
                break
            assert time.monotonic() < deadline, "the revoked token still works"
            time.sleep(0.2)
        assert not root.call_admin("RevokeToken", admin_pb2.RevokeTokenRequest(token_id=issued.jti, reason="again")).revoked


def test_provenance_comes_from_the_token(fleet: Fleet) -> None:
    with fleet.client("alice") as alice:
        m = _write(alice, "teams/support/kb", "Restart the mail relay with systemctl restart relay")
    assert m.source.agent_id == "alice"


# -- policy ---------------------------------------------------------------------


def test_an_auditor_cannot_write_a_readable_namespace_and_nothing_is_stored(fleet: Fleet) -> None:
    with fleet.client("carol") as carol:
        code, details = _code(lambda: carol.write([memory_input("teams/support/kb", "auditor was here")]))
        assert code == grpc.StatusCode.PERMISSION_DENIED
        assert "write" in details and "teams/support/kb" in details and "carol" in details
        assert all(m.content != "auditor was here" for m in carol.list(["teams/support"]).memories)


def test_forgetting_another_agents_memory(fleet: Fleet) -> None:
    with fleet.client("alice") as alice, fleet.client("bob") as bob, fleet.client("carol") as carol:
        mine = _write(alice, "agents/alice/forget", "alice keeps this")
        code, details = _code(lambda: bob.forget(ids=[mine.id], reason="bob tidies"))
        assert code == grpc.StatusCode.NOT_FOUND  # bob cannot see it at all
        code, details = _code(lambda: carol.forget(ids=[mine.id], reason="carol tidies"))
        assert code == grpc.StatusCode.PERMISSION_DENIED and "forget" in details  # carol can read it
        # By filter, unreadable namespaces are out of scope exactly as if empty: nothing happens, nothing leaks.
        assert list(bob.forget(filter=pb.ForgetFilter(namespace="agents/alice"), reason="bulk").forgotten_ids) == []
        code, details = _code(lambda: carol.forget(filter=pb.ForgetFilter(namespace="agents/alice"), reason="bulk"))
        assert code == grpc.StatusCode.PERMISSION_DENIED and "may not forget in namespace 'agents/alice" in details
        assert alice.get(mine.id).status == pb.MEMORY_STATUS_ACTIVE


def test_foreign_memories_are_invisible_through_every_read_path(fleet: Fleet) -> None:
    with fleet.client("alice") as alice, fleet.client("eve") as eve:
        secret = _write(alice, "agents/alice/diary", "alice's launch codes are 0000")
        # search: all readable namespaces, or the foreign one named explicitly
        assert all(h.memory.namespace.startswith("agents/eve") for h in eve.search("launch codes", []).hits)
        assert eve.search("launch codes", ["agents/alice"]).hits == []
        # Under "agents", eve sees only her own subtree (other tests may have written there).
        assert all(h.memory.namespace.startswith("agents/eve") for h in eve.search("launch codes", ["agents"]).hits)
        # list
        assert eve.list(["agents/alice"]).memories == []
        # get by a guessed id looks exactly like a missing id
        code, details = _code(lambda: eve.get(secret.id))
        missing = str(uuid.uuid4())
        code2, details2 = _code(lambda: eve.get(missing))
        assert code == code2 == grpc.StatusCode.NOT_FOUND
        assert details.replace(secret.id, "ID") == details2.replace(missing, "ID")
        # derived_from cannot be used to probe ids either
        probe = pb.MemoryInput(
            namespace="agents/eve/x",
            content="derived",
            kind=pb.MEMORY_KIND_EPISODIC,
            type=pb.MEMORY_TYPE_NOTE,
            derived_from=[secret.id],
        )
        code, details = _code(lambda: eve.write([probe]))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and "no memory has id" in details


def test_secrets_are_forbidden_even_to_the_team(fleet: Fleet) -> None:
    with fleet.client("dave") as dave, fleet.client("alice") as alice, fleet.client("carol") as carol:
        s = _write(dave, "teams/support/secrets", "the vault password is hunter2")
        code, details = _code(lambda: alice.write([memory_input("teams/support/secrets", "alice tries")]))
        assert code == grpc.StatusCode.PERMISSION_DENIED
        assert s.id not in {h.memory.id for h in alice.search("vault password", ["teams/support"]).hits}
        assert alice.search("vault password", ["teams/support/secrets"]).hits == []
        assert s.id not in {h.memory.id for h in carol.search("vault password", []).hits}  # auditors read all but secrets
        assert dave.search("vault password", ["teams/support"]).hits[0].memory.id == s.id


def test_admin_service_requires_the_admin_action(fleet: Fleet) -> None:
    for agent in ("alice", "carol", "eve", "dave"):
        with fleet.client(agent) as client:
            for name, request in [
                ("GetPolicyInfo", admin_pb2.GetPolicyInfoRequest()),
                ("ListNamespaces", admin_pb2.ListNamespacesRequest()),
                ("QueryAuditLog", admin_pb2.QueryAuditLogRequest()),
                ("ReloadPolicies", admin_pb2.ReloadPoliciesRequest()),
                ("RevokeToken", admin_pb2.RevokeTokenRequest(token_id="x", reason="y")),
            ]:
                code, details = _code(lambda: client.call_admin(name, request))
                assert code == grpc.StatusCode.PERMISSION_DENIED and "admin" in details, (agent, name)
    with fleet.client("root") as root:
        info = root.call_admin("GetPolicyInfo", admin_pb2.GetPolicyInfoRequest())
        assert "fleet.auditors-never-modify" in info.policy_ids and len(info.version) == 64


def test_decisions_are_audited_with_policy_ids(fleet: Fleet) -> None:
    trace = "0af7651916cd43dd8448eb211c80319c"
    with fleet.client("carol") as carol, fleet.client("root") as root:
        with pytest.raises(grpc.RpcError):
            carol._stub.WriteMemories(
                pb.WriteMemoriesRequest(memories=[memory_input("teams/support/audit", "x")], request_id="audit-req-1"),
                metadata=(*carol.metadata, ("traceparent", f"00-{trace}-b7ad6b7169203331-01")),
            )
        fleet.hub.audit.flush()
        entries = root.call_admin(
            "QueryAuditLog", admin_pb2.QueryAuditLogRequest(agent_id="carol", action="write", decision=admin_pb2.DECISION_DENY)
        ).entries
        entry = next(e for e in entries if e.request_id == "audit-req-1")
        assert entry.namespace == "teams/support/audit"
        assert list(entry.policy_ids) == ["fleet.auditors-never-modify"]
        assert entry.trace_id == trace and list(entry.groups) == ["auditors"]
        assert entry.rpc == "memhub.v1.MemoryService/WriteMemories"
        fleet.hub.audit.flush()  # root's own admin decision, made by the query above
        allowed = root.call_admin(
            "QueryAuditLog", admin_pb2.QueryAuditLogRequest(agent_id="root", action="admin", decision=admin_pb2.DECISION_ALLOW)
        ).entries
        assert allowed and "default.admins-administer-hub" in allowed[0].policy_ids


def test_policies_reload_without_restart(fleet: Fleet) -> None:
    fleet_file = fleet.policy_dir / "examples" / "fleet.cedar"
    original = fleet_file.read_text()
    grant = (
        '\n@id("test.eve-writes-support")\n'
        'permit(principal == Agent::"eve", action == Action::"write", resource in Namespace::"teams/support");\n'
    )
    # The file watcher is paused so that the RPC is what reloads: left running (every 0.2 s here) it sometimes took
    # the edit first, and the RPC then rightly answered "unchanged" (seen in CI).
    fleet.hub.policies.stop()
    with fleet.client("eve") as eve, fleet.client("root") as root:
        code, _ = _code(lambda: eve.write([memory_input("teams/support/eve", "hello")]))
        assert code == grpc.StatusCode.PERMISSION_DENIED
        fleet_file.write_text(original + grant)
        try:
            reply = root.call_admin("ReloadPolicies", admin_pb2.ReloadPoliciesRequest())
            assert reply.changed and "test.eve-writes-support" in reply.policy.policy_ids
            assert eve.write([memory_input("teams/support/eve", "hello")]).results
        finally:
            fleet_file.write_text(original)
            root.call_admin("ReloadPolicies", admin_pb2.ReloadPoliciesRequest())
            fleet.hub.policies.start()
        code, _ = _code(lambda: eve.write([memory_input("teams/support/eve", "again")]))
        assert code == grpc.StatusCode.PERMISSION_DENIED


def test_an_edited_policy_file_is_picked_up_by_the_watcher(fleet: Fleet) -> None:
    fleet_file = fleet.policy_dir / "examples" / "fleet.cedar"
    original = fleet_file.read_text()
    grant = (
        '\n@id("test.eve-reads-support")\n'
        'permit(principal == Agent::"eve", action == Action::"read", resource in Namespace::"teams/support");\n'
    )
    with fleet.client("dave") as dave, fleet.client("eve") as eve:
        m = _write(dave, "teams/support/watch", "the watcher reloads policies")
        assert eve.search("watcher reloads", ["teams/support"]).hits == []
        fleet_file.write_text(original + grant)
        try:
            deadline = time.monotonic() + 15
            while not eve.search("watcher reloads", ["teams/support"]).hits:
                assert time.monotonic() < deadline, "the edited policy was not loaded"
                time.sleep(0.2)
            assert eve.search("watcher reloads", ["teams/support"]).hits[0].memory.id == m.id
        finally:
            fleet_file.write_text(original)
            fleet.hub.policies.reload()
