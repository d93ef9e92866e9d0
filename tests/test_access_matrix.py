"""Every agent x every namespace x every memory RPC, checked against a hand-written rights table: zero leaks.

The table below is written from the policy files' intent, independently of
the engine; the test also checks that the engine agrees with it, so a
policy edit that changes rights fails here until the table says so too.
"""

from __future__ import annotations

import uuid

import grpc
import pytest
from conftest import GROUPS, Fleet
from memhub.v1 import memory_pb2 as pb

from hub.api.convert import write_request
from hub.client import MemhubClient, memory_input
from hub.core.access import AllowAll
from hub.core.model import Caller
from hub.core.service import MemoryService
from hub.db import memories as memories_db
from hub.policy import Principal

NAMESPACES = ["agents/alice", "agents/bob", "agents/eve", "teams/support", "teams/support/secrets", "teams/other"]
AGENTS = ["alice", "bob", "dave", "carol", "root", "eve"]

# agent -> namespace -> rights ("r" read, "w" write, "f" forget)
RIGHTS: dict[str, dict[str, str]] = {
    "alice": {"agents/alice": "rwf", "teams/support": "rw"},
    "bob": {"agents/bob": "rwf", "teams/support": "rw"},
    "dave": {"teams/support": "rwf", "teams/support/secrets": "rwf"},
    "carol": {"agents/alice": "r", "agents/bob": "r", "agents/eve": "r", "teams/support": "r", "teams/other": "r"},
    "root": {},
    "eve": {"agents/eve": "rwf"},
}
ACTIONS = {"r": "read", "w": "write", "f": "forget"}
MARKER = "matrixseed"


def can(agent: str, ns: str, right: str) -> bool:
    return right in RIGHTS[agent].get(ns, "")


def under(ns: str, root: str) -> bool:
    return ns == root or ns.startswith(root + "/")


@pytest.fixture(scope="module")
def seeds(fleet: Fleet) -> dict[str, dict[str, str]]:
    """Per namespace: a memory everyone tries to read, and one forget target per agent (written unchecked)."""
    hub = fleet.hub
    setup = MemoryService(hub.engine, hub.index, hub.embedder, hub.indexer, AllowAll(), hub.recorder)
    tag = uuid.uuid4().hex[:8]
    out: dict[str, dict[str, str]] = {}
    for ns in NAMESPACES:
        inputs = [memory_input(ns, f"{MARKER} {tag} shared seed of {ns}")]
        inputs += [memory_input(ns, f"forget target of {agent} in {ns} {tag}") for agent in AGENTS]
        result = setup.write(Caller("seeder"), write_request(pb.WriteMemoriesRequest(memories=inputs)), wait_indexed=True)
        ids = [o.memory.id for o in result.results]
        out[ns] = {"seed": ids[0], **{agent: mid for agent, mid in zip(AGENTS, ids[1:], strict=True)}}
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
    with fleet.hub.engine.connect() as conn:
        for ns in NAMESPACES:
            record = memories_db.get(conn, seeds[ns][agent])
            assert record.status.value == ("forgotten" if can(agent, ns, "f") else "active"), (agent, ns)
