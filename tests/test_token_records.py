"""The tokens the hub knows (issue 24): ListTokens and IssueToken over gRPC on the fleet hub, and the recording of
accepted tokens' uses, batched and bounded, against its real Postgres.

Policies: policies/default.cedar + examples/fleet.cedar (root administers; token-issuers may issue tokens).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import uuid
from datetime import datetime, timedelta, timezone

import grpc
import pytest
from conftest import Fleet, eventually, rpc_error
from sqlalchemy import text

from memhub.auth import issue_token
from memhub.auth.token_records import Sighting, TokenRecords
from memhub.auth.token_use import TokenUseRecorder
from memhub.auth.verifier import Identity
from memhub.client import MemhubClient, memory_input
from memhub.v1 import admin_pb2 as apb
from memhub.v1 import memory_pb2

ISSUER = ("admins", "token-issuers")


def _client(fleet: Fleet, agent: str, groups: tuple[str, ...]) -> MemhubClient:
    return MemhubClient(
        fleet.address, token=issue_token(fleet.secret, agent_id=agent, groups=list(groups), ttl=timedelta(hours=1)).token
    )


def _listed(root: MemhubClient, agent: str, **kw: object) -> list[apb.TokenRecord]:
    return list(root.call_admin("ListTokens", apb.ListTokensRequest(agent_id=agent, **kw)).tokens)


def _audit(fleet: Fleet, root: MemhubClient, agent: str, action: str) -> list[apb.AuditEntry]:
    fleet.hub.audit.flush()
    return list(root.call_admin("QueryAuditLog", apb.QueryAuditLogRequest(agent_id=agent, action=action)).entries)


def test_a_token_signed_outside_the_hub_is_listed_once_it_is_used(fleet: Fleet) -> None:
    agent = f"cli-{uuid.uuid4().hex[:8]}"
    issued = issue_token(fleet.secret, agent_id=agent, groups=["support"], ttl=timedelta(hours=2))  # as `memhub token issue`
    with fleet.client("root") as root:
        assert _listed(root, agent) == []  # the hub has not seen it
        with MemhubClient(fleet.address, token=issued.token) as user:
            user.search("anything", [f"agents/{agent}"])
            (record,) = _listed(root, agent)
            first = record.last_used_at.ToDatetime(tzinfo=timezone.utc)
            user.search("anything again", [f"agents/{agent}"])
        (again,) = _listed(root, agent)
    assert record.token_id == issued.jti and list(record.groups) == ["support"] and record.issued_by == ""
    assert not record.HasField("issued_at") and record.expires_at.ToDatetime(tzinfo=timezone.utc) == issued.expires_at
    assert record.first_used_at.ToDatetime(tzinfo=timezone.utc) <= first
    assert again.last_used_at.ToDatetime(tzinfo=timezone.utc) >= first and again.first_used_at == record.first_used_at
    assert issued.token not in str(again) and issued.token.split(".")[2] not in str(again)


def test_an_issued_token_works_is_listed_audited_and_revocable(fleet: Fleet) -> None:
    agent = f"new-{uuid.uuid4().hex[:8]}"
    with _client(fleet, "ivy", ISSUER) as ivy, fleet.client("root") as root:
        reply = ivy.call_admin(
            "IssueToken",
            apb.IssueTokenRequest(agent_id=agent, groups=["support"], ttl_seconds=600, trust="verified", note="onboarding"),
        )
        record = reply.record
        assert record.agent_id == agent and list(record.groups) == ["support"] and record.issued_by == "ivy"
        assert record.note == "onboarding" and record.HasField("issued_at") and not record.HasField("last_used_at")
        lifetime = record.expires_at.ToDatetime(tzinfo=timezone.utc) - record.issued_at.ToDatetime(tzinfo=timezone.utc)
        assert timedelta(seconds=598) <= lifetime <= timedelta(seconds=602)
        with MemhubClient(fleet.address, token=reply.token) as new:  # the token works: support shares teams/support
            written = new.write([memory_input("teams/support/onboarding", "The onboarding runbook lives in the wiki")])
            assert written.results[0].memory.trust == memory_pb2.TRUST_LEVEL_VERIFIED
        (listed,) = _listed(root, agent)
        assert listed.token_id == record.token_id and listed.HasField("last_used_at") and not listed.HasField("revoked_at")
        (entry,) = _audit(fleet, root, "ivy", "issue_token")
        assert entry.decision == apb.DECISION_ALLOW and list(entry.policy_ids) == ["fleet.token-issuers-issue-tokens"]
        assert entry.detail["token_id"] == record.token_id and entry.detail["agent"] == agent
        assert entry.detail["groups"] == "support" and entry.detail["note"] == "onboarding" and reply.token not in str(entry)
        # Revoked by id alone: the hub's record gives the revocation its agent and expiry.
        assert root.call_admin("RevokeToken", apb.RevokeTokenRequest(token_id=record.token_id, reason="test")).revoked
        (revoked,) = _listed(root, agent)
        assert revoked.HasField("revoked_at")
        (held,) = [r for r in fleet.hub.revocations.list(limit=50) if r.jti == record.token_id]
        assert held.agent_id == agent and held.expires_at == record.expires_at.ToDatetime(tzinfo=timezone.utc)
        with MemhubClient(fleet.address, token=reply.token) as new, pytest.raises(grpc.RpcError) as refused:
            new.search("runbook", ["teams/support/onboarding"])
        assert rpc_error(refused)[0] == grpc.StatusCode.UNAUTHENTICATED


def test_issuing_needs_issue_token_beyond_admin_and_a_refusal_is_audited(fleet: Fleet) -> None:
    with fleet.client("root") as root:
        with pytest.raises(grpc.RpcError) as refused:
            root.call_admin("IssueToken", apb.IssueTokenRequest(agent_id="someone", groups=["auditors"]))
        code, details = rpc_error(refused)
        assert code == grpc.StatusCode.PERMISSION_DENIED and "issue_token" in details
        denial = next(e for e in _audit(fleet, root, "root", "issue_token") if e.detail.get("agent") == "someone")
        assert denial.decision == apb.DECISION_DENY and list(denial.policy_ids) == []  # no policy grants it
        assert denial.detail["groups"] == "auditors" and "token_id" not in denial.detail
    with _client(fleet, "ivy2", ("token-issuers",)) as not_admin, pytest.raises(grpc.RpcError) as refused:
        not_admin.call_admin("IssueToken", apb.IssueTokenRequest(agent_id="someone"))
    assert rpc_error(refused)[0] == grpc.StatusCode.PERMISSION_DENIED  # admin comes first
    with fleet.client("alice") as alice, pytest.raises(grpc.RpcError) as refused:
        alice.call_admin("ListTokens", apb.ListTokensRequest())
    assert rpc_error(refused)[0] == grpc.StatusCode.PERMISSION_DENIED


@pytest.mark.parametrize(
    ("request_fields", "field"),
    [
        ({"agent_id": ""}, "agent_id"),
        ({"agent_id": "bad agent"}, "agent_id"),
        ({"agent_id": "a", "groups": ["ok", "not ok"]}, "groups[1]"),
        ({"agent_id": "a", "ttl_seconds": 59}, "ttl_seconds"),
        ({"agent_id": "a", "ttl_seconds": 2**62}, "ttl_seconds"),
        ({"agent_id": "a", "trust": "root"}, "trust"),
        ({"agent_id": "a", "note": "two\nlines"}, "note"),
        ({"agent_id": "a", "note": "x" * 201}, "note"),
        ({"agent_id": "a", "groups": [f"g{i}" for i in range(65)]}, "groups"),
    ],
)
def test_bad_issue_requests_name_the_field_and_issue_nothing(fleet: Fleet, request_fields: dict, field: str) -> None:
    with _client(fleet, "ivy3", ISSUER) as ivy, pytest.raises(grpc.RpcError) as refused:
        ivy.call_admin("IssueToken", apb.IssueTokenRequest(**request_fields))
    code, details = rpc_error(refused)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith(f"{field}:"), details


def test_the_list_pages_newest_first_and_hides_expired_tokens_unless_asked(fleet: Fleet) -> None:
    agent = f"pager-{uuid.uuid4().hex[:8]}"
    with _client(fleet, "ivy4", ISSUER) as ivy, fleet.client("root") as root:
        ids = [
            ivy.call_admin("IssueToken", apb.IssueTokenRequest(agent_id=agent, note=f"n{i}")).record.token_id for i in range(5)
        ]
        seen: list[str] = []
        tokens = [""]
        while True:
            page = root.call_admin("ListTokens", apb.ListTokensRequest(agent_id=agent, page_size=2, page_token=tokens[-1]))
            seen += [r.token_id for r in page.tokens]
            if not page.next_page_token:
                break
            tokens.append(page.next_page_token)
        first_token = tokens[1]
        assert seen == list(reversed(ids))
        with pytest.raises(grpc.RpcError) as other_filter:  # a token only pages the list it came from
            root.call_admin("ListTokens", apb.ListTokensRequest(agent_id="other", page_size=2, page_token=first_token))
        assert rpc_error(other_filter)[0] == grpc.StatusCode.INVALID_ARGUMENT
    # An expired token (recorded directly, as a replica would on a last use) shows only with include_expired.
    records = TokenRecords(fleet.hub.engine)
    past = datetime.now(timezone.utc) - timedelta(hours=1)
    records.record_uses([Sighting(f"old-{agent}", agent, (), past, past - timedelta(hours=1), past - timedelta(minutes=1))])
    with fleet.client("root") as root:
        assert f"old-{agent}" not in {r.token_id for r in _listed(root, agent)}
        assert f"old-{agent}" in {r.token_id for r in _listed(root, agent, include_expired=True)}


def test_uses_are_held_in_memory_bounded_and_written_in_one_batch(fleet: Fleet) -> None:
    records = TokenRecords(fleet.hub.engine)
    recorder = TokenUseRecorder(records, interval_s=3600, max_pending=2)  # never flushes on its own here
    expires = datetime.now(timezone.utc) + timedelta(hours=1)
    ids = [f"bound-{uuid.uuid4().hex[:10]}" for _ in range(3)]
    for _ in range(50):  # many calls with the same two tokens hold two entries
        for token_id in ids[:2]:
            recorder.seen(Identity("bounded", ("g",), token_id, expires))
    recorder.seen(Identity("bounded", ("g",), ids[2], expires))  # a third distinct token: past the bound
    recorder.seen(Identity("bounded", (), "", expires))  # no jti: nothing to record
    assert recorder.skipped == 1
    assert records.get(ids[0]) is None  # nothing written before the flush
    assert recorder.flush() == 2
    assert records.get(ids[0]) is not None and records.get(ids[1]) is not None and records.get(ids[2]) is None
    assert recorder.flush() == 0  # nothing held any more


def test_a_full_table_records_no_new_token_but_keeps_counting_known_ones(fleet: Fleet) -> None:
    known = f"known-{uuid.uuid4().hex[:10]}"
    expires = datetime.now(timezone.utc) + timedelta(hours=1)
    start = datetime.now(timezone.utc)
    TokenRecords(fleet.hub.engine).record_uses([Sighting(known, "full", (), expires, start, start)])
    with fleet.hub.engine.connect() as conn:
        held = conn.execute(text("SELECT count(*) FROM token_records")).scalar_one()
    full = TokenRecords(fleet.hub.engine, max_rows=held)  # at its bound (rows others add only keep it there)
    later = start + timedelta(minutes=5)
    new = f"new-{uuid.uuid4().hex[:10]}"
    written = full.record_uses(
        [Sighting(known, "full", (), expires, later, later), Sighting(new, "full", (), expires, later, later)]
    )
    assert written == 1 and full.get(new) is None
    record = full.get(known)
    assert record is not None and record.first_used_at == start and record.last_used_at == later


def test_one_agents_stream_of_tokens_fills_its_share_not_the_table(fleet: Fleet, caplog: pytest.LogCaptureFixture) -> None:
    """An issuer minting a token per call for one agent: past that agent's share its new ids are not recorded (its
    known ones still count uses, and the log says why once), while another agent's new token still is."""
    flood, other = f"flood-{uuid.uuid4().hex[:8]}", f"quiet-{uuid.uuid4().hex[:8]}"
    expires = datetime.now(timezone.utc) + timedelta(hours=1)
    at = datetime.now(timezone.utc)
    records = TokenRecords(fleet.hub.engine, max_per_agent=5)
    first = [Sighting(f"{flood}-{i}", flood, (), expires, at, at) for i in range(8)]
    caplog.set_level(logging.WARNING, logger="memhub.auth.token_records")
    assert records.record_uses(first) == 5  # its share, in the order seen
    assert [records.get(s.token_id) is not None for s in first] == [True] * 5 + [False] * 3
    later = at + timedelta(minutes=1)
    more = [Sighting(f"{flood}-{i}", flood, (), expires, later, later) for i in (0, 8, 9)]
    written = records.record_uses([*more, Sighting(f"{other}-0", other, (), expires, later, later)])
    assert written == 2  # the flood's known id and the other agent's new one
    assert records.get(f"{other}-0") is not None and records.get(f"{flood}-8") is None
    known = records.get(f"{flood}-0")
    assert known is not None and known.last_used_at == later
    warned = [r.getMessage() for r in caplog.records if flood in r.getMessage()]
    assert len(warned) == 1 and "its share" in warned[0]
    with pytest.raises(ValueError, match="max_per_agent"):
        TokenRecords(fleet.hub.engine, max_per_agent=0)


