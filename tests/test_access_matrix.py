"""Every agent x every namespace x every memory RPC, checked against a hand-written rights table: zero leaks.

The table below is written from the policy files' intent, independently of
the engine; the test also checks that the engine agrees with it, so a
policy edit that changes rights fails here until the table says so too.

Writes are checked for what they reveal as well as whether they are allowed:
rewriting a stored text, reusing a subject key and replaying a request after
its memory was forgotten must tell an agent nothing about memories it cannot
read (mallory, of the write-only group, writes the support inbox blind).
"""

from __future__ import annotations

import uuid

import grpc
import pytest
from conftest import GROUPS, Fleet

from memhub.api.convert import write_request
from memhub.client import MemhubClient, memory_input
from memhub.core.access import AllowAll
from memhub.core.model import Caller
from memhub.db import memories as memories_db
from memhub.policy import Principal
from memhub.service import MemoryService
from memhub.v1 import memory_pb2 as pb

NAMESPACES = [
    "agents/alice",
    "agents/bob",
    "agents/eve",
    "teams/support",
    "teams/support/secrets",
    "teams/support/inbox",
    "teams/other",
]
AGENTS = ["alice", "bob", "dave", "carol", "root", "eve", "mallory"]

# agent -> namespace -> rights ("r" read, "w" write, "f" forget)
RIGHTS: dict[str, dict[str, str]] = {
    "alice": {"agents/alice": "rwf", "teams/support": "rw", "teams/support/inbox": "rw"},
    "bob": {"agents/bob": "rwf", "teams/support": "rw", "teams/support/inbox": "rw"},
    "dave": {"teams/support": "rwf", "teams/support/secrets": "rwf", "teams/support/inbox": "rwf"},
    "carol": {
        "agents/alice": "r",
        "agents/bob": "r",
        "agents/eve": "r",
        "teams/support": "r",
        "teams/support/inbox": "r",
        "teams/other": "r",
    },
    "root": {},
    "eve": {"agents/eve": "rwf"},
    "mallory": {"teams/support/inbox": "w"},
}
ACTIONS = {"r": "read", "w": "write", "f": "forget"}
MARKER = "matrixseed"


def can(agent: str, ns: str, right: str) -> bool:
    return right in RIGHTS[agent].get(ns, "")


def under(ns: str, root: str) -> bool:
    return ns == root or ns.startswith(root + "/")


def seed_text(tag: str, ns: str) -> str:
    return f"{MARKER} {tag} shared seed of {ns}"


def subject_of(agent: str) -> str:
    return f"matrix/{agent}"


@pytest.fixture(scope="module")
def seeds(fleet: Fleet) -> dict[str, dict[str, str]]:
    """Per namespace: a memory everyone tries to read, and per agent a forget target and a memory
    under the subject key that agent will write (written unchecked)."""
    hub = fleet.hub
    setup = MemoryService(hub.engine, hub.index, hub.embedder, hub.indexer, AllowAll(), hub.recorder)
    tag = uuid.uuid4().hex[:8]
    out: dict[str, dict[str, str]] = {}
    for ns in NAMESPACES:
        inputs = [memory_input(ns, seed_text(tag, ns))]
        inputs += [memory_input(ns, f"forget target of {agent} in {ns} {tag}") for agent in AGENTS]
        inputs += [
            memory_input(ns, f"what {agent} knows in {ns} {tag}", kind="semantic", type="fact", subject_key=subject_of(agent))
            for agent in AGENTS
        ]
        result = setup.write(Caller("seeder"), write_request(pb.WriteMemoriesRequest(memories=inputs)), wait_indexed=True)
        ids = [o.memory.id for o in result.results]
        n = len(AGENTS)
        out[ns] = {
            "seed": ids[0],
            "tag": tag,
            **{agent: mid for agent, mid in zip(AGENTS, ids[1 : 1 + n], strict=True)},
            **{f"subject:{agent}": mid for agent, mid in zip(AGENTS, ids[1 + n :], strict=True)},
        }
    setup.close()
    return out


def test_the_rights_table_matches_the_policy_engine(fleet: Fleet) -> None:
    engine = fleet.hub.policies.current()
    mismatches = [
        (agent, ns, action)
        for agent in AGENTS
        for ns in NAMESPACES
        for right, action in ACTIONS.items()
        if engine.decide(Principal(agent, GROUPS[agent]), action, ns).allowed != can(agent, ns, right)
    ]
    assert mismatches == []


def _error(call) -> grpc.StatusCode | None:  # noqa: ANN001
    try:
        call()
    except grpc.RpcError as exc:
        return exc.code()
    return None


