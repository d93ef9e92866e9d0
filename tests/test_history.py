"""GetMemoryHistory / `memhub history`: a subject's versions, oldest first, under the reader's rights."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import grpc
import pytest
from conftest import Stack, rpc_error

from memhub.client import memory_input
from memhub.v1 import memory_pb2 as pb


def _pref(ns: str, text: str) -> pb.MemoryInput:
    return memory_input(ns, text, kind="semantic", type="preference", subject_key="user/drink")


def test_history_lists_every_version_oldest_first_with_its_writer(stack: Stack, ns: str) -> None:
    first = stack.client.write([_pref(ns, "Alice drinks tea")]).results[0].memory
    with stack.client_as("bob") as bob:
        second = bob.write([_pref(ns, "Alice drinks coffee now")]).results[0].memory
    third = stack.client.write([_pref(ns, "Alice drinks only water")]).results[0].memory
    for any_id in (first.id, second.id, third.id):
        reply = stack.client.history(any_id)
        assert reply.subject_key == "user/drink" and not reply.truncated
        assert [m.id for m in reply.versions] == [first.id, second.id, third.id]
    versions = stack.client.history(first.id).versions
    assert [m.status for m in versions] == [pb.MEMORY_STATUS_SUPERSEDED, pb.MEMORY_STATUS_SUPERSEDED, pb.MEMORY_STATUS_ACTIVE]
    assert [m.source.agent_id for m in versions] == ["tester", "bob", "tester"]
    assert versions[0].links.superseded_by == second.id and versions[1].links.superseded_by == third.id
    limited = stack.client.history(third.id, limit=2)
    assert [m.id for m in limited.versions] == [second.id, third.id] and limited.truncated


def test_a_forgotten_version_is_a_tombstone_in_the_history(stack: Stack, ns: str) -> None:
    first = stack.client.write([_pref(ns, "Alice drinks tea")]).results[0].memory
    second = stack.client.write([_pref(ns, "Alice drinks coffee")]).results[0].memory
    stack.client.forget(ids=[first.id], reason="wrong person")
    versions = stack.client.history(second.id).versions
    assert versions[0].status == pb.MEMORY_STATUS_FORGOTTEN and versions[0].content == ""
    assert versions[0].tombstone.reason == "wrong person"


def test_a_memory_without_subject_is_its_own_history(stack: Stack, ns: str) -> None:
    note = stack.client.write([memory_input(ns, "A plain note")]).results[0].memory
    reply = stack.client.history(note.id)
    assert reply.subject_key == "" and [m.id for m in reply.versions] == [note.id]


def test_history_needs_the_right_to_read_and_valid_arguments(stack: Stack, ns: str) -> None:
    memory = stack.client.write([_pref(ns, "Alice drinks tea")]).results[0].memory
    with stack.client_as("outsider", groups=()) as outsider, pytest.raises(grpc.RpcError) as excinfo:
        outsider.history(memory.id)
    assert rpc_error(excinfo)[0] == grpc.StatusCode.NOT_FOUND  # unreadable looks missing
    for kwargs, field in (({"limit": 201}, "limit"), ({"limit": -1}, "limit")):
        with pytest.raises(grpc.RpcError) as excinfo:
            stack.client.history(memory.id, **kwargs)
        code, message = rpc_error(excinfo)
        assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith(f"{field}: ")
    with pytest.raises(grpc.RpcError) as excinfo:
        stack.client.history("not-an-id")
    assert rpc_error(excinfo)[0] == grpc.StatusCode.INVALID_ARGUMENT


def test_cli_history(stack: Stack, ns: str) -> None:
    stack.client.write([_pref(ns, "Alice drinks tea")])
    second = stack.client.write([_pref(ns, "Alice drinks coffee")]).results[0].memory
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")} | {"MEMHUB_TOKEN": stack.token("tester")}
    done = subprocess.run(
        [sys.executable, "-m", "memhub.cli.main", "history", second.id, "--hub", stack.address],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("subject user/drink: 2 versions, oldest first")
    assert done.stdout.index("Alice drinks tea") < done.stdout.index("Alice drinks coffee")


def _version(ns: str, i: int, subject: str = "build/status") -> pb.MemoryInput:
    return memory_input(ns, f"the build is at step {i}", kind="semantic", type="fact", subject_key=subject)


def test_pages_return_every_version_of_a_long_chain_once_in_order(stack: Stack, ns: str) -> None:
    written = [stack.client.write([_version(ns, i)]).results[0].memory.id for i in range(230)]
    stack.client.write([_version(ns + "/other", 0)])  # same key, another namespace: not this subject's history
    one_call = stack.client.history(written[-1], limit=200)
    assert one_call.truncated and len(one_call.versions) == 200  # the one-call form stops at 200

    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        reply = stack.client.history(written[0], page_size=64, page_token=token)
        assert reply.subject_key == "build/status" and not reply.truncated
        seen += [m.id for m in reply.versions]
        pages += 1
        token = reply.next_page_token
        if not token:
            break
    assert pages == 4 and seen == written  # 64+64+64+38: each exactly once, oldest first
    assert [m.id for m in stack.client.full_history(written[100]).versions] == written
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")} | {"MEMHUB_TOKEN": stack.token("tester")}
    done = subprocess.run(
        [sys.executable, "-m", "memhub.cli.main", "history", written[5], "--hub", stack.address, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert [m["id"] for m in json.loads(done.stdout)["versions"]] == written  # `memhub history` follows the pages


def test_history_paging_arguments_and_tokens_are_checked(stack: Stack, ns: str) -> None:
    a = [stack.client.write([_version(ns, i, "a/key")]).results[0].memory.id for i in range(3)]
    b = stack.client.write([_version(ns, 0, "b/key")]).results[0].memory.id
    token = stack.client.history(a[0], page_size=1).next_page_token
    assert token
    for kwargs, field in (
        ({"page_size": 201}, "page_size"),
        ({"page_size": -1}, "page_size"),
        ({"limit": 10, "page_size": 5}, "limit"),
        ({"page_token": token + "x"}, "page_token"),
        ({"page_token": "not-a-token"}, "page_token"),
    ):
        with pytest.raises(grpc.RpcError) as excinfo:
            stack.client.history(a[0], **kwargs)
        code, details = rpc_error(excinfo)
        assert code == grpc.StatusCode.INVALID_ARGUMENT and field in details, (kwargs, details)
    # A token of subject a replayed for subject b (or a memory without subject) is refused, not followed.
    with pytest.raises(grpc.RpcError) as excinfo:
        stack.client.history(b, page_token=token)
    assert rpc_error(excinfo)[0] == grpc.StatusCode.INVALID_ARGUMENT and "page_token" in rpc_error(excinfo)[1]
    plain = stack.client.write([memory_input(ns, "a plain note")]).results[0].memory.id
    with pytest.raises(grpc.RpcError) as excinfo:
        stack.client.history(plain, page_token=token)
    assert rpc_error(excinfo)[0] == grpc.StatusCode.INVALID_ARGUMENT and "page_token" in rpc_error(excinfo)[1]
    assert [m.id for m in stack.client.history(a[0], page_size=1, page_token=token).versions] == [a[1]]
    # The token grants nothing: a caller who may not read the namespace gets NOT_FOUND on every page.
    with stack.client_as("outsider", groups=()) as outsider, pytest.raises(grpc.RpcError) as excinfo:
        outsider.history(a[0], page_size=1, page_token=token)
    assert rpc_error(excinfo)[0] == grpc.StatusCode.NOT_FOUND
