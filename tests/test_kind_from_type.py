"""kind vs type: one rule in the hub, so every caller gets it (issue 11, item 5).

A write that leaves kind unset gets the kind its type implies; a kind the
type rules out is INVALID_ARGUMENT in words a person can act on, never
proto enum names.
"""

from __future__ import annotations

import grpc
import pytest
from conftest import Stack, rpc_error
from test_cli import memhub

from memhub.client import memory_input
from memhub.v1 import memory_pb2 as pb

# Stated here rather than imported, so a change to the hub's table is a visible, deliberate test change.
EXPECTED_KIND = {
    "event": "episodic",
    "outcome": "episodic",
    "note": "episodic",
    "fact": "semantic",
    "preference": "semantic",
    "correction": "semantic",
    "rule": "semantic",
    "lesson": "procedural",
}


def _kind(m: pb.Memory) -> str:
    return pb.MemoryKind.Name(m.kind).removeprefix("MEMORY_KIND_").lower()


def test_an_unset_kind_follows_the_type_over_grpc(stack: Stack, ns: str) -> None:
    items = [
        pb.MemoryInput(namespace=ns, content=f"a {t} without a kind", type=pb.MemoryType.Value(f"MEMORY_TYPE_{t.upper()}"))
        for t in EXPECTED_KIND
    ]
    assert all(m.kind == pb.MEMORY_KIND_UNSPECIFIED for m in items)
    written = stack.client.write(items).results
    got = {pb.MemoryType.Name(r.memory.type).removeprefix("MEMORY_TYPE_").lower(): _kind(r.memory) for r in written}
    assert got == EXPECTED_KIND
    stored = {m.content: _kind(m) for m in stack.client.list([ns]).memories}
    assert stored == {f"a {t} without a kind": k for t, k in EXPECTED_KIND.items()}


@pytest.mark.parametrize(
    ("kind", "type_", "expected"),
    [
        (
            "episodic",
            "preference",
            "memories[0].kind: is episodic, but type 'preference' is a semantic memory; leave kind unset or set --kind semantic",
        ),
        ("semantic", "event", "memories[0].kind: is semantic, but type 'event' is an episodic memory"),
        (
            "episodic",
            "rule",
            "type 'rule' is a semantic or procedural memory; leave kind unset (semantic) or set --kind semantic or "
            "--kind procedural",
        ),
        ("procedural", "fact", "type 'fact' is a semantic memory"),
    ],
)
def test_a_kind_the_type_rules_out_is_refused_in_plain_words(stack: Stack, ns: str, kind: str, type_: str, expected: str) -> None:
    item = memory_input(ns, "contradiction", kind=kind, type=type_, subject_key="user/drink" if type_ == "preference" else "")
    with pytest.raises(grpc.RpcError) as excinfo:
        stack.client.write([item])
    code, details = rpc_error(excinfo)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert expected in details
    assert "MEMORY_KIND" not in details and "MEMORY_TYPE" not in details
    assert stack.client.list([ns]).memories == []


@pytest.mark.parametrize(
    ("item_kw", "expected"),
    [
        (
            {"type": "event"},
            "memories[0].subject_key: is only for semantic memories, and type 'event' makes this one episodic; "
            "leave subject_key out, or use a semantic type (fact, preference, correction, rule)",
        ),
        (
            {"kind": "procedural", "type": "rule"},
            "memories[0].subject_key: is only for semantic memories, and this one is procedural; "
            "leave subject_key out, or set --kind semantic",
        ),
    ],
)
def test_a_subject_key_on_a_memory_that_is_not_semantic_says_what_to_change(
    stack: Stack, ns: str, item_kw: dict, expected: str
) -> None:
    with pytest.raises(grpc.RpcError) as excinfo:
        stack.client.write([memory_input(ns, "keyed", subject_key="user/x", **item_kw)])
    code, details = rpc_error(excinfo)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and details == expected


def test_explicit_consistent_kinds_still_work(stack: Stack, ns: str) -> None:
    pairs = [
        ("episodic", "event"),
        ("semantic", "fact"),
        ("semantic", "preference"),
        ("procedural", "rule"),
        ("procedural", "correction"),
        ("semantic", "lesson"),
        ("procedural", "lesson"),
        ("semantic", "note"),
        ("procedural", "note"),
    ]
    items = [memory_input(ns, f"{k} {t}", kind=k, type=t) for k, t in pairs]
    items.append(memory_input(ns, "Alice prefers coffee", kind="semantic", type="preference", subject_key="user/drink"))
    written = stack.client.write(items).results
    assert [(_kind(r.memory), r.memory.content) for r in written[:-1]] == [(k, f"{k} {t}") for k, t in pairs]
    assert (_kind(written[-1].memory), written[-1].memory.subject_key) == ("semantic", "user/drink")


def test_cli_write_of_a_preference_with_a_subject_works_end_to_end(stack: Stack, ns: str) -> None:
    prefs = f"{ns}/prefs"
    done = memhub("write", prefs, "Alice prefers tea", "--type", "preference", "--subject", "user/drink", stack=stack)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("wrote ") and f"to {prefs}" in done.stdout
    stored = [(m.content, _kind(m), m.type, m.subject_key) for m in stack.client.list([prefs]).memories]
    assert stored == [("Alice prefers tea", "semantic", pb.MEMORY_TYPE_PREFERENCE, "user/drink")]

    refused = memhub("write", prefs, "Bob prefers milk", "--kind", "episodic", "--type", "preference", stack=stack)
    assert refused.returncode != 0
    assert "leave kind unset or set --kind semantic" in refused.stderr and "MEMORY_KIND" not in refused.stderr

    helped = memhub("write", "--help")
    assert "--kind KIND episodic | semantic | procedural (default: from --type)" in " ".join(helped.stdout.split())