@pytest.mark.parametrize("agent", AGENTS)
def test_every_rpc_enforces_the_table(fleet: Fleet, seeds: dict[str, dict[str, str]], agent: str) -> None:
    client: MemhubClient
    with fleet.client(agent) as client:
        readable = {ns for ns in NAMESPACES if can(agent, ns, "r")}
        seed_ns = {seeds[ns]["seed"]: ns for ns in NAMESPACES}

        # Search over everything the agent may read: exactly the readable seeds, nothing else.
        hits = client.search(MARKER, [], top_k=100, channels=["keyword"]).hits
        found = {seed_ns[h.memory.id] for h in hits if h.memory.id in seed_ns}
        assert found == readable
        assert all(
            any(under(h.memory.namespace, ns) for ns in readable) or h.memory.namespace.startswith(f"agents/{agent}")
            for h in hits
        )

        for ns in NAMESPACES:
            expected = {n for n in readable if under(n, ns)}
            got = {
                seed_ns[h.memory.id]
                for h in client.search(MARKER, [ns], top_k=100, channels=["keyword"]).hits
                if h.memory.id in seed_ns
            }
            assert got == expected, ("search", agent, ns)
            listed = {seed_ns[m.id] for m in client.list([ns], page_size=500).memories if m.id in seed_ns}
            assert listed == expected, ("list", agent, ns)

            code = _error(lambda: client.get(seeds[ns]["seed"]))
            assert code == (None if can(agent, ns, "r") else grpc.StatusCode.NOT_FOUND), ("get", agent, ns)

            code = _error(lambda: client.write([memory_input(ns, f"{agent} writes to {ns} {uuid.uuid4().hex}")]))
            assert code == (None if can(agent, ns, "w") else grpc.StatusCode.PERMISSION_DENIED), ("write", agent, ns)
            if can(agent, ns, "w"):
                _check_what_writes_reveal(fleet, client, agent, ns, seeds[ns])

            code = _error(lambda: client.forget(ids=[seeds[ns][agent]], reason="matrix"))
            if can(agent, ns, "f"):
                assert code is None, ("forget", agent, ns)
            else:
                # Seeing a memory you may not forget is explained; an unreadable one simply does not exist.
                assert code == (grpc.StatusCode.PERMISSION_DENIED if can(agent, ns, "r") else grpc.StatusCode.NOT_FOUND), (
                    "forget",
                    agent,
                    ns,
                )

    # Refused forgets changed nothing; allowed ones left tombstones (read straight from Postgres).
    # Only an agent that may read, write and forget a namespace may retire a memory there by subject key.
    with fleet.hub.engine.connect() as conn:
        for ns in NAMESPACES:
            record = memories_db.get(conn, seeds[ns][agent])
            assert record.status.value == ("forgotten" if can(agent, ns, "f") else "active"), (agent, ns)
            assert memories_db.get(conn, seeds[ns]["seed"]).status.value == "active", (agent, ns)
            retire = all(can(agent, ns, right) for right in "rwf")
            subject = memories_db.get(conn, seeds[ns][f"subject:{agent}"])
            assert subject.status.value == ("superseded" if retire else "active"), ("supersede", agent, ns)


def _check_what_writes_reveal(fleet: Fleet, client: MemhubClient, agent: str, ns: str, seeds: dict[str, str]) -> None:
    """Dedup, supersede and replay answer an agent that cannot read ``ns`` as if the namespace held nothing."""
    readable = can(agent, ns, "r")
    # Dedup: the seed's exact text. A reader gets the seed back; a blind writer gets a new memory of its own.
    result = client.write([memory_input(ns, seed_text(seeds["tag"], ns))]).results[0]
    if readable:
        assert result.deduplicated and result.memory.id == seeds["seed"], ("dedup", agent, ns)
    else:
        assert not result.deduplicated and result.memory.id != seeds["seed"], ("dedup", agent, ns)
        assert result.memory.source.agent_id == agent, ("dedup", agent, ns)

    # Supersede: the subject key of a stored memory. Needs read (a blind writer is refused whatever is
    # stored) and forget; the old memory stays active unless both are there (checked from Postgres above).
    pref = memory_input(ns, f"{agent} restates {uuid.uuid4().hex}", kind="semantic", type="fact", subject_key=subject_of(agent))
    code = _error(lambda: client.write([pref]))
    retire = readable and can(agent, ns, "f")
    assert code == (None if retire else grpc.StatusCode.PERMISSION_DENIED), ("supersede", agent, ns)

    # Replay after someone else forgot the memory: a reader sees the tombstone, a blind writer its first answer.
    request_id = f"matrix-{uuid.uuid4().hex}"
    item = memory_input(ns, f"{agent} reports {uuid.uuid4().hex}")
    first = client.write([item], request_id=request_id).results[0].memory
    cleaner, secret_reason = f"cleaner{uuid.uuid4().hex[:8]}", f"reason-{uuid.uuid4().hex}"
    with fleet.hub.engine.begin() as conn:
        assert memories_db.forget(conn, [first.id], Caller(cleaner), secret_reason) == [first.id]
    replay = client.write([item], request_id=request_id)
    assert replay.replayed, ("replay", agent, ns)
    again = replay.results[0].memory
    if readable:
        assert again.status == pb.MEMORY_STATUS_FORGOTTEN and again.tombstone.reason == secret_reason, ("replay", agent, ns)
    else:
        assert again.status == pb.MEMORY_STATUS_ACTIVE and again.content == first.content, ("replay", agent, ns)
        assert secret_reason not in str(replay) and cleaner not in str(replay), ("replay", agent, ns)
