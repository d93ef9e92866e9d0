"""Who sees which retrieval-log entries and may mark what, under the shipped fleet policies
(policies/default.cedar + examples/fleet.cedar): support reads teams/support, only leads (dave) the secrets
below it, auditors (carol) read everything but administer nothing, admins (root) administer but read nothing there,
the write-only group (mallory) drops into the inbox and reads nothing."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import grpc
import pytest
from conftest import Fleet, eventually, rpc_error

from memhub.client import MemhubClient, memory_input
from memhub.v1 import memory_pb2 as pb


def _entry(client: MemhubClient, search_id: str, since: datetime, **kw: object) -> pb.RetrievalLogEntry:
    found: list[pb.RetrievalLogEntry] = []

    def check() -> bool:
        token = ""
        while True:
            page = client.retrieval_log(since=since, page_size=50, page_token=token, **kw)
            found[:] = [e for e in page.entries if e.search_id == search_id]
            token = page.next_page_token
            if found or not token:
                return bool(found)

    eventually(check, f"search {search_id} is in the retrieval log")
    return found[0]


def test_entries_are_the_callers_own_unless_admin_and_show_only_what_the_reader_may_read(fleet: Fleet, ns: str) -> None:
    since = datetime.now(timezone.utc) - timedelta(minutes=1)
    shared, secret = f"teams/support/{ns}", f"teams/support/secrets/{ns}"
    with fleet.client("dave") as dave, fleet.client("alice") as alice, fleet.client("carol") as carol:
        with fleet.client("root") as root:
            written = dave.write(
                [
                    memory_input(shared, "Refunds over 500 EUR need a lead's approval"),
                    memory_input(secret, "The refund override code is in the vault"),
                ],
                wait_indexed=True,
            )
            shared_id, secret_id = (r.memory.id for r in written.results)
            reply = dave.search("refund approval override", [shared, secret], top_k=5)
            assert {h.memory.id for h in reply.hits} == {shared_id, secret_id}

            # dave sees his own search in full.
            own = _entry(dave, reply.search_id, since)
            assert [h.memory_id for h in own.hits] == [h.memory.id for h in reply.hits] and own.hidden_hits == 0

            # Anyone else's entries need the admin action: a support colleague and an auditor are refused.
            for client in (alice, carol):
                for kw in ({"agent_id": "dave"}, {"all_agents": True}):
                    with pytest.raises(grpc.RpcError) as refused:
                        client.retrieval_log(**kw)
                    code, message = rpc_error(refused)
                    assert code == grpc.StatusCode.PERMISSION_DENIED and "admin" in message
            # And alice's own log does not hold dave's search.
            assert reply.search_id not in {e.search_id for e in alice.retrieval_log(since=since, page_size=50).entries}

            # root may read the log but not teams/support: the entry is there, its hits are not, not even their ids.
            seen_by_root = _entry(root, reply.search_id, since, agent_id="dave")
            assert list(seen_by_root.hits) == [] and seen_by_root.hidden_hits == 2
            assert shared_id not in str(seen_by_root) and secret_id not in str(seen_by_root)
            assert reply.search_id in {
                e.search_id for e in root.retrieval_log(since=since, all_agents=True, page_size=50).entries
            }


def test_marks_need_read_rights_on_each_memory(fleet: Fleet, ns: str) -> None:
    shared, secret, inbox = f"teams/support/{ns}", f"teams/support/secrets/{ns}", f"teams/support/inbox/{ns}"
    with fleet.client("dave") as dave, fleet.client("alice") as alice, fleet.client("mallory") as mallory:
        shared_id, secret_id = (
            r.memory.id
            for r in dave.write(
                [memory_input(shared, "Escalate outages to the duty lead"), memory_input(secret, "Duty lead pager PIN is 4411")]
            ).results
        )
        [dropped_id] = [r.memory.id for r in mallory.write([memory_input(inbox, "Customer 17 reports a broken invoice")]).results]
        assert alice.mark_used([shared_id]).counted == 1
        # A memory alice cannot read (secrets), and one mallory wrote but may not read (the inbox), look missing.
        for client, mid in ((alice, secret_id), (mallory, dropped_id)):
            with pytest.raises(grpc.RpcError) as refused:
                client.mark_used([mid])
            assert rpc_error(refused) == (grpc.StatusCode.NOT_FOUND, f"memory_ids[0]: memory {mid} not found; nothing was marked")
        fleet.hub.recorder.flush()
        assert dave.get(secret_id).recall.use_count == 0 and dave.get(dropped_id).recall.use_count == 0
        assert dave.get(shared_id).recall.use_count == 1