def test_the_hub_records_uses_in_the_background(fleet: Fleet) -> None:
    """No flush asked for: the hub's own recorder writes within its interval."""
    agent = f"bg-{uuid.uuid4().hex[:8]}"
    issued = issue_token(fleet.secret, agent_id=agent, groups=[], ttl=timedelta(hours=1))
    with MemhubClient(fleet.address, token=issued.token) as user:
        user.search("anything", [f"agents/{agent}"])
    records = TokenRecords(fleet.hub.engine)
    eventually(lambda: records.get(issued.jti) is not None, "the hub recorded the token's use", timeout_s=30)


def test_memhub_token_list_shows_the_tokens_as_text_and_as_one_json_document(fleet: Fleet) -> None:
    agent = f"listed-{uuid.uuid4().hex[:8]}"
    signed = issue_token(fleet.secret, agent_id=agent, groups=["support"], ttl=timedelta(hours=1))
    with MemhubClient(fleet.address, token=signed.token) as user:
        user.search("anything", [f"agents/{agent}"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")} | {"MEMHUB_TOKEN": fleet.token("root")}
    command = [sys.executable, "-m", "memhub.cli.main", "token", "list", "--agent", agent, "--hub", fleet.address]
    text_out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert text_out.returncode == 0, text_out.stderr
    (line,) = text_out.stdout.splitlines()
    assert line.startswith(f"{signed.jti}  {agent}  [support]  expires ") and "(signed elsewhere)" in line
    assert "last use 20" in line and signed.token not in text_out.stdout
    as_json = subprocess.run([*command, "--json"], capture_output=True, text=True, env=env, timeout=120)
    document = json.loads(as_json.stdout)
    (record,) = document["tokens"]
    assert record["token_id"] == signed.jti and record["groups"] == ["support"] and record["last_used_at"]
    assert "issued_at" not in record and document["next_page_token"] == ""
