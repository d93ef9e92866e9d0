"""Keyword search in Postgres: what a search falls back to while the Milvus index is down.

Postgres full-text search over the memories the caller may read, ranked by
``ts_rank_cd``: English stemming and stop words (the ``english``
configuration), any query word may match (OR), more and rarer matches rank
higher. It is a stand-in, not a peer of the index: no dense channel, and
Chinese text is not segmented (a run of Chinese characters is one word
here), so answers are marked ``degraded``. The vector is a stored column with a partial GIN index
(``ix_memories_content_tsv``, migration 0018): matching is an index scan and ranking reads the stored vector
instead of parsing every matching row's content again (39 -> 5 ms for a LoCoMo question over 10k rows).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, Text, and_, cast, func, literal_column, select
from sqlalchemy.dialects.postgresql import TSQUERY

from memhub.core.model import MemoryFilter
from memhub.db.memory_rows import filter_conditions, filter_params, servable_condition
from memhub.db.schema import memories

# A literal, not a bound parameter: the query's configuration must be the stored vector's ('english').
CONFIG = literal_column("'english'::regconfig")


def search(conn: Connection, text: str, flt: MemoryFilter, allowed: Sequence[str], limit: int) -> list[tuple[str, float]]:
    """Best-first ``(id, rank)`` of servable memories in ``allowed`` matching any word of ``text``."""
    if not allowed or not text.strip():
        return []
    vector = memories.c.content_tsv  # to_tsvector('english', content), stored (migration 0018)
    # plainto_tsquery ANDs the words; a memory rarely holds every word of a
    # question, so OR them (the rank still prefers memories matching more).
    query = cast(func.replace(cast(func.plainto_tsquery(CONFIG, text), Text), "&", "|"), TSQUERY)
    rank = func.ts_rank_cd(vector, query)
    params = filter_params(flt, allowed)
    rows = conn.execute(
        select(memories.c.id, rank.label("rank"))
        .where(and_(vector.op("@@")(query), servable_condition(), *filter_conditions(params)))
        .order_by(rank.desc(), memories.c.id)
        .limit(limit),
        params,
    ).all()
    return [(str(r[0]), float(r[1])) for r in rows]
