"""The entity-memory graph and the graph channel, over real gRPC, Postgres and Milvus Lite."""

from __future__ import annotations

import pytest
from conftest import Stack
from sqlalchemy import text

from memhub.client import memory_input
from memhub.db.entity_graph import Neighbour
from memhub.search.graph import spread
from memhub.v1 import memory_pb2 as pb


def _write(stack: Stack, ns: str, contents: list[str]) -> list[str]:
    reply = stack.client.write([memory_input(ns, c) for c in contents], wait_indexed=True)
    assert reply.indexed
    return [r.memory.id for r in reply.results]


def _edges(stack: Stack, memory_id: str) -> set[str]:
    with stack.hub.engine.connect() as conn:
        rows = conn.execute(text("SELECT entity_key FROM entity_edges WHERE memory_id = CAST(:id AS uuid)"), {"id": memory_id})
        return {r[0] for r in rows}


def test_edges_follow_the_memory_through_write_and_forget(stack: Stack, ns: str) -> None:
    (mid,) = _write(stack, ns, ["Then Alice met Bob Kowalski at the ERR-4312 retro"])
    with stack.hub.engine.connect() as conn:
        keys = conn.execute(text("SELECT entity_keys FROM memories WHERE id = CAST(:id AS uuid)"), {"id": mid}).scalar_one()
    assert keys and _edges(stack, mid) == set(keys)
    assert {"alice", "kowalski", "err-4312"} <= set(keys)
    stack.client.forget(ids=[mid], reason="test")
    assert _edges(stack, mid) == set()


def test_graph_channel_reaches_the_second_hop_inside_the_searched_namespaces(stack: Stack, ns: str) -> None:
    first_hop, second_hop, *_ = _write(
        stack,
        ns,
        [
            "Alice's violin teacher is Bob Kowalski.",
            "On Saturdays Kowalski restores vintage sailboats.",
            # Memories about Alice and her violin that fill the first places, none naming Kowalski.
            *[f"Alice practised violin scale number {n} with her teacher today." for n in range(8)],
            "The orchestra rehearses on Thursday evenings.",
        ],
    )
    elsewhere = f"{ns}-other"
    (foreign,) = _write(stack, elsewhere, ["On Sundays Kowalski plays chess in the park."])
    query = "What hobby does Alice's violin teacher have?"
    # Reranking and priors off on both sides: this compares fusion with and without the channel.
    stages = {"rerank": False, "priors": False}
    # The channel is off by default (weight 0): named, it counts with weight 1.
    hits = stack.client.search(query, [ns], top_k=11, explain=True, ranking=stages, channels=["dense", "keyword", "graph"]).hits
    ranks = {h.memory.id: {c.channel: c for c in h.channel_ranks} for h in hits}
    graph = ranks[second_hop].get(pb.RETRIEVAL_CHANNEL_GRAPH)
    assert graph is not None, "the second hop shares only an entity with the first hit"
    assert graph.rank == 1 and graph.contribution > 0  # the rare entity outweighs the one every memory names
    assert pb.RETRIEVAL_CHANNEL_GRAPH not in ranks[first_hop]  # a seed is not proposed again
    assert foreign not in ranks  # the other namespace was not searched, and the graph does not reach it
    plain = stack.client.search(query, [ns], top_k=11, channels=["dense", "keyword"], ranking=stages).hits
    before = next(h.score for h in plain if h.memory.id == second_hop)
    after = next(h.score for h in hits if h.memory.id == second_hop)
    assert after == pytest.approx(before + graph.contribution, rel=1e-5)
    assert [h.memory.id for h in hits].index(second_hop) <= [h.memory.id for h in plain].index(second_hop)


def test_spread_prefers_rare_entities_and_leaves_the_seeds_out() -> None:
    seeds = [("seed", 1.0)]
    seed_keys = {"seed": ("kowalski", "alice")}
    followed = {"kowalski": 2, "alice": 20, "orion": 1}
    found = [
        Neighbour("seed", "kowalski", ("kowalski", "alice")),
        Neighbour("via-rare", "kowalski", ("kowalski",)),
        Neighbour("via-common", "alice", ("alice",)),
        Neighbour("via-query", "orion", ("orion",)),
    ]
    ranked = spread(seeds, seed_keys, ["orion"], followed, found, query_weight=1.0)
    assert [mid for mid, _ in ranked] == ["via-query", "via-rare", "via-common"]
    assert dict(ranked)["via-rare"] > dict(ranked)["via-common"]  # 0.5/2 against 0.5/20
    # Nothing followed, nothing found.
    assert spread(seeds, seed_keys, [], {}, found, query_weight=1.0) == []
