"""GetMemoryLineage / `memhub why`: why a memory says what it says, across agents, over real gRPC.

The chain (versions), sources (consolidation, citations in derived_from) and derivations, with writers,
times and trace ids; hidden links: a memory derived from one in a namespace the reader cannot read, and
derivations the reader cannot read, which leave no trace at all (their count would let a reader probe).
Open-policy tests run on both Postgres backends (`stack`); the hidden-link tests use the shipped fleet
policies (`fleet`: support reads teams/support, only leads read teams/support/secrets).
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import grpc
import pytest
from conftest import Fleet, Stack, rpc_error

from memhub.client import MemhubClient, memory_input
from memhub.v1 import memory_pb2 as pb

SUPERSEDES, DERIVED_FROM = pb.LINEAGE_RELATION_SUPERSEDES, pb.LINEAGE_RELATION_DERIVED_FROM


def _write(client: MemhubClient, item: pb.MemoryInput, traceparent: str = "") -> pb.Memory:
    saved = client.metadata
    if traceparent:
        client.metadata = (*saved, ("traceparent", traceparent))
    try:
        return client.write([item]).results[0].memory
    finally:
        client.metadata = saved


def _links(reply: pb.GetMemoryLineageResponse) -> set[tuple[str, str, int]]:
    """Links as (from id, to id or 'hidden', relation)."""

    def name(i: int) -> str:
        entry = reply.entries[i]
        return "hidden" if entry.hidden else entry.memory.id

    return {(name(link.from_entry), name(link.to_entry), link.relation) for link in reply.links}


def _ids(reply: pb.GetMemoryLineageResponse) -> list[str]:
    return [e.memory.id for e in reply.entries if not e.hidden]


def test_lineage_shows_versions_sources_and_derivations_with_writers_and_traces(stack: Stack, ns: str) -> None:
    trace = uuid.uuid4().hex
    with stack.client_as("researcher") as researcher, stack.client_as("writer") as writer:
        e1 = _write(researcher, memory_input(ns, "Checkout v2.7 failed on Friday: the build cache was cold", type="event"))
        e2 = _write(researcher, memory_input(ns, "Pre-warming the build cache cut the deploy to 6 minutes", type="outcome"))
        rule = memory_input(
            ns,
            "Pre-warm the build cache before every release",
            type="rule",
            subject_key="release/cache",
            derived_from=[e1.id, e2.id],
        )
        first = _write(writer, rule, traceparent=f"00-{trace}-{'1' * 16}-01")
        revised = _write(
            stack.client,
            memory_input(ns, "Pre-warm the build cache an hour before every release", type="rule", subject_key="release/cache"),
        )
        draft = _write(writer, memory_input(ns, "Release notes: cache pre-warming is now policy", derived_from=[revised.id]))

    reply = stack.client.lineage(revised.id)
    assert not reply.truncated and not any(e.hidden for e in reply.entries)
    assert reply.entries[0].memory.id == revised.id and reply.entries[0].depth == 0
    # Versions cost no step (depth 0); sources and derivations are one step away, in the order found.
    assert [(e.memory.id, e.depth) for e in reply.entries] == [
        (revised.id, 0),
        (first.id, 0),
        (e1.id, 1),
        (e2.id, 1),
        (draft.id, 1),
    ]
    assert _links(reply) == {
        (revised.id, first.id, SUPERSEDES),
        (first.id, e1.id, DERIVED_FROM),
        (first.id, e2.id, DERIVED_FROM),
        (draft.id, revised.id, DERIVED_FROM),
    }
    by_id = {e.memory.id: e.memory for e in reply.entries}
    assert [by_id[i].source.agent_id for i in (revised.id, first.id, e1.id, draft.id)] == [
        "tester",
        "writer",
        "researcher",
        "writer",
    ]
    assert by_id[first.id].source.trace_id == trace and by_id[first.id].source.trace_id_from_caller
    assert by_id[first.id].HasField("created_at") and by_id[first.id].status == pb.MEMORY_STATUS_SUPERSEDED
    # From a source, the way back: what was derived from it with that one's versions, then one step further.
    back = stack.client.lineage(e1.id)
    assert _ids(back) == [e1.id, first.id, revised.id, e2.id, draft.id]
    assert [e.depth for e in back.entries] == [0, 1, 1, 2, 2]
    # And the depth bound: one step from the draft reaches the rule's versions, not the episodes behind them.
    near = stack.client.lineage(draft.id, max_depth=1)
    assert _ids(near) == [draft.id, revised.id, first.id] and near.truncated


def test_lineage_bounds_and_arguments(stack: Stack, ns: str) -> None:
    sources = [_write(stack.client, memory_input(ns, f"Observation {i} about the cache", type="event")) for i in range(6)]
    summary = _write(stack.client, memory_input(ns, "The cache matters", type="lesson", derived_from=[s.id for s in sources]))
    capped = stack.client.lineage(summary.id, max_memories=3)
    assert len(capped.entries) == 3 and capped.truncated
    assert _ids(capped) == [summary.id, sources[0].id, sources[1].id]
    for kwargs, field in (
        ({"max_depth": 6}, "max_depth"),
        ({"max_memories": 201}, "max_memories"),
        ({"max_depth": -1}, "max_depth"),
    ):
        with pytest.raises(grpc.RpcError) as excinfo:
            stack.client.lineage(summary.id, **kwargs)
        code, message = rpc_error(excinfo)
        assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith(f"{field}: "), message
    with pytest.raises(grpc.RpcError) as excinfo:
        stack.client.lineage("not-an-id")
    assert rpc_error(excinfo)[0] == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as excinfo:
        stack.client.lineage(summary.id, namespaces=["Bad Namespace"])
    assert rpc_error(excinfo)[0] == grpc.StatusCode.INVALID_ARGUMENT
    # Unreadable looks missing, as for GetMemory.
    with stack.client_as("outsider", groups=()) as outsider, pytest.raises(grpc.RpcError) as excinfo:
        outsider.lineage(summary.id)
    assert rpc_error(excinfo)[0] == grpc.StatusCode.NOT_FOUND


def test_cli_why(stack: Stack, ns: str) -> None:
    source = _write(stack.client, memory_input(ns, "The user said they are moving to Lisbon", type="event"))
    fact = _write(
        stack.client,
        memory_input(ns, "The user lives in Lisbon", type="fact", subject_key="user/city", derived_from=[source.id]),
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")} | {"MEMHUB_TOKEN": stack.token("tester")}
    done = subprocess.run(
        [sys.executable, "-m", "memhub.cli.main", "why", fact.id, "--hub", stack.address],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith(f"why {fact.id}: 2 memories")
    assert "derived from:" in out and out.index("The user lives in Lisbon") < out.index("moving to Lisbon")
    assert f"#2 {source.id}" in out


# -- hidden links (the shipped fleet policies) -----------------------------------------------------------------


def test_a_source_in_a_namespace_the_reader_cannot_read_is_a_hidden_entry(fleet: Fleet, ns: str) -> None:
    shared, secret = f"teams/support/{ns}", f"teams/support/secrets/{ns}"
    with fleet.client("dave") as dave, fleet.client("alice") as alice, fleet.client("carol") as carol:
        behind = _write(alice, memory_input(shared, "Customer 4312 reported double billing in March", type="event"))
        # A lead's secret note, built on a shared episode, and a shared conclusion built on the secret note.
        note = _write(
            dave,
            memory_input(secret, "Refund code R-7731 was issued to customer 4312", type="fact", derived_from=[behind.id]),
        )
        conclusion = _write(
            dave, memory_input(shared, "Double billing for 4312 is resolved", type="fact", derived_from=[note.id, behind.id])
        )

        seen = alice.lineage(conclusion.id)
        # Alice sees her own episode, and one hidden entry where the secret note is: nothing of it.
        assert [(e.hidden, e.depth) for e in seen.entries] == [(False, 0), (True, 1), (False, 1)]
        assert not seen.entries[1].HasField("memory")
        assert _links(seen) == {(conclusion.id, "hidden", DERIVED_FROM), (conclusion.id, behind.id, DERIVED_FROM)}
        wire = seen.SerializeToString()
        for leaked in (note.id, "R-7731", secret, note.content_hash):
            assert leaked.encode() not in wire
        assert note.created_at.SerializeToString() not in wire
        # Nor do her other reads name it: the conclusion's citations show what she may read, and how many not.
        got = alice.get(conclusion.id)
        assert list(got.links.derived_from) == [behind.id] and got.links.hidden_sources == 1
        for reply in (alice.list([shared]), alice.history(conclusion.id)):
            assert note.id.encode() not in reply.SerializeToString()
        assert list(dave.get(conclusion.id).links.derived_from) == [note.id, behind.id]
        assert dave.get(conclusion.id).links.hidden_sources == 0
        # The hidden note's own links are not followed, and from alice's episode the note leaves no trace:
        # what she sees of it is the same as if the note did not exist (no count to watch).
        assert _ids(alice.lineage(behind.id)) == [behind.id, conclusion.id]

        # Auditors read everything but secrets (fleet.support-secrets-leads-only): hidden for them too.
        assert [e.hidden for e in carol.lineage(conclusion.id).entries] == [False, True, False]
        # A lead, who may read the secret namespace, sees the note and the path through it.
        full = dave.lineage(conclusion.id)
        assert not any(e.hidden for e in full.entries)
        assert _ids(full) == [conclusion.id, note.id, behind.id]
        assert (note.id, behind.id, DERIVED_FROM) in _links(full)
        assert _ids(dave.lineage(behind.id)) == [behind.id, note.id, conclusion.id]
        # A lead narrowing to the shared namespace sees the note as hidden, as alice does.
        narrowed = dave.lineage(conclusion.id, namespaces=[shared])
        assert [e.hidden for e in narrowed.entries] == [False, True, False]
        with pytest.raises(grpc.RpcError) as excinfo:
            dave.lineage(note.id, namespaces=[shared])
        assert rpc_error(excinfo)[0] == grpc.StatusCode.NOT_FOUND
    with fleet.client("eve") as eve, pytest.raises(grpc.RpcError) as excinfo:
        eve.lineage(conclusion.id)
    assert rpc_error(excinfo)[0] == grpc.StatusCode.NOT_FOUND


def test_a_supersede_chain_across_writers_and_a_hidden_derivation(fleet: Fleet, ns: str) -> None:
    shared, secret = f"teams/support/{ns}", f"teams/support/secrets/{ns}"
    subject = "customer/4312/plan"
    with fleet.client("alice") as alice, fleet.client("dave") as dave:
        first = _write(alice, memory_input(shared, "Customer 4312 is on the Basic plan", type="fact", subject_key=subject))
        # Only leads may replace (forget) in the shared namespace: dave revises alice's fact.
        second = _write(dave, memory_input(shared, "Customer 4312 moved to the Pro plan", type="fact", subject_key=subject))
        before = alice.lineage(first.id)
        _write(dave, memory_input(secret, "4312's Pro discount is 40%", type="fact", derived_from=[second.id]))
        after = alice.lineage(first.id)
        full = dave.lineage(first.id)

    assert _ids(before) == [first.id, second.id]
    assert [e.memory.source.agent_id for e in before.entries] == ["alice", "dave"]
    assert _links(before) == {(second.id, first.id, SUPERSEDES)}
    assert before.entries[0].memory.status == pb.MEMORY_STATUS_SUPERSEDED
    assert before.entries[0].memory.links.superseded_by == second.id
    # The secret derivation changes nothing alice can see: same entries, links, truncation.
    assert after == before
    # Dave sees it, one step from the chain.
    assert len(full.entries) == 3 and full.entries[2].depth == 1 and full.entries[2].memory.namespace == secret
