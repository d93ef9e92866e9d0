"""The memories a derived memory was drawn from (its derived_from links), as search reads them."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, Text, any_, bindparam, select, text
from sqlalchemy.dialects.postgresql import ARRAY, UUID

from memhub.db.memory_rows import servable_condition
from memhub.db.schema import memories


def sources(conn: Connection, ids: Sequence[str], allowed: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """For the servable memories of ``allowed`` among ``ids``: the ids they were derived from, as written
    (whether those are servable and readable is judged where they are hydrated, like any candidate)."""
    if not ids or not allowed:
        return {}
    rows = conn.execute(
        select(memories.c.id, memories.c.derived_from).where(
            memories.c.id == any_(bindparam("d_ids", type_=ARRAY(UUID(as_uuid=False)))),
            memories.c.namespace == any_(bindparam("d_namespaces", type_=ARRAY(Text))),
            servable_condition(),
        ),
        {"d_ids": list(ids), "d_namespaces": list(allowed)},
    ).all()
    return {str(r[0]): tuple(str(x) for x in r[1]) for r in rows}


def restatements(conn: Connection, ids: Sequence[str]) -> list[str]:
    """The preference memories the write gate derived from ``ids`` (one source, written by the same write call)
    that are not forgotten yet: they restate their source, so forgetting it forgets them (memhub/service/forgetting.py)."""
    if not ids:
        return []
    rows = conn.execute(
        text(
            "SELECT d.id::text FROM memories s JOIN memories d "
            "ON d.derived_from @> ARRAY[s.id] AND cardinality(d.derived_from) = 1 AND d.namespace = s.namespace "
            "AND d.source_request_id = s.source_request_id AND d.source_request_id <> '' "
            "WHERE s.id = ANY(CAST(:ids AS uuid[])) AND d.type = 'preference' AND d.status <> 'forgotten' "
            "ORDER BY d.id"
        ),
        {"ids": list(ids)},
    ).all()
    return [str(r[0]) for r in rows]
