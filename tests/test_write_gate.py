"""The write gate through real gRPC: small talk filtered (and counted), force, remember instructions, secrets."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import grpc
import pytest
from conftest import Fleet, Stack, rpc_error

from memhub.client import memory_input
from memhub.core.model import Kind, MemoryType, NewMemory
from memhub.curation.write_gate import GateConfig, gate
from memhub.errors import InvalidArgument, StartupError
from memhub.v1 import admin_pb2
from memhub.v1 import memory_pb2 as pb


def test_small_talk_is_not_stored_and_says_which_rule(stack: Stack, ns: str) -> None:
    reply = stack.client.write(
        [memory_input(ns, "ok, thanks!"), memory_input(ns, "Deploys freeze on Fridays after 3pm"), memory_input(ns, "好的，收到")]
    )
    first, kept, last = reply.results
    assert first.filtered and first.filter_rule == "small_talk" and not first.HasField("memory")
    assert last.filtered and last.filter_rule == "small_talk"
    assert not kept.filtered and kept.memory.content == "Deploys freeze on Fridays after 3pm"
    assert [m.content for m in stack.client.list([ns]).memories] == ["Deploys freeze on Fridays after 3pm"]


def test_filtered_writes_are_counted_in_the_audit_log(stack: Stack, ns: str) -> None:
    agent = f"chatty-{ns}"
    with stack.client_as(agent) as chatty:
        for text in ("ok", "thanks!", "let me check"):
            assert chatty.write([memory_input(ns, text)]).results[0].filtered
    stack.hub.events.flush()
    stack.hub.audit.flush()
    entries = stack.client.call_admin("QueryAuditLog", admin_pb2.QueryAuditLogRequest(agent_id=agent, action="filter")).entries
    counts = {e.detail["reason"]: int(e.detail["count"]) for e in entries}
    assert counts == {"small_talk": 2, "chatter": 1}


def test_force_stores_it_anyway(stack: Stack, ns: str) -> None:
    reply = stack.client.write([memory_input(ns, "ok")], force=True)
    assert not reply.results[0].filtered and reply.results[0].memory.content == "ok"


def test_force_needs_write_unfiltered(fleet: Fleet) -> None:
    with fleet.client("dave") as dave:  # may write teams/support (fleet policy), not write_unfiltered there
        assert dave.write([memory_input("teams/support/notes", "ok")]).results[0].filtered
        with pytest.raises(grpc.RpcError) as excinfo:
            dave.write([memory_input("teams/support/notes", "ok")], force=True)
        code, message = rpc_error(excinfo)
        assert code == grpc.StatusCode.PERMISSION_DENIED and "write_unfiltered" in message
        # In its own namespace the default policy grants it.
        assert not dave.write([memory_input("agents/dave/notes", "ok")], force=True).results[0].filtered


def test_remember_that_is_kept_as_an_important_fact(stack: Stack, ns: str) -> None:
    kept = stack.client.write([memory_input(ns, "Remember that Alice prefers tea")]).results[0].memory
    assert (kept.kind, kept.type, kept.importance) == (pb.MEMORY_KIND_SEMANTIC, pb.MEMORY_TYPE_FACT, 5)
    zh = stack.client.write([memory_input(ns, "记住：周五下午不发布")]).results[0].memory
    assert (zh.kind, zh.importance) == (pb.MEMORY_KIND_SEMANTIC, 5)
    # The writer's own choices are never overridden.
    chosen = stack.client.write([memory_input(ns, "Remember that Bob prefers coffee", importance=2)]).results[0].memory
    assert (chosen.kind, chosen.importance) == (pb.MEMORY_KIND_EPISODIC, 2)


def test_secrets_are_redacted_and_reported(stack: Stack, ns: str) -> None:
    result = stack.client.write([memory_input(ns, "The staging db password=hunter2xyz for now", type="fact")]).results[0]
    assert list(result.redacted) == ["password"]
    stored = stack.client.get(result.memory.id).content
    assert stored == "The staging db password=[REDACTED:password] for now" and "hunter2xyz" not in stored


def test_a_replayed_write_repeats_the_filtered_results(stack: Stack, ns: str) -> None:
    items = [memory_input(ns, "thanks!"), memory_input(ns, "The VPN certificate expires on Monday")]
    first = stack.client.write(items, request_id=f"gate-{ns}")
    again = stack.client.write(items, request_id=f"gate-{ns}")
    assert again.replayed and [r.filtered for r in again.results] == [True, False]
    assert again.results[0].filter_rule == "small_talk" and again.results[1].memory.id == first.results[1].memory.id


def _new(content: str) -> NewMemory:
    return NewMemory(
        namespace="agents/a",
        kind=Kind.EPISODIC,
        type=MemoryType.EVENT,
        content=content,
        tags=(),
        entities=(),
        importance=3,
        confidence=1.0,
        occurred_at=None,
        valid_from=None,
        valid_to=None,
        expires_at=None,
        subject_key=None,
        derived_from=(),
    )


def test_refuse_mode_names_the_memory_and_kind_but_never_the_secret() -> None:
    with pytest.raises(InvalidArgument) as excinfo:
        gate([_new("fine"), _new("key sk-proj-abcdefghijklmnopqrstuvwxyz123456")], GateConfig(secrets="refuse"))
    assert excinfo.value.field == "memories[1].content" and "openai key" in str(excinfo.value)
    assert "sk-proj" not in str(excinfo.value)


def test_gate_config_from_env() -> None:
    assert GateConfig.from_env({}) == GateConfig(filter_enabled=True, secrets="redact")
    assert not GateConfig.from_env({"MEMHUB_WRITE_FILTER": "off"}).filter_enabled
    for bad in ({"MEMHUB_WRITE_FILTER": "maybe"}, {"MEMHUB_SECRETS": "keep"}):
        with pytest.raises(StartupError, match="MEMHUB_"):
            GateConfig.from_env(bad)


def test_default_lifetimes_per_kind_apply_only_when_the_writer_set_none() -> None:
    config = GateConfig.from_env({"MEMHUB_DEFAULT_TTL": "episodic=30d"})
    assert config.default_ttl == {Kind.EPISODIC: timedelta(days=30)}
    own = datetime(2030, 1, 1, tzinfo=timezone.utc)
    episode, fact = _new("The deploy on Friday broke checkout"), _new("Staging runs Postgres 16")
    fact = dataclasses.replace(fact, kind=Kind.SEMANTIC, type=MemoryType.FACT)
    chosen = dataclasses.replace(_new("The vendor call moved to Monday"), expires_at=own)
    kept = dict(gate([episode, fact, chosen], config).kept)
    assert timedelta(days=29, hours=23) < kept[0].expires_at - datetime.now(timezone.utc) <= timedelta(days=30)
    assert kept[1].expires_at is None and kept[2].expires_at == own
    assert GateConfig.from_env({}).default_ttl == {}
    for bad in ("daily=30d", "episodic=30", "episodic=0d", "episodic"):
        with pytest.raises(StartupError, match="MEMHUB_DEFAULT_TTL"):
            GateConfig.from_env({"MEMHUB_DEFAULT_TTL": bad})
