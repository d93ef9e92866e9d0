"""Confidentiality where a policy grants write without read: no oracle, no tampering.

The example fleet policy lets the `write-only` group (mallory) drop reports
into teams/support/inbox/** without reading it, while the support team
(alice, bob: read and write; dave, a lead: also forget) reads it. The rule
these tests hold the hub to: a response never carries anything from a memory
the caller cannot read now; dedup and supersede against unreadable memories
behave as if those memories did not exist, and never change them;
superseding needs the forget right as well.

Real hub over gRPC (the session's `fleet`), real tokens, the shipped policies.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import grpc
import pytest
from conftest import Fleet, rpc_error, write_policy_dir

from memhub.api.convert import write_request
from memhub.audit.writer import AuditWriter
from memhub.client import memory_input
from memhub.core.access import AllowAll
from memhub.core.model import Caller, ForgetRequest, MemoryFilter
from memhub.core.policy_authorizer import PolicyAuthorizer
from memhub.db import memories as memories_db
from memhub.errors import NotFound
from memhub.policy import PolicyStore
from memhub.service import MemoryService
from memhub.v1 import memory_pb2 as pb


def inbox() -> str:
    return f"teams/support/inbox/t{uuid.uuid4().hex[:10]}"


def status_in_postgres(fleet: Fleet, memory_id: str) -> str:
    with fleet.hub.engine.connect() as conn:
        return memories_db.get(conn, memory_id).status.value


def test_rewriting_a_hidden_text_stores_a_new_memory_and_reveals_nothing(fleet: Fleet) -> None:
    ns = inbox()
    secret = f"Incident {uuid.uuid4().hex[:8]}: the payroll export leaked to a public bucket"
    with fleet.client("alice") as alice, fleet.client("mallory") as mallory, fleet.client("dave") as dave:
        hidden = alice.write([memory_input(ns, secret, tags=["sev1", "payroll"], entities=["payroll-export"])]).results[0].memory

        reply = mallory.write([memory_input(ns, secret)])

        got = reply.results[0]
        assert not got.deduplicated
        assert got.memory.id != hidden.id
        assert got.memory.source.agent_id == "mallory"
        assert list(got.memory.tags) == [] and list(got.memory.entities) == []
        text = str(reply)
        for leaked in (hidden.id, "alice", "sev1", "payroll-export"):
            assert leaked not in text
        # The hidden memory is untouched, and the team now sees both reports.
        assert status_in_postgres(fleet, hidden.id) == "active"
        listed = {m.id for m in dave.list([ns]).memories}
        assert listed == {hidden.id, got.memory.id}

        # Writing it again is just as blind: each blind write is a memory of its own.
        again = mallory.write([memory_input(ns, secret)]).results[0]
        assert not again.deduplicated and again.memory.id not in (hidden.id, got.memory.id)

        # A reader still deduplicates into the memory it can see, never into a blind copy.
        readers = alice.write([memory_input(ns, secret)]).results[0]
        assert readers.deduplicated and readers.memory.id == hidden.id


def test_a_subject_key_in_a_write_only_namespace_is_refused_the_same_whether_or_not_it_is_taken(fleet: Fleet) -> None:
    ns = inbox()
    with fleet.client("alice") as alice, fleet.client("mallory") as mallory:
        taken = f"incident/{uuid.uuid4().hex[:8]}"
        free = f"incident/{uuid.uuid4().hex[:8]}"
        owner = memory_input(ns, "Owner of the payroll incident: alice", kind="semantic", type="fact", subject_key=taken)
        hidden = alice.write([owner]).results[0].memory
        answers = []
        for key in (taken, free):
            with pytest.raises(grpc.RpcError) as excinfo:
                mallory.write([memory_input(ns, "Owner of the incident: mallory", kind="semantic", type="fact", subject_key=key)])
            code, details = rpc_error(excinfo)
            answers.append((code, details.replace(key, "KEY")))
        assert answers[0] == answers[1], "the refusal must not depend on what the namespace holds"
        code, details = answers[0]
        assert code == grpc.StatusCode.PERMISSION_DENIED
        assert "subject_key" in details and hidden.id not in details
        assert status_in_postgres(fleet, hidden.id) == "active"


def test_superseding_needs_the_forget_right(fleet: Fleet) -> None:
    ns = f"teams/support/t{uuid.uuid4().hex[:10]}"
    key = f"user/reply-language-{uuid.uuid4().hex[:6]}"
    with fleet.client("alice") as alice, fleet.client("bob") as bob, fleet.client("dave") as dave:
        old = alice.write([memory_input(ns, "Replies in German", kind="semantic", type="preference", subject_key=key)])
        old_id = old.results[0].memory.id

        # bob reads and writes teams/support but may not forget there: no retiring alice's memory.
        with pytest.raises(grpc.RpcError) as excinfo:
            bob.write([memory_input(ns, "Replies in French", kind="semantic", type="preference", subject_key=key)])
        code, details = rpc_error(excinfo)
        assert code == grpc.StatusCode.PERMISSION_DENIED and "forget" in details
        assert status_in_postgres(fleet, old_id) == "active"

        # dave, a lead, may forget there: his write supersedes it.
        new = dave.write([memory_input(ns, "Replies in Spanish", kind="semantic", type="preference", subject_key=key)])
        assert list(new.results[0].memory.links.supersedes) == [old_id]
        assert status_in_postgres(fleet, old_id) == "superseded"

        # A subject key nobody holds yet needs no forget right: there is nothing to retire.
        fresh = bob.write(
            [memory_input(ns, "Timezone is UTC", kind="semantic", type="preference", subject_key=f"{key}-tz")]
        ).results[0]
        assert not fresh.deduplicated and list(fresh.memory.links.supersedes) == []


def test_replaying_a_write_after_someone_forgot_it_repeats_the_first_answer(fleet: Fleet) -> None:
    ns = inbox()
    request_id = f"report-{uuid.uuid4().hex}"
    item = memory_input(ns, f"Printer on floor 3 is on fire {uuid.uuid4().hex[:6]}", tags=["facilities"])
    with fleet.client("mallory") as mallory, fleet.client("dave") as dave:
        first = mallory.write([item], request_id=request_id)
        reason = f"duplicate of INC-{uuid.uuid4().hex[:6]}"
        assert dave.forget(ids=[first.results[0].memory.id], reason=reason).forgotten_ids == [first.results[0].memory.id]

        replay = mallory.write([item], request_id=request_id)

        assert replay.replayed
        assert replay.results[0] == first.results[0], "a replay repeats the first answer, nothing that happened since"
        text = str(replay)
        assert reason not in text and "dave" not in text
        assert not replay.results[0].memory.HasField("tombstone")
        assert status_in_postgres(fleet, first.results[0].memory.id) == "forgotten"

        # A reader of the namespace replaying its own write sees what happened (it could GetMemory it anyway).
    with fleet.client("alice") as alice:
        own = alice.write([item], request_id=f"{request_id}-alice")
        memory_id = own.results[0].memory.id
        with fleet.client("dave") as dave:
            dave.forget(ids=[memory_id], reason=reason)
        seen = alice.write([item], request_id=f"{request_id}-alice").results[0].memory
        assert seen.status == pb.MEMORY_STATUS_FORGOTTEN and seen.tombstone.reason == reason


def test_forgetting_needs_read_as_well(fleet: Fleet, tmp_path: Path) -> None:
    """A grant of forget without read forgets nothing and reveals nothing: the memories look missing.

    Service level on the fleet's stores, with a policy of its own (a janitor group that may forget
    `shared/**` but not read it), decided by the real Cedar engine.
    """
    hub = fleet.hub
    policies = PolicyStore(
        write_policy_dir(
            tmp_path / "policies",
            '@id("janitors-forget-shared")\n'
            'permit(principal in Group::"janitors", action == Action::"forget", resource in Namespace::"shared");\n',
        )
    )
    audit = AuditWriter(hub.engine)
    authorizer = PolicyAuthorizer(policies, audit)
    janitor_view = MemoryService(hub.engine, hub.index, hub.embedder, hub.indexer, authorizer, hub.recorder)
    setup = MemoryService(hub.engine, hub.index, hub.embedder, hub.indexer, AllowAll(), hub.recorder)
    ns = f"shared/t{uuid.uuid4().hex[:10]}"
    try:
        written = setup.write(Caller("writer"), write_request(pb.WriteMemoriesRequest(memories=[memory_input(ns, "kept")])))
        memory_id = written.results[0].memory.id
        janitor = Caller("jan", groups=("janitors",))

        with pytest.raises(NotFound):
            janitor_view.forget(janitor, ForgetRequest(ids=(memory_id,), filter=None, reason="cleanup"))
        forgotten = janitor_view.forget(janitor, ForgetRequest(ids=(), filter=MemoryFilter(namespaces=(ns,)), reason="x")).ids
        assert forgotten == []
        assert status_in_postgres(fleet, memory_id) == "active"
    finally:
        janitor_view.close()
        setup.close()
        audit.flush()
