"""Decay into the archive: old, never-recalled, unimportant memories leave search, stay stored, come back on restore."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import grpc
import pytest
from conftest import Stack, eventually, rpc_error
from sqlalchemy import text

from memhub.client import memory_input
from memhub.curation.archive import ArchiveConfig, parse_rule
from memhub.errors import StartupError
from memhub.v1 import memory_pb2 as pb


def _age(stack: Stack, ids: list[str], days: int) -> None:
    """Test set-up: pretend the hub stored these memories ``days`` ago (created_at is the hub's clock)."""
    with stack.hub.engine.begin() as conn:
        conn.execute(
            text("UPDATE memories SET created_at = now() - make_interval(days => :d) WHERE id = ANY(CAST(:ids AS uuid[]))"),
            {"d": days, "ids": ids},
        )


def _write(stack: Stack, ns: str, content: str, **kw) -> str:  # noqa: ANN003
    return stack.client.write([memory_input(ns, content, **kw)], wait_indexed=True).results[0].memory.id


def test_only_old_unrecalled_unimportant_episodes_are_archived(stack: Stack, ns: str) -> None:
    old = _write(stack, ns, "The standup moved to the small room", importance=2)
    important = _write(stack, ns, "The datacenter flooded and we lost rack 4", importance=5)
    fact = _write(stack, ns, "The small room seats six", kind="semantic", type="fact", importance=1)
    recalled = _write(stack, ns, "The coffee machine on floor 2 is broken", importance=1)
    recent = _write(stack, ns, "The standup is at 9:30 today", importance=1)
    assert stack.client.search("coffee machine broken", [ns], top_k=1).hits[0].memory.id == recalled
    eventually(lambda: stack.client.get(recalled).recall.recall_count > 0, "the recall is counted")
    _age(stack, [old, important, fact, recalled], days=31)

    assert stack.hub.archiver.run_once(grace_s=0) >= 1
    statuses = {mid: stack.client.get(mid).status for mid in (old, important, fact, recalled, recent)}
    assert statuses == {
        old: pb.MEMORY_STATUS_ARCHIVED,
        important: pb.MEMORY_STATUS_ACTIVE,
        fact: pb.MEMORY_STATUS_ACTIVE,
        recalled: pb.MEMORY_STATUS_ACTIVE,
        recent: pb.MEMORY_STATUS_ACTIVE,
    }
    assert stack.client.get(old).content == "The standup moved to the small room"  # kept whole
    assert old not in [m.id for m in stack.client.list([ns]).memories]
    assert [m.id for m in stack.client.list([ns], statuses=["archived"]).memories] == [old]
    eventually(
        lambda: old not in [h.memory.id for h in stack.client.search("standup moved small room", [ns]).hits],
        "the archived memory leaves search",
    )


def test_restore_brings_it_back_and_needs_the_right_to_write(stack: Stack, ns: str) -> None:
    mid = _write(stack, ns, "The standup moved to the small room", importance=2)
    _age(stack, [mid], days=40)
    stack.hub.archiver.run_once(grace_s=0)
    with stack.client_as("outsider", groups=()) as outsider, pytest.raises(grpc.RpcError) as excinfo:
        outsider.restore([mid])
    assert rpc_error(excinfo)[0] == grpc.StatusCode.NOT_FOUND
    assert list(stack.client.restore([mid]).restored_ids) == [mid]
    assert list(stack.client.restore([mid]).restored_ids) == []  # already active: nothing to do
    assert stack.client.get(mid).status == pb.MEMORY_STATUS_ACTIVE
    eventually(lambda: mid in [h.memory.id for h in stack.client.search("standup moved small room", [ns]).hits], "back in search")


def test_restore_refuses_when_the_same_content_is_active_again(stack: Stack, ns: str) -> None:
    mid = _write(stack, ns, "The standup moved to the small room", importance=2)
    _age(stack, [mid], days=40)
    stack.hub.archiver.run_once(grace_s=0)
    again = _write(stack, ns, "The standup moved to the small room", importance=2)
    assert again != mid
    with pytest.raises(grpc.RpcError) as excinfo:
        stack.client.restore([mid])
    code, message = rpc_error(excinfo)
    assert code == grpc.StatusCode.FAILED_PRECONDITION and again in message
    assert stack.client.get(mid).status == pb.MEMORY_STATUS_ARCHIVED


def test_restore_arguments_are_checked(stack: Stack) -> None:
    for ids, field in (([], "ids"), (["nope"], "ids[0]")):
        with pytest.raises(grpc.RpcError) as excinfo:
            stack.client.restore(ids)
        code, message = rpc_error(excinfo)
        assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith(f"{field}:")


def test_cli_restore(stack: Stack, ns: str) -> None:
    mid = _write(stack, ns, "The standup moved to the small room", importance=2)
    _age(stack, [mid], days=40)
    stack.hub.archiver.run_once(grace_s=0)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")} | {"MEMHUB_TOKEN": stack.token("tester")}
    done = subprocess.run(
        [sys.executable, "-m", "memhub.cli.main", "restore", mid, "--hub", stack.address],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout == f"restored 1 memory\n  {mid}\n", done.stderr


def test_rules_are_parsed_and_validated() -> None:
    rule = parse_rule("teams/ops:episodic+semantic:36h:2")
    assert rule.prefix == "teams/ops" and [k.value for k in rule.kinds] == ["episodic", "semantic"]
    assert rule.min_age == timedelta(hours=36) and rule.max_importance == 2
    assert ArchiveConfig.from_env({"MEMHUB_ARCHIVE_RULES": "off"}).rules == ()
    assert len(ArchiveConfig.from_env({}).rules) == 1
    for bad in (
        "*:episodic:30d",
        "Teams:episodic:30d:3",
        "*:daily:30d:3",
        "*:episodic:30:3",
        "*:episodic:0d:3",
        "*:episodic:30d:9",
    ):
        with pytest.raises(StartupError, match="MEMHUB_ARCHIVE_RULES"):
            parse_rule(bad)
