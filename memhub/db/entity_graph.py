"""Reading the entity-memory graph (memhub/db/tables/entity_graph.py) for the graph channel (memhub/search/graph.py).

Two statements per search, each bounded by the caller's limits and never by the data: the degree of each
entity (its edges counted up to a cap, in the caller's readable namespaces only), then the servable memories
matching the search's filter that carry the entities under the cap, with their own keys. An entity carried by
more memories than the cap (a speaker's name on every turn) says little about any of them and is not followed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, Integer, Text, any_, bindparam, select, text
from sqlalchemy.dialects.postgresql import ARRAY, UUID

from memhub.core.model import MemoryFilter
from memhub.db.memory_rows import filter_conditions, filter_params, servable_condition
from memhub.db.schema import entity_edges, memories

_DEGREES = text(
    """
    SELECT k.key, (SELECT count(*) FROM (
        SELECT 1 FROM entity_edges e WHERE e.namespace = ANY(:namespaces) AND e.entity_key = k.key LIMIT :cap
    ) c) FROM unnest(CAST(:keys AS text[])) AS k(key)
    """
).bindparams(bindparam("namespaces", type_=ARRAY(Text)), bindparam("keys", type_=ARRAY(Text)), bindparam("cap", type_=Integer))


@dataclass(frozen=True)
class Neighbour:
    memory_id: str
    entity_key: str
    """The followed entity that reaches it."""
    keys: tuple[str, ...]
    """All the entity keys the memory carries."""


def degrees(conn: Connection, keys: Sequence[str], allowed: Sequence[str], cap: int) -> dict[str, int]:
    """Each key's edge count in ``allowed`` namespaces, counted up to ``cap`` (so at most ``cap`` index rows each)."""
    if not keys or not allowed:
        return {}
    rows = conn.execute(_DEGREES, {"namespaces": list(allowed), "keys": list(keys), "cap": cap}).all()
    return {str(r[0]): int(r[1]) for r in rows}


def neighbours(conn: Connection, keys: Sequence[str], flt: MemoryFilter, allowed: Sequence[str]) -> list[Neighbour]:
    """The servable memories of ``allowed`` matching ``flt`` that carry one of ``keys`` (one row per key carried).

    The caller passes only keys whose degree it bounded (``degrees``), so the rows are bounded too."""
    if not keys or not allowed:
        return []
    params = filter_params(flt, allowed)
    rows = conn.execute(
        select(entity_edges.c.entity_key, memories.c.id, memories.c.entity_keys)
        .select_from(entity_edges.join(memories, memories.c.id == entity_edges.c.memory_id))
        .where(
            entity_edges.c.namespace == any_(bindparam("g_namespaces", type_=ARRAY(Text))),
            entity_edges.c.entity_key == any_(bindparam("g_keys", type_=ARRAY(Text))),
            servable_condition(),
            *filter_conditions(params),
        )
        .order_by(entity_edges.c.entity_key, memories.c.id),
        {**params, "g_namespaces": list(allowed), "g_keys": list(keys)},
    ).all()
    return [Neighbour(str(r[1]), str(r[0]), tuple(r[2])) for r in rows]


def keys_of(conn: Connection, ids: Sequence[str], allowed: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """The entity keys of the servable memories of ``allowed`` among ``ids`` (a stale candidate seeds nothing)."""
    if not ids or not allowed:
        return {}
    rows = conn.execute(
        select(memories.c.id, memories.c.entity_keys).where(
            memories.c.id == any_(bindparam("g_ids", type_=ARRAY(UUID(as_uuid=False)))),
            memories.c.namespace == any_(bindparam("g_namespaces", type_=ARRAY(Text))),
            servable_condition(),
        ),
        {"g_ids": list(ids), "g_namespaces": list(allowed)},
    ).all()
    return {str(r[0]): tuple(r[1]) for r in rows}
