"""The reads GetMemoryLineage walks with (memhub/core/lineage.py): memories by id, and what was derived from some."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, Text, any_, bindparam, cast, func, select
from sqlalchemy.dialects.postgresql import ARRAY, UUID

from memhub.core.model import MemoryRecord, Status
from memhub.db.memory_rows import to_record
from memhub.db.schema import memories


def by_ids(conn: Connection, ids: Sequence[str]) -> dict[str, MemoryRecord]:
    """The memories with these ids, in any status; ids that do not exist are absent."""
    if not ids:
        return {}
    rows = conn.execute(select(memories).where(memories.c.id.in_(list(dict.fromkeys(ids))))).all()
    return {str(r._mapping["id"]): to_record(r) for r in rows}


def placement(conn: Connection, ids: Sequence[str]) -> dict[str, tuple[str, Status]]:
    """id -> (namespace, status) for the ids that exist: enough to decide whether a caller may see a memory."""
    if not ids:
        return {}
    rows = conn.execute(
        select(memories.c.id, memories.c.namespace, memories.c.status).where(
            memories.c.id == any_(cast(bindparam("p_ids", type_=ARRAY(Text)), ARRAY(UUID(as_uuid=False))))
        ),
        {"p_ids": list(dict.fromkeys(ids))},
    ).all()
    return {str(r[0]): (r[1], Status(r[2])) for r in rows}


def derived_from_any(
    conn: Connection, ids: Sequence[str], namespaces: Sequence[str], *, with_quarantined: bool, limit: int
) -> list[MemoryRecord]:
    """Memories in ``namespaces`` whose derived_from names any of ``ids``, oldest first, at most ``limit``.

    Only the caller's readable namespaces are searched, in SQL: memories it cannot read must not take places
    under the limit (they would change what it sees, and so tell it they exist).
    """
    if not ids or not namespaces or limit <= 0:
        return []
    conditions = [
        # The same predicate as the partial GIN index ix_memories_derived_from, so the planner can use it.
        func.cardinality(memories.c.derived_from) > 0,
        memories.c.derived_from.overlap(cast(bindparam("l_ids", type_=ARRAY(Text)), ARRAY(UUID(as_uuid=False)))),
        memories.c.namespace == any_(bindparam("l_namespaces", type_=ARRAY(Text))),
    ]
    if not with_quarantined:
        conditions.append(memories.c.status != Status.QUARANTINED.value)
    rows = conn.execute(
        select(memories).where(*conditions).order_by(memories.c.created_at, memories.c.id).limit(limit),
        {"l_ids": list(ids), "l_namespaces": list(namespaces)},
    ).all()
    return [to_record(r) for r in rows]
