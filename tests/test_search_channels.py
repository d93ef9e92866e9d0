"""The entity, time and expansion stages of search, over real gRPC, Postgres and Milvus Lite."""

from __future__ import annotations

from datetime import datetime, timezone

from conftest import Stack
from sqlalchemy import text

from memhub.client import memory_input
from memhub.v1 import memory_pb2 as pb


def _write(stack: Stack, ns: str, items: list[dict]) -> list[str]:
    reply = stack.client.write([memory_input(ns, **item) for item in items], wait_indexed=True)
    assert reply.indexed
    return [r.memory.id for r in reply.results]


def _channels(hit: pb.SearchHit) -> dict[int, pb.ChannelRank]:
    return {c.channel: c for c in hit.channel_ranks}


def test_entity_channel_matches_named_things_rarer_first(stack: Stack, ns: str) -> None:
    ids = _write(
        stack,
        ns,
        [
            {"content": "Then the pipeline broke with ERR-4312 on the Falcon cluster"},
            {"content": "Then the Falcon cluster was upgraded"},
            {"content": "Then the Falcon cluster got new disks"},
            {"content": "Notes from the retro", "entities": ["Project Nightjar"]},
        ],
    )
    hits = stack.client.search("what broke with ERR-4312 on Falcon?", [ns], channels=["entity"], explain=True).hits
    assert hits[0].memory.id == ids[0]  # both entities, one of them rare
    assert set(h.memory.id for h in hits) == set(ids[:3])
    first = _channels(hits[0])[pb.RETRIEVAL_CHANNEL_ENTITY]
    assert first.rank == 1 and first.contribution > 0
    # The writer's own entities count, though the content does not name them.
    named = stack.client.search("status of Project Nightjar", [ns], channels=["entity"]).hits
    assert [h.memory.id for h in named] == [ids[3]]


def test_forgetting_erases_entity_keys(stack: Stack, ns: str) -> None:
    mid = _write(stack, ns, [{"content": "Then Zanzibar ran the migration"}])[0]
    stack.client.forget(ids=[mid], reason="test")
    with stack.hub.engine.connect() as conn:
        keys = conn.execute(text("SELECT entity_keys FROM memories WHERE id = CAST(:id AS uuid)"), {"id": mid}).scalar_one()
    assert keys == []
    assert stack.client.search("Zanzibar", [ns], channels=["entity"]).hits == []


def test_time_channel_boosts_memories_inside_the_named_window(stack: Stack, ns: str) -> None:
    may, january = _write(
        stack,
        ns,
        [
            {"content": "We reviewed the budget with finance", "occurred_at": datetime(2023, 5, 10, tzinfo=timezone.utc)},
            {"content": "We reviewed the budget with finance again", "occurred_at": datetime(2023, 1, 10, tzinfo=timezone.utc)},
        ],
    )
    hits = stack.client.search("budget review in May 2023", [ns], explain=True).hits
    assert hits[0].memory.id == may
    assert pb.RETRIEVAL_CHANNEL_TIME in _channels(hits[0]) and pb.RETRIEVAL_CHANNEL_TIME not in _channels(hits[1])
    # Relative expressions are read against as_of: "last month" of mid-February 2023 is January.
    req = pb.SearchMemoriesRequest(query="the budget review last month", namespaces=[ns], explain=True)
    req.as_of.FromDatetime(datetime(2023, 2, 15, tzinfo=timezone.utc))
    replay = stack.client._call(stack.client._stub.SearchMemories, req).hits
    assert replay[0].memory.id == january and pb.RETRIEVAL_CHANNEL_TIME in _channels(replay[0])
    # Without the time channel nothing is boosted.
    plain = stack.client.search("budget review in May 2023", [ns], channels=["dense", "keyword"], explain=True).hits
    assert all(pb.RETRIEVAL_CHANNEL_TIME not in _channels(h) for h in plain)


def test_expansion_reaches_evidence_that_shares_words_only_with_the_first_hit(stack: Stack, ns: str) -> None:
    adopted, beach, _ = _write(
        stack,
        ns,
        [
            {"content": "Then Caroline adopted a puppy and named him Rex"},
            {"content": "Then Rex loves running at Ocean Beach every morning"},
            {"content": "Then the team planned the quarterly offsite"},
        ],
    )
    on = stack.client.search("where does Caroline's puppy like to run?", [ns], explain=True, ranking={"expansion": True}).hits
    assert {adopted, beach} == {h.memory.id for h in on[:2]}
    assert pb.RETRIEVAL_CHANNEL_EXPANSION in _channels(next(h for h in on if h.memory.id == beach))
    off = stack.client.search("where does Caroline's puppy like to run?", [ns], explain=True, ranking={"expansion": False}).hits
    assert all(pb.RETRIEVAL_CHANNEL_EXPANSION not in _channels(h) for h in off)
