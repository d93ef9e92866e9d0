"""Stage 7, hydration: the candidates' rows from Postgres, the truth. Milvus only proposes: a candidate
that is stale there (forgotten, superseded, expired since it was indexed) or outside the filter or the
caller's namespaces has no row here and leaves the ranking."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection

from memhub.core.model import MemoryRecord, SearchQuery
from memhub.db import memory_reads
from memhub.search.fusion import Fused


@dataclass(frozen=True)
class Hydrated:
    fused: list[Fused]
    """The candidates that have a servable row, in ranked order."""
    records: dict[str, MemoryRecord]


def hydrate(conn: Connection, fused: list[Fused], query: SearchQuery, readable: list[str], head: int) -> Hydrated:
    """Rows for the first ``head`` candidates (a few spare rows cover hits that turn out stale or filtered),
    and for the rest only when too few of those were servable."""
    ids = [f.id for f in fused]
    records = memory_reads.hydrate(conn, ids[:head], query.filter, readable)
    if len(records) < query.top_k and len(ids) > head:  # stale or filtered hits: look deeper
        records.update(memory_reads.hydrate(conn, ids[head:], query.filter, readable))
    return Hydrated([f for f in fused if f.id in records], records)
