"""Stage 7, hydration: the candidates' rows from Postgres, the truth. Milvus only proposes: a candidate
that is stale there (forgotten, superseded, expired since it was indexed) or outside the filter or the
caller's namespaces has no row here and leaves the ranking."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import Connection

from memhub.core.model import MemoryRecord, SearchQuery
from memhub.db import memory_reads
from memhub.search.fusion import Fused

SPARE = 8
"""Rows past the head read in the same query. A later stage that needs rows further down (restatements left out,
memhub/search/derived.py) mostly finds them here: a query costs the hub more CPU than a few more rows (py-spy at
16 clients: that second query was an eighth of a search's Python time)."""


@dataclass(frozen=True)
class Hydrated:
    fused: list[Fused]
    """The candidates that have a servable row, in ranked order."""
    records: dict[str, MemoryRecord]
    spare: Mapping[str, MemoryRecord] = field(default_factory=dict)
    """Servable rows read past the head, not in ``records``: for a stage that needs more (``rows``)."""
    read: frozenset[str] = frozenset()
    """Every id read, found or not: one in neither ``records`` nor ``spare`` has no servable row."""


def hydrate(conn: Connection, fused: list[Fused], query: SearchQuery, readable: list[str], head: int) -> Hydrated:
    """Rows for the first ``head`` candidates and SPARE more (a few spare rows cover hits that turn out stale or
    filtered), and for the rest only when too few of those were servable."""
    ids = [f.id for f in fused]
    first = ids[: head + SPARE]
    got = memory_reads.hydrate(conn, first, query.filter, readable)
    records = {mid: got[mid] for mid in ids[:head] if mid in got}
    spare = {mid: got[mid] for mid in first[head:] if mid in got}
    read = frozenset(first)
    if len(records) < query.top_k and len(ids) > head:  # stale or filtered hits: look deeper
        records |= spare
        records.update(memory_reads.hydrate(conn, ids[len(first) :], query.filter, readable))
        spare, read = {}, frozenset(ids)
    return Hydrated([f for f in fused if f.id in records], records, spare, read)


def rows(
    conn: Connection, found: Hydrated, ids: Sequence[str], query: SearchQuery, readable: list[str]
) -> dict[str, MemoryRecord]:
    """The servable rows of ``ids``: those read already from ``found``, the others read now (the same rows a new
    read would give: one search reads on one connection, under the same filter and namespaces)."""
    out = {mid: found.spare[mid] for mid in ids if mid in found.spare}
    unread = [mid for mid in ids if mid not in found.read]
    if unread:
        out |= memory_reads.hydrate(conn, unread, query.filter, readable)
    return out


def read_ahead(conn: Connection, found: Hydrated, ids: Sequence[str], query: SearchQuery, readable: list[str]) -> Hydrated:
    """``found`` with the unread among ``ids`` read in one query, kept as spare rows: a stage that reads further
    down in steps (derived.leave_out_restatements) then takes its later steps from them instead of one query each
    (they were a second and third hydration in most LoCoMo searches)."""
    unread = [mid for mid in ids if mid not in found.read]
    if not unread:
        return found
    got = memory_reads.hydrate(conn, unread, query.filter, readable)
    spare = {**found.spare, **{mid: r for mid, r in got.items() if mid not in found.records}}
    return dataclasses.replace(found, spare=spare, read=found.read | frozenset(unread))
