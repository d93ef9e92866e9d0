"""The graph channel: memories one entity away from the best hits and the query's own entities.

Entities and the memories that carry them form a bipartite graph (memhub/db/tables/entity_graph.py). A
multi-hop question names one thing and needs a memory about another ("What did the sister of Alice's
teacher study?"): the first hop is usually among the fused hits, the second shares an entity with it, not
words with the question. So the channel spreads activation, bounded to two steps, from

- the query's entities (weight ``query_weight`` each), and
- the ``seeds`` best fused hits (weight: their fused score over the best one's, shared among their entities),

to the entities, and from each entity to the memories carrying it, divided by its degree (a personalised
PageRank step: an entity that links everything links nothing in particular). Entities carried by more than
``max_degree`` memories of the readable namespaces are not followed, at most ``max_entities`` are, and the
seeds themselves are left out of the list (the channel proposes what fusion did not rank first). The work per
search is bounded by these settings, never by the data or the request: two indexed statements reading at most
``max_entities * max_degree`` edges.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from sqlalchemy import Connection

from memhub import telemetry
from memhub.core.model import Channel
from memhub.db import entity_graph
from memhub.search.channels import Ranked
from memhub.search.fusion import Ranking
from memhub.search.query import Understood
from memhub.search.settings import GraphSettings

_tracer = telemetry.tracer(__name__)


def spread(
    seeds: Sequence[tuple[str, float]],
    seed_keys: Mapping[str, Sequence[str]],
    query_keys: Sequence[str],
    followed: Mapping[str, int],
    neighbours: Sequence[entity_graph.Neighbour],
    query_weight: float,
) -> Ranked:
    """Memories ranked by the activation they receive (best first, ties by id), seeds left out.

    ``seeds``: (memory id, weight); ``followed``: the entities followed, with their degrees."""
    activation: dict[str, float] = defaultdict(float)
    for key in query_keys:
        if key in followed:
            activation[key] += query_weight
    for mid, weight in seeds:
        keys = [k for k in dict.fromkeys(seed_keys.get(mid, ())) if k in followed]
        for key in keys:
            activation[key] += weight / len(keys)
    seed_ids = {mid for mid, _ in seeds}
    scores: dict[str, float] = defaultdict(float)
    for n in neighbours:
        if n.memory_id not in seed_ids and n.entity_key in activation:
            scores[n.memory_id] += activation[n.entity_key] / max(1, followed[n.entity_key])
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


def _entities_to_follow(
    query_keys: Sequence[str], seeds: Sequence[str], seed_keys: Mapping[str, Sequence[str]], limit: int
) -> list[str]:
    ordered = dict.fromkeys(query_keys)
    for mid in seeds:
        ordered.update(dict.fromkeys(seed_keys.get(mid, ())))
    return list(ordered)[:limit]


def add_channel(conn: Connection, settings: GraphSettings, asked: Understood, ranking: Ranking, readable: list[str]) -> Ranking:
    """``ranking`` with the graph channel's list fused in (as it was when the channel is off or finds nothing)."""
    if not _wanted(asked) or not ranking.fused:
        return ranking
    top = ranking.fused[: settings.seeds]
    best = top[0].score or 1.0
    seeds = [(f.id, f.score / best) for f in top]
    with _tracer.start_as_current_span("search.graph", attributes={"memhub.search.seeds": len(seeds)}) as span:
        seed_keys = entity_graph.keys_of(conn, [mid for mid, _ in seeds], readable)
        wanted = _entities_to_follow(asked.entity_keys, [mid for mid, _ in seeds], seed_keys, settings.max_entities)
        # Counted one past the cap, so "at the cap" and "over it" differ.
        degrees = entity_graph.degrees(conn, wanted, readable, settings.max_degree + 1)
        followed = {k: d for k, d in degrees.items() if 0 < d <= settings.max_degree}
        found = entity_graph.neighbours(conn, list(followed), asked.query.filter, readable)
        ranked = spread(seeds, seed_keys, asked.entity_keys, followed, found, settings.query_weight)[: asked.depth]
        span.set_attributes({"memhub.search.graph_entities": len(followed), "memhub.search.graph_hits": len(ranked)})
    return ranking.adding(Channel.GRAPH, ranked) if ranked else ranking


def _wanted(asked: Understood) -> bool:
    return Channel.GRAPH in asked.query.channels and asked.weights.get(Channel.GRAPH, 0.0) > 0
