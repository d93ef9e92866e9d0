"""Authentication attacks: failures leave an (aggregated) trace; ambiguous credentials are refused.

Issue 10: forged tokens produced no audit row and no log line (item 12), and
with two `authorization` headers the last one won (item 14).
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta, timezone

import grpc
import jwt
import pytest
from conftest import Stack, rpc_error
from google.protobuf.timestamp_pb2 import Timestamp

from memhub.audit.aggregate import OVERFLOW_REASON, AggregatedEvents, EventKey
from memhub.auth import load_secret
from memhub.auth.failures import REASONS
from memhub.client import MemhubClient, memory_input
from memhub.v1 import admin_pb2
from memhub.v1 import memory_pb2 as pb
from memhub.v1 import memory_pb2_grpc as pb_grpc
from security.hubs import tally


def _claims(**overrides: object) -> dict:
    now = datetime.now(timezone.utc)
    claims = {
        "sub": "mallory",
        "groups": ["testers"],
        "aud": "memhub",
        "iss": "memhub",
        "iat": now,
        "exp": now + timedelta(hours=1),
        "jti": uuid.uuid4().hex,
    }
    return {k: v for k, v in (claims | overrides).items() if v is not None}


def _forged() -> str:
    return jwt.encode(_claims(), b"not the hub's secret" * 4, algorithm="HS256")


def _auth_rows(stack: Stack, since: datetime) -> list[admin_pb2.AuditEntry]:
    stack.hub.events.flush()
    stack.hub.audit.flush()
    ts = Timestamp()
    ts.FromDatetime(since)
    reply = stack.client.call_admin(
        "QueryAuditLog", admin_pb2.QueryAuditLogRequest(action="authenticate", since=ts, page_size=1000)
    )
    return list(reply.entries)


def _refused(client: MemhubClient, ns: str) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as exc:
        client.search("anything", [ns])
    return rpc_error(exc)


@pytest.fixture
def fresh_window(stack: Stack) -> datetime:
    """Close the current aggregation window (and store its rows), so this test's failures are counted on their own."""
    stack.hub.events.flush()
    stack.hub.audit.flush()
    return datetime.now(timezone.utc)


# -- duplicate authorization headers (item 14) ------------------------------------------------


@pytest.mark.parametrize("order", ["good first", "good last", "both good"])
def test_two_authorization_headers_are_refused(stack: Stack, ns: str, order: str) -> None:
    good = ("authorization", f"Bearer {stack.token('tester')}")
    other = ("authorization", f"Bearer {stack.token('someone-else')}") if order != "both good" else good
    metadata = (good, other) if order != "good last" else (other, good)
    # A plain channel: the traced client's interceptor folds metadata into a dict, which would hide the duplicate.
    with grpc.insecure_channel(stack.address) as channel:
        with pytest.raises(grpc.RpcError) as exc:
            pb_grpc.MemoryServiceStub(channel).SearchMemories(
                pb.SearchMemoriesRequest(query="anything", namespaces=[ns]), metadata=metadata, timeout=30
            )
    code, details = rpc_error(exc)
    assert code == grpc.StatusCode.UNAUTHENTICATED
    assert "more than one authorization header" in details


def test_one_authorization_header_still_works(stack: Stack, ns: str) -> None:
    with stack.client_as("tester") as client:
        client.write([memory_input(ns, "one header is fine")], wait_indexed=True)
        assert client.search("one header", [ns]).hits


# -- failed authentication is audited and counted (item 12) ------------------------------------


