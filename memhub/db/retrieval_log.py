"""SQL of the retrieval log: use marks, the use counters on memories, and reading log pages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Row, Text, cast, func, literal, select, text, tuple_
from sqlalchemy.dialects.postgresql import ARRAY

from memhub.db.schema import memories, retrieval_log, retrieval_use


@dataclass(frozen=True)
class NewMark:
    memory_id: str
    inserted: bool
    """A new mark; False: a verdict added to an earlier mark for the same search (already counted as a use)."""


def insert_marks(
    conn: Connection, agent_id: str, search_id: str | None, memory_ids: Sequence[str], useful: bool | None
) -> list[NewMark]:
    """Record marks; returns those that changed something.

    A memory is marked once per (agent, search): marking it again only sets
    a verdict where none was given, so one answer cannot be counted twice.
    Marks without a search each count. One statement for the whole call.
    """
    rows = conn.execute(
        text(
            "INSERT INTO retrieval_use (agent_id, search_id, memory_id, useful) "
            "SELECT :agent, CAST(:search AS uuid), m, CAST(:useful AS boolean) FROM unnest(CAST(:ids AS uuid[])) AS m "
            "ON CONFLICT (agent_id, search_id, memory_id) WHERE search_id IS NOT NULL "
            "DO UPDATE SET useful = EXCLUDED.useful, at = EXCLUDED.at "
            "WHERE retrieval_use.useful IS NULL AND EXCLUDED.useful IS NOT NULL "
            # xmax is 0 on a row this statement inserted, set on one it updated.
            "RETURNING memory_id::text, (xmax = 0) AS inserted"
        ),
        # Sorted: two concurrent calls marking the same memories take their unique-index locks in one order.
        {"agent": agent_id, "search": search_id, "ids": sorted(memory_ids), "useful": useful},
    )
    return [NewMark(r[0], bool(r[1])) for r in rows]


def record_uses(conn: Connection, counts: Mapping[str, tuple[int, int]]) -> None:
    """Add (uses, not-useful marks) per memory; batched by the caller (memhub/core/recall_stats.py).

    Rows are locked in id order first, so concurrent flushes from several
    replicas cannot deadlock; one statement for the whole batch.
    """
    if not counts:
        return
    ids = sorted(counts)
    conn.execute(
        text(
            "WITH v AS (SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:uses AS int[]), CAST(:bad AS int[])) AS v(id, u, b)), "
            "locked AS (SELECT m.id FROM memories m JOIN v ON m.id = v.id ORDER BY m.id FOR UPDATE OF m) "
            "UPDATE memories m SET use_count = m.use_count + v.u, not_useful_count = m.not_useful_count + v.b, "
            "last_used_at = CASE WHEN v.u > 0 THEN now() ELSE m.last_used_at END "
            "FROM v WHERE m.id = v.id AND m.id IN (SELECT id FROM locked)"
        ),
        {"ids": ids, "uses": [counts[i][0] for i in ids], "bad": [counts[i][1] for i in ids]},
    )


def log_page(
    conn: Connection, agent_id: str | None, since: datetime | None, limit: int, before: tuple[datetime, str] | None
) -> list[Row]:
    """Newest first; keyset-paged on (at, search_id)."""
    query = select(
        retrieval_log.c.search_id.cast(Text).label("search_id"),
        retrieval_log.c.at,
        retrieval_log.c.agent_id,
        retrieval_log.c.rpc,
        retrieval_log.c.query_hash,
        retrieval_log.c.query_text,
        retrieval_log.c.namespaces,
        retrieval_log.c.namespace_count,
        cast(retrieval_log.c.hit_ids, ARRAY(Text)).label("hit_ids"),
        retrieval_log.c.hit_scores,
        retrieval_log.c.hit_relevance,
        retrieval_log.c.trace_id,
        retrieval_log.c.hub_request_id,
    )
    if agent_id is not None:
        query = query.where(retrieval_log.c.agent_id == agent_id)
    if since is not None:
        query = query.where(retrieval_log.c.at >= since)
    if before is not None:
        at, search_id = before
        query = query.where(
            tuple_(retrieval_log.c.at, retrieval_log.c.search_id) < tuple_(at, literal(search_id, retrieval_log.c.search_id.type))
        )
    query = query.order_by(retrieval_log.c.at.desc(), retrieval_log.c.search_id.desc()).limit(limit)
    return list(conn.execute(query))


@dataclass(frozen=True)
class MemoryNow:
    namespace: str
    status: str
    expires_at: datetime | None
    preview: str


def memories_now(conn: Connection, ids: Sequence[str], preview_chars: int) -> dict[str, MemoryNow]:
    """Namespace, status and the start of the content of each memory that still exists."""
    if not ids:
        return {}
    rows = conn.execute(
        select(
            memories.c.id.cast(Text),
            memories.c.namespace,
            memories.c.status,
            memories.c.expires_at,
            func.left(memories.c.content, preview_chars),
        ).where(memories.c.id.in_(list(ids)))
    )
    return {r[0]: MemoryNow(r[1], r[2], r[3], r[4]) for r in rows}


def marks_of(conn: Connection, search_ids: Sequence[str]) -> dict[tuple[str, str, str], bool | None]:
    """(agent, search, memory) → verdict of every mark naming one of ``search_ids``."""
    if not search_ids:
        return {}
    rows = conn.execute(
        select(
            retrieval_use.c.agent_id,
            retrieval_use.c.search_id.cast(Text),
            retrieval_use.c.memory_id.cast(Text),
            retrieval_use.c.useful,
        ).where(retrieval_use.c.search_id.in_(list(search_ids)))
    )
    return {(r[0], r[1], r[2]): r[3] for r in rows}
