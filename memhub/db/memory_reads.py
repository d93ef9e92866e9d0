"""Reading memories in Postgres: search hydration, list pages, the namespaces that exist, and the small
look-ups the service and the search stages make (which ids exist, which occurred in a window, which
entities they name). Writes and the reads tied to them (one memory, a subject's versions) are in
memhub/db/memories.py.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection, Select, Text, and_, any_, bindparam, cast, or_, select
from sqlalchemy.dialects.postgresql import ARRAY, UUID

from memhub.core.model import MemoryFilter, MemoryRecord, Status, TimeWindow
from memhub.db.memory_rows import (
    RECORD_COLUMNS,
    filter_conditions,
    filter_params,
    record_from_columns,
    servable_condition,
    shape_conditions,
    subtree_condition,
    to_record,
)
from memhub.db.schema import memories, namespaces


def resolve_namespaces(conn: Connection, roots: Sequence[str]) -> list[str]:
    """The concrete namespaces that exist at or below the given roots."""
    if not roots:
        return []
    query = select(namespaces.c.name).where(subtree_condition(namespaces.c.name, roots)).order_by(namespaces.c.name)
    return [r[0] for r in conn.execute(query)]


def servable_ids_after(conn: Connection, after: str | None, limit: int) -> list[str]:
    """The next ``limit`` servable memory ids above ``after`` (None: from the start), in id order: how a rebuild or a
    reconciliation walks every memory the index should hold, a page at a time."""
    q = select(memories.c.id).where(servable_condition()).order_by(memories.c.id).limit(limit)
    if after is not None:
        q = q.where(memories.c.id > after)
    return [str(r[0]) for r in conn.execute(q)]


def hydrate(conn: Connection, ids: Sequence[str], flt: MemoryFilter, allowed: Sequence[str]) -> dict[str, MemoryRecord]:
    """Load search hits and re-check them: servable, inside the filter. Missing ids are simply absent."""
    if not ids:
        return {}
    params = filter_params(flt, allowed)
    rows = conn.execute(_hydrate_statement(tuple(params)), {**params, "h_ids": list(ids)}).all()
    return {record.id: record for record in map(record_from_columns, rows)}


@functools.lru_cache(maxsize=512)
def _hydrate_statement(shape: tuple[str, ...]) -> Select:
    return select(*RECORD_COLUMNS).where(
        memories.c.id == any_(cast(bindparam("h_ids", type_=ARRAY(Text)), ARRAY(UUID(as_uuid=False)))),
        servable_condition(),
        *shape_conditions(shape),
    )


def list_page(
    conn: Connection,
    flt: MemoryFilter,
    allowed: Sequence[str],
    statuses: Sequence[Status],
    limit: int,
    after: tuple[datetime, str] | None,
) -> list[MemoryRecord]:
    """Newest first, keyset-paged on (created_at, id) so pages stay stable while memories are added."""
    params = filter_params(flt, allowed)
    conds = list(filter_conditions(params))
    if statuses == (Status.ACTIVE,):
        conds.append(servable_condition())
    else:
        conds.append(memories.c.status.in_([s.value for s in statuses]))
    if after is not None:
        created, last_id = after
        conds.append(or_(memories.c.created_at < created, and_(memories.c.created_at == created, memories.c.id < last_id)))
    rows = conn.execute(
        select(memories).where(*conds).order_by(memories.c.created_at.desc(), memories.c.id.desc()).limit(limit), params
    ).all()
    return [to_record(r) for r in rows]


def existing_ids(conn: Connection, ids: Sequence[str]) -> dict[str, str]:
    """id -> namespace for the ids that exist (any status)."""
    rows = conn.execute(select(memories.c.id, memories.c.namespace).where(memories.c.id.in_(list(ids)))).all()
    return {str(r[0]): r[1] for r in rows}


def occurred_within(conn: Connection, ids: Sequence[str], window: TimeWindow) -> set[str]:
    """Those of ``ids`` whose occurred_at falls in ``window`` (half-open; either bound may be open)."""
    if not ids:
        return set()
    conditions = [memories.c.id == any_(cast(bindparam("o_ids", type_=ARRAY(Text)), ARRAY(UUID(as_uuid=False))))]
    if window.start is not None:
        conditions.append(memories.c.occurred_at >= window.start)
    if window.end is not None:
        conditions.append(memories.c.occurred_at < window.end)
    return {str(r[0]) for r in conn.execute(select(memories.c.id).where(*conditions), {"o_ids": list(ids)})}


def entity_keys_of(conn: Connection, ids: Sequence[str]) -> list[str]:
    """The entity keys of the servable memories among ``ids``, in the order of ``ids``, without repeats."""
    if not ids:
        return []
    rows = conn.execute(
        select(memories.c.id, memories.c.entity_keys).where(
            memories.c.id == any_(cast(bindparam("k_ids", type_=ARRAY(Text)), ARRAY(UUID(as_uuid=False)))),
            servable_condition(),
        ),
        {"k_ids": list(ids)},
    ).all()
    by_id = {str(r[0]): r[1] for r in rows}
    return list(dict.fromkeys(k for mid in ids for k in by_id.get(mid, ())))
