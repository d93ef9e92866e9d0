"""The SQL of consolidation: selecting episodes, finding which are already consolidated, one run at a time."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, Text, bindparam, func, literal, select
from sqlalchemy.dialects.postgresql import ARRAY, UUID

from memhub.core.model import Kind, MemoryFilter, MemoryRecord, Status, Trust
from memhub.db.memory_rows import filter_conditions, filter_params, servable_condition, to_record
from memhub.db.schema import MEMORY_COLUMNS, memories


def _consolidated_sources(target: str, marker: str) -> Select:
    """Ids of every episode an active memory of ``target`` tagged ``marker`` is derived from (a subquery)."""
    consolidated = memories.alias("consolidated")
    return select(func.unnest(consolidated.c.derived_from)).where(
        consolidated.c.namespace == target,
        consolidated.c.status == Status.ACTIVE.value,
        consolidated.c.tags.contains(literal([marker], ARRAY(Text))),
    )


def _selection(flt: MemoryFilter, readable: Sequence[str], session_id: str) -> tuple[list[ColumnElement[bool]], dict[str, Any]]:
    """Conditions for servable episodic memories in ``readable`` matching ``flt`` (and the session, when given).

    Left out, whatever the filter: memories screening flagged (text addressing a model would become a lesson
    every reader is served) and memories from writers relaying outside input (trust external): a consolidated
    memory carries its consolidator's trust, so their text would come out looking more trusted than it is.
    """
    params = filter_params(dataclasses.replace(flt, kinds=(Kind.EPISODIC,), unflagged=True, flags_any=()), readable)
    conds = [*filter_conditions(params), servable_condition(), memories.c.trust != Trust.EXTERNAL.value]
    if session_id:
        conds.append(memories.c.source_session == session_id)
    return conds, params


def select_episodes(
    conn: Connection,
    flt: MemoryFilter,
    readable: Sequence[str],
    session_id: str,
    *,
    target: str,
    marker: str,
    limit: int,
) -> list[MemoryRecord]:
    """The selected episodes not yet consolidated into ``target``, oldest first, at most ``limit``.

    Those already consolidated are left out here, in SQL (a hashed anti-join), not after the limit: a run
    cut short by the limit must find the next episodes next time, not the same consolidated ones.
    """
    conds, params = _selection(flt, readable, session_id)
    conds.append(memories.c.id.not_in(_consolidated_sources(target, marker)))
    rows = conn.execute(
        select(*MEMORY_COLUMNS)
        .where(*conds)
        .order_by(memories.c.occurred_at, memories.c.created_at, memories.c.write_pos, memories.c.id)
        .limit(limit),
        params,
    ).all()
    return [to_record(r) for r in rows]


def count_consolidated(
    conn: Connection, flt: MemoryFilter, readable: Sequence[str], session_id: str, *, target: str, marker: str
) -> int:
    """How many of the selected episodes are already consolidated into ``target``."""
    conds, params = _selection(flt, readable, session_id)
    conds.append(memories.c.id.in_(_consolidated_sources(target, marker)))
    return int(conn.execute(select(func.count()).select_from(memories).where(*conds), params).scalar_one())


def already_consolidated(conn: Connection, target: str, ids: Sequence[str], marker: str) -> set[str]:
    """Those of ``ids`` an active memory of ``target`` carrying the tag ``marker`` is derived from."""
    if not ids:
        return set()
    wanted = bindparam("ids", type_=ARRAY(UUID(as_uuid=False)))
    rows = conn.execute(
        select(func.unnest(memories.c.derived_from)).where(
            memories.c.namespace == target,
            servable_condition(),
            memories.c.tags.contains(literal([marker], ARRAY(Text))),
            memories.c.derived_from.overlap(wanted),
        ),
        {"ids": list(ids)},
    )
    wanted_set = set(ids)
    return {str(r[0]) for r in rows if str(r[0]) in wanted_set}


def lock_target(conn: Connection, target: str) -> None:
    """Serialise the writing phase of consolidations into ``target`` (across hub replicas) until ``conn``'s
    transaction ends: two runs over the same episodes then cannot both write their groups."""
    conn.execute(select(func.pg_advisory_xact_lock(func.hashtextextended(literal("memhub-consolidate:" + target), 0))))
