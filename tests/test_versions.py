"""Memory versions and expected versions (issue 13, safe concurrent updates), over real gRPC on both Postgres backends.

A version goes up on every change a reader can see and never on reads; a write with a subject key and a
forget may name the version they expect, and a mismatch is ABORTED with the current version in the message
and in trailing metadata (memhub/client.py version_conflict). The race: two agents with their own tokens
supersede one subject at the same moment, round after round: exactly one wins each round, and the history
holds every winner in order.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from conftest import Stack, rpc_error

from memhub.client import MemhubClient, memory_input, version_conflict
from memhub.v1 import memory_pb2 as pb

SUBJECT = "user/reply-language"
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def _pref(ns: str, text: str, **kw) -> pb.MemoryInput:  # noqa: ANN003
    return memory_input(ns, text, kind="semantic", type="preference", subject_key=SUBJECT, **kw)


def _aborted(call) -> grpc.RpcError:  # noqa: ANN001
    with pytest.raises(grpc.RpcError) as excinfo:
        call()
    assert excinfo.value.code() == grpc.StatusCode.ABORTED, excinfo.value.details()
    return excinfo.value


# -- what changes a version ---------------------------------------------------------------------------------


def test_versions_go_up_on_visible_changes_and_never_on_reads(stack: Stack, ns: str) -> None:
    first = stack.client.write([memory_input(ns, "The build server is named Orion", type="fact")], wait_indexed=True)
    memory = first.results[0].memory
    assert memory.version == 1
    # Reads and recalls change recall statistics, not the version: a search must not break a writer's expectation.
    assert stack.client.search("build server name", [ns]).hits
    stack.hub.recorder.flush()
    read = stack.client.get(memory.id)
    assert read.recall.recall_count >= 1 and read.version == 1
    # The same content again is folded into it (seen_count and confidence up): a visible change.
    again = stack.client.write([memory_input(ns, "The build server is named Orion", type="fact")]).results[0]
    assert again.deduplicated and again.memory.id == memory.id and again.memory.version == 2
    assert stack.client.get(memory.id).version == 2
    gone = stack.client.forget(ids=[memory.id], reason="renamed")
    assert list(gone.forgotten_ids) == [memory.id] and list(gone.versions) == [3]
    assert stack.client.get(memory.id).version == 3


def test_a_supersede_reports_what_it_replaced_and_subject_versions_only_grow(stack: Stack, ns: str) -> None:
    first = stack.client.write([_pref(ns, "Reply in German")]).results[0]
    assert first.memory.version == 1 and not first.HasField("replaced")
    second = stack.client.write([_pref(ns, "Reply in French")]).results[0]
    # What was replaced, at the version it had while it was the active one.
    assert (second.replaced.id, second.replaced.version) == (first.memory.id, 1)
    old = stack.client.get(first.memory.id)
    assert old.status == pb.MEMORY_STATUS_SUPERSEDED and old.version == 2
    # Above every version the subject had: "version N of this subject" names one state.
    assert second.memory.version == 3
    # Forgotten, then written afresh: the new memory still starts above the forgotten one.
    forgotten = stack.client.forget(ids=[second.memory.id], reason="user withdrew it")
    assert list(forgotten.versions) == [4]
    third = stack.client.write([_pref(ns, "Reply in Italian")]).results[0]
    assert not third.HasField("replaced") and third.memory.version == 5
    assert [m.version for m in stack.client.history(third.memory.id).versions] == [2, 4, 5]


# -- expected versions ---------------------------------------------------------------------------------------


def test_supersede_with_a_stale_expected_version_is_aborted_with_the_current_version(stack: Stack, ns: str) -> None:
    first = stack.client.write([_pref(ns, "Reply in German")]).results[0].memory
    second = stack.client.write([_pref(ns, "Reply in French", expected_version=first.version)]).results[0]
    assert second.replaced.id == first.id and second.memory.version == 3

    # Another agent still thinks German (version 1) is current.
    with stack.client_as("bob") as bob:
        err = _aborted(lambda: bob.write([_pref(ns, "Reply in Dutch", expected_version=1)]))
    assert err.details().startswith("memories[0].expected_version: expected version 1 for subject_key")
    assert f"memory {second.memory.id} holds it now, at version 3" in err.details()
    conflict = version_conflict(err)
    assert conflict is not None
    assert (conflict.field, conflict.current_version, conflict.current_id) == (
        "memories[0].expected_version",
        3,
        second.memory.id,
    )
    # Nothing was written: the history is unchanged and French is still active.
    history = stack.client.history(first.id).versions
    assert [m.content for m in history] == ["Reply in German", "Reply in French"]
    assert stack.client.get(second.memory.id).status == pb.MEMORY_STATUS_ACTIVE

    # With the version it now reads, the same write goes through.
    third = stack.client.write([_pref(ns, "Reply in Dutch", expected_version=conflict.current_version)]).results[0]
    assert third.replaced.id == second.memory.id and third.replaced.version == 3


def test_expect_none_creates_only_and_a_mismatch_rolls_the_whole_batch_back(stack: Stack, ns: str) -> None:
    created = stack.client.write([_pref(ns, "Reply in German", expected_version=0)]).results[0].memory
    assert created.version == 1
    note = memory_input(ns, "A note in the same batch")
    err = _aborted(lambda: stack.client.write([note, _pref(ns, "Reply in French", expected_version=0)]))
    conflict = version_conflict(err)
    assert conflict is not None and conflict.field == "memories[1].expected_version"
    assert (conflict.current_version, conflict.current_id) == (1, created.id)
    assert "expected no active memory" in err.details()
    # All or none: the note of the failed batch was not stored either.
    assert not stack.client.list([ns], types=["note"]).memories
    # Once the holder is forgotten, "expected 1" no longer holds: the current version is 0 (none).
    stack.client.forget(ids=[created.id], reason="reset")
    conflict = version_conflict(_aborted(lambda: stack.client.write([_pref(ns, "Reply in French", expected_version=1)])))
    assert conflict is not None and (conflict.current_version, conflict.current_id) == (0, "")
    assert stack.client.write([_pref(ns, "Reply in French", expected_version=0)]).results[0].memory.version == 3


def test_forget_with_an_expected_version(stack: Stack, ns: str) -> None:
    memory = stack.client.write([memory_input(ns, "The on-call phone is 555-0100", type="fact")]).results[0].memory
    stack.client.write([memory_input(ns, "The on-call phone is 555-0100", type="fact")])  # confirmed: version 2
    err = _aborted(lambda: stack.client.forget(ids=[memory.id], reason="stale", expected_versions={memory.id: 1}))
    conflict = version_conflict(err)
    assert conflict is not None
    assert (conflict.field, conflict.current_version, conflict.current_id) == (f"expected_versions[{memory.id}]", 2, memory.id)
    assert "nothing was forgotten" in err.details()
    assert stack.client.get(memory.id).status == pb.MEMORY_STATUS_ACTIVE
    done = stack.client.forget(ids=[memory.id], reason="stale", expected_versions={memory.id: 2})
    assert list(done.forgotten_ids) == [memory.id] and list(done.versions) == [3]
    # A replay of the same request_id answers what the first call did, versions included.
    other = stack.client.write([memory_input(ns, "The spare key is in drawer 3", type="fact")]).results[0].memory
    rid = uuid.uuid4().hex
    first = stack.client.forget(ids=[other.id], reason="moved", request_id=rid, expected_versions={other.id: 1})
    replay = stack.client.forget(ids=[other.id], reason="moved", request_id=rid, expected_versions={other.id: 1})
    assert replay.replayed and list(replay.versions) == list(first.versions) == [2]


def test_transient_conflicts_carry_no_version_metadata() -> None:
    """version_conflict reads only its own metadata: an ABORTED without it stays a retry-as-is conflict."""

    class _Aborted(grpc.RpcError, grpc.Call):
        def code(self):  # noqa: ANN202
            return grpc.StatusCode.ABORTED

        def trailing_metadata(self):  # noqa: ANN202
            return (("retry-after", "1"),)

        def details(self) -> str:
            return "the request conflicted with concurrent writes; retry it"

        initial_metadata = is_active = time_remaining = cancel = add_callback = None  # unused by version_conflict

    assert version_conflict(_Aborted()) is None


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (
            lambda ns: pb.WriteMemoriesRequest(memories=[memory_input(ns, "A plain fact", type="fact", expected_version=1)]),
            "memories[0].expected_version",
        ),
        (
            lambda ns: pb.WriteMemoriesRequest(memories=[_pref(ns, "Reply in German", expected_version=-1)]),
            "memories[0].expected_version",
        ),
        (
            lambda ns: pb.WriteMemoriesRequest(memories=[_pref(ns, "Reply in German", expected_version=2**53 + 1)]),
            "memories[0].expected_version",
        ),
        (
            lambda ns: pb.ForgetMemoriesRequest(
                filter=pb.ForgetFilter(namespace=ns), reason="x", expected_versions={str(uuid.uuid4()): 1}
            ),
            "expected_versions",
        ),
        (
            lambda ns: pb.ForgetMemoriesRequest(ids=[str(uuid.uuid4())], reason="x", expected_versions={str(uuid.uuid4()): 1}),
            "expected_versions[",
        ),
        (lambda ns: pb.ForgetMemoriesRequest(ids=["a"], reason="x", expected_versions={"not-an-id": 1}), "ids[0]"),
    ],
)
def test_bad_expected_versions_are_invalid_arguments_naming_the_field(stack: Stack, ns: str, build, field: str) -> None:  # noqa: ANN001
    request = build(ns)
    method = "WriteMemories" if isinstance(request, pb.WriteMemoriesRequest) else "ForgetMemories"
    with pytest.raises(grpc.RpcError) as excinfo:
        stack.client._call(getattr(stack.client._stub, method), request)
    code, message = rpc_error(excinfo)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith(field), message


def test_forget_expectation_with_zero_or_an_id_outside_ids_is_refused(stack: Stack, ns: str) -> None:
    memory = stack.client.write([memory_input(ns, "The spare key is in drawer 3", type="fact")]).results[0].memory
    with pytest.raises(grpc.RpcError) as excinfo:
        stack.client.forget(ids=[memory.id], reason="x", expected_versions={memory.id: 0})
    code, message = rpc_error(excinfo)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith(f"expected_versions[{memory.id}]: is 0; use 1 to")
    assert stack.client.get(memory.id).status == pb.MEMORY_STATUS_ACTIVE


# -- the race ------------------------------------------------------------------------------------------------

ROUNDS = 12


def _attempt(client: MemhubClient, ns: str, text: str, expected: int, start: threading.Barrier) -> tuple[str, object]:
    start.wait(timeout=30)
    try:
        return "won", client.write([_pref(ns, text, expected_version=expected)]).results[0]
    except grpc.RpcError as err:
        return "aborted", err


def test_two_agents_superseding_one_subject_concurrently_one_wins_each_round(stack: Stack, ns: str) -> None:
    seed = stack.client.write([_pref(ns, "round 0: reply in German")]).results[0].memory
    winners = [seed]
    with stack.client_as("agent-a") as a, stack.client_as("agent-b") as b, ThreadPoolExecutor(2) as pool:
        for n in range(1, ROUNDS + 1):
            # Both read the same current version, then both try to replace it at the same moment.
            current = stack.client.get(winners[-1].id)
            assert current.status == pb.MEMORY_STATUS_ACTIVE
            start = threading.Barrier(2)
            futures = [
                pool.submit(_attempt, client, ns, f"round {n}: reply as {who} wants", current.version, start)
                for who, client in (("agent-a", a), ("agent-b", b))
            ]
            outcomes = [f.result(timeout=60) for f in futures]
            won = [result for state, result in outcomes if state == "won"]
            lost = [err for state, err in outcomes if state == "aborted"]
            assert len(won) == 1 and len(lost) == 1, f"round {n}: {[state for state, _ in outcomes]}"
            winner = won[0]
            assert winner.replaced.id == current.id and winner.replaced.version == current.version
            # The loser is told exactly what holds the subject now: the winner.
            conflict = version_conflict(lost[0])
            assert conflict is not None, lost[0].details()
            assert (conflict.current_id, conflict.current_version) == (winner.memory.id, winner.memory.version)
            winners.append(winner.memory)
    # Nothing lost: every winner is in the history, in order, each superseded by the next.
    history = stack.client.history(winners[-1].id, limit=200)
    assert [m.id for m in history.versions] == [w.id for w in winners]
    assert [m.source.agent_id for m in history.versions][1:] == [w.source.agent_id for w in winners[1:]]
    for older, newer in zip(history.versions, history.versions[1:], strict=False):
        assert older.status == pb.MEMORY_STATUS_SUPERSEDED and older.links.superseded_by == newer.id
        assert list(newer.links.supersedes) == [older.id] and newer.version > older.version
    assert history.versions[-1].status == pb.MEMORY_STATUS_ACTIVE


# -- the CLI ------------------------------------------------------------------------------------------------


def _memhub(stack: Stack, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")} | {"MEMHUB_TOKEN": stack.token("tester")}
    return subprocess.run(
        [sys.executable, "-m", "memhub.cli.main", *args, "--hub", stack.address],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def test_cli_write_and_forget_with_expected_versions_and_citations(stack: Stack, ns: str) -> None:
    pref = ["write", ns, "Reply in German", "--type", "preference", "--subject", SUBJECT, "--no-wait"]
    done = _memhub(stack, *pref, "--expect-version", "0")
    assert done.returncode == 0, done.stderr
    first = re.fullmatch(rf"wrote ({UUID}) to {ns} \(version 1\)\n", done.stdout)
    assert first, done.stdout
    stale = _memhub(stack, "write", ns, "Reply in French", "--type", "preference", "--subject", SUBJECT, "--expect-version", "0")
    assert stale.returncode == 1 and "ABORTED: memories[0].expected_version" in stale.stderr
    assert "(the current version is 1; read it again before retrying)" in stale.stderr
    source = stack.client.write([memory_input(ns, "The user wrote to us in French all week", type="event")]).results[0].memory
    done = _memhub(
        stack,
        "write",
        ns,
        "Reply in French",
        "--type",
        "preference",
        "--subject",
        SUBJECT,
        "--expect-version",
        "1",
        "--cite",
        source.id,
    )
    assert done.returncode == 0, done.stderr
    second = re.fullmatch(rf"wrote ({UUID}) to {ns} \(version 3\) \(replaced {first.group(1)}, version 1\)\n", done.stdout)
    assert second, done.stdout
    assert list(stack.client.get(second.group(1)).links.derived_from) == [source.id]

    refused = _memhub(stack, "forget", second.group(1), "--reason", "test", "--expect-version", "2")
    assert refused.returncode == 1 and "the current version is 3" in refused.stderr
    done = _memhub(stack, "forget", second.group(1), "--reason", "test", "--expect-version", "3")
    assert done.returncode == 0 and done.stdout == f"forgot 1 memory\n  {second.group(1)} (tombstone version 4)\n", done.stdout
    for bad in (
        ["forget", first.group(1), source.id, "--reason", "x", "--expect-version", "1"],
        [*pref, "--expect-version", "-1"],
    ):
        wrong = _memhub(stack, *bad)
        assert wrong.returncode == 2 and "--expect-version" in wrong.stderr, wrong.stderr