def test_failed_authentications_are_audited_per_source_and_reason(stack: Stack, ns: str, fresh_window: datetime) -> None:
    before = stack.hub.events.totals()
    with stack.client_as("tester") as forged, stack.client_as("tester") as anonymous:
        forged.metadata = (("authorization", f"Bearer {_forged()}"),)
        anonymous.metadata = ()
        for _ in range(7):
            assert _refused(forged, ns)[0] == grpc.StatusCode.UNAUTHENTICATED
        for _ in range(3):
            assert _refused(anonymous, ns)[0] == grpc.StatusCode.UNAUTHENTICATED
    rows = _auth_rows(stack, fresh_window)
    assert tally(rows) == {"bad-signature": 7, "missing-token": 3}, [dict(r.detail) for r in rows]
    for row in rows:
        assert row.detail["source"] == "127.0.0.1"
        assert row.decision == admin_pb2.DECISION_DENY
        assert row.agent_id == ""  # an unverified token names nobody
        assert row.rpc == "memhub.v1.MemoryService/SearchMemories"
    # The counters, as admins see them (AdminService.GetLimits).
    after = stack.client.call_admin("GetLimits", admin_pb2.GetLimitsRequest()).refusals
    assert after["authenticate/bad-signature"] - before.get(("authenticate", "bad-signature"), 0) == 7
    assert after["authenticate/missing-token"] - before.get(("authenticate", "missing-token"), 0) == 3


def test_a_flood_of_forged_tokens_is_one_row_and_one_log_line(
    stack: Stack, ns: str, fresh_window: datetime, caplog: pytest.LogCaptureFixture
) -> None:
    with stack.client_as("tester") as forged:
        for _ in range(200):
            forged.metadata = (("authorization", f"Bearer {_forged()}"),)  # a different token every time
            _refused(forged, ns)
    with caplog.at_level(logging.WARNING, logger="memhub.audit.aggregate"):
        rows = _auth_rows(stack, fresh_window)
    assert tally(rows) == {"bad-signature": 200}
    assert len(rows) <= 2  # one per 10 s window (the flood may straddle a window boundary)
    # This flood's lines: the shared hub may flush another test's pending refusals (another reason) meanwhile.
    lines = [r for r in caplog.records if r.name == "memhub.audit.aggregate" and r.getMessage().endswith(": bad-signature")]
    assert len(lines) == len(rows) and all(line.levelno == logging.WARNING for line in lines)
    assert _forged() not in caplog.text  # no token, no attacker-chosen text


def test_every_kind_of_bad_token_gets_its_own_reason(stack: Stack, ns: str, fresh_window: datetime) -> None:
    secret = load_secret(stack.hub.config.auth.hs256_secret_file)
    now = datetime.now(timezone.utc)
    tokens = {
        "bad-signature": _forged(),
        "expired": jwt.encode(_claims(exp=now - timedelta(minutes=10), iat=now - timedelta(hours=1)), secret, algorithm="HS256"),
        "wrong-audience": jwt.encode(_claims(aud="elsewhere"), secret, algorithm="HS256"),
        "malformed-token": "not.a.jwt",
        "algorithm": jwt.encode(_claims(), None, algorithm="none"),
        "unknown-key": jwt.encode(_claims(), secret, algorithm="HS256", headers={"kid": "mallory's <script>"}),
    }
    for token in tokens.values():
        with stack.client_as("tester") as client:
            client.metadata = (("authorization", f"Bearer {token}"),)
            _refused(client, ns)
    reasons = {r.detail["reason"] for r in _auth_rows(stack, fresh_window)}
    assert reasons == set(tokens) and reasons <= set(REASONS)


def test_aggregation_keys_are_bounded(stack: Stack) -> None:
    """An attacker cycling through source addresses cannot grow the pending set past max_keys (+1 overflow key)."""
    events = AggregatedEvents(stack.hub.audit, max_keys=5)
    for i in range(500):
        events.record(EventKey("authenticate", "bad-signature", source=f"10.0.{i // 256}.{i % 256}"))
    assert len(events._pending) == 6  # noqa: SLF001 - the bound is the point
    assert events._pending[EventKey("authenticate", OVERFLOW_REASON)].count == 495  # noqa: SLF001
    assert events.flush() == 6
