"""`memhub import` sends a batch again when the hub was only slow or away, and counts a replay of its own attempt
as what it stored (memhub/cli/import_retry.py), against a real hub: real deadlines, real request-id replays."""

from __future__ import annotations

import uuid

import grpc
import pytest
from conftest import Stack

from memhub.cli.import_retry import ATTEMPTS, write_with_retries
from memhub.cli.import_tally import ImportTally
from memhub.client import MemhubClient, memory_input


def test_a_batch_that_ran_out_of_time_is_sent_again_and_stored_once(stack: Stack, ns: str) -> None:
    memories = [memory_input(ns, f"Runbook step {i}: drain the node before the kernel upgrade") for i in range(3)]
    request_id = f"retry-{uuid.uuid4().hex}"
    pauses: list[float] = []
    # The first attempt's deadline has passed before it is sent (a real DEADLINE_EXCEEDED from grpc); the second
    # is an ordinary call with the same request id.
    with MemhubClient(stack.address, token=stack.token("tester"), timeout_s=1e-9) as hurried:
        attempts = iter([hurried, stack.client])
        reply, retried = write_with_retries(lambda: next(attempts).write(memories, request_id=request_id), 1, pauses.append)
    assert retried and pauses == [1.0]
    tally = ImportTally()
    tally.add(reply, ours=retried)
    assert tally.stored == 3 and tally.already_imported == 0
    listed = stack.client.list([ns]).memories
    assert sorted(m.content for m in listed) == sorted(m.content for m in memories)


def test_a_replay_answering_this_runs_own_attempt_counts_as_stored_not_as_an_earlier_run(stack: Stack, ns: str) -> None:
    memories = [memory_input(ns, "The staging cluster is rebuilt every Sunday night")]
    request_id = f"retry-{uuid.uuid4().hex}"
    first = stack.client.write(memories, request_id=request_id)
    again = stack.client.write(memories, request_id=request_id)
    assert not first.replayed and again.replayed
    ours, earlier = ImportTally(), ImportTally()
    ours.add(again, ours=True)
    earlier.add(again)
    assert (ours.stored, ours.already_imported) == (1, 0)
    assert (earlier.stored, earlier.already_imported) == (0, 1)


def test_a_refusal_is_not_retried_and_transient_failures_stop_after_the_last_attempt(stack: Stack) -> None:
    pauses: list[float] = []
    refused = [memory_input("agents/someone-else/notes", "not mine to write")]
    with MemhubClient(stack.address, token=stack.token("nobody-in-particular", groups=())) as outsider:
        with pytest.raises(grpc.RpcError) as denied:
            write_with_retries(lambda: outsider.write(refused), 1, pauses.append)
    assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED and pauses == []
    with MemhubClient(stack.address, token=stack.token("tester"), timeout_s=1e-9) as hurried:
        with pytest.raises(grpc.RpcError) as late:
            write_with_retries(lambda: hurried.write([memory_input("tx", "never in time")]), 7, pauses.append)
    assert late.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert pauses == [1.0, 2.0, 4.0][: ATTEMPTS - 1]
