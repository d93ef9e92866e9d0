"""Stage 2, gathering candidates: each channel's best-first (id, score) list.

Dense and keyword search in Milvus (side by side in the pool), the entity channel in Postgres
(memhub/db/entity_search.py). A Milvus channel that fails (the index unreachable, the embedder down) is
left out and the answer marked degraded; when none can answer, or the index is known to be down,
Postgres full-text search (memhub/db/fulltext.py) stands in for keywords.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import Connection

from memhub import outage_log
from memhub.core.model import Channel, SearchQuery
from memhub.db import entity_search, fulltext
from memhub.embedding import EmbeddingError
from memhub.index import IndexBackendError, IndexFilter
from memhub.search.query import Understood
from memhub.search.settings import IndexAccess

log = logging.getLogger(__name__)
_SEARCHES = outage_log.Site("searches", log, depends=())  # one line per outage (memhub/outage_log.py)

DEGRADED_FULLTEXT = (
    "the retrieval index is unavailable; answered by Postgres full-text search "
    "(keywords only, English stemming, no Chinese word segmentation)"
)

Ranked = list[tuple[str, float]]
"""One channel's candidates, best first: (memory id, the channel's own score)."""


@dataclass(frozen=True)
class Candidates:
    rankings: dict[Channel, Ranked]
    """Per channel, in the order the channels ran (fusion sums in that order)."""
    degraded: str = ""
    """Why the answer is degraded ("" if it is not)."""


def index_filter(query: SearchQuery, readable: list[str]) -> IndexFilter:
    """The request's filter and the caller's readable namespaces, as the index applies them."""
    flt = query.filter
    return IndexFilter(
        namespaces=tuple(readable),
        kinds=tuple(k.value for k in flt.kinds),
        types=tuple(t.value for t in flt.types),
        tags_any=flt.tags_any,
        occurred_from_ms=_ms(flt.occurred.start),
        occurred_to_ms=_ms(flt.occurred.end),
        now_ms=int(time.time() * 1000),
    )


def _ms(value: datetime | None) -> int | None:
    return int(value.timestamp() * 1000) if value is not None else None


def settled(ranked: Ranked) -> Ranked:
    """Equal scores in id order: the index returns ties in no fixed order, which moved hits between runs."""
    return sorted(ranked, key=lambda hit: (-hit[1], hit[0]))


def gather(
    index: IndexAccess,
    conn: Connection,
    asked: Understood,
    readable: list[str],
    vector: Future[np.ndarray] | None,
    flt: IndexFilter,
) -> Candidates:
    """Each requested channel's list; ``vector``: the query's embedding when the dense channel is asked for."""
    query, depth = asked.query, asked.depth
    failed: list[str] = []
    rankings: dict[Channel, Ranked] = {}

    def collect(channel: Channel, ranked: Callable[[], Ranked]) -> None:
        try:
            rankings[channel] = settled(ranked())
        except (IndexBackendError, EmbeddingError) as exc:
            # Details go to the log only: the caller learns which channel, not the hub's topology.
            _SEARCHES.failed(exc, f"search channel {channel.value}")
            if isinstance(exc, IndexBackendError):
                # Later searches skip Milvus and the monitor probes it at once: it heals what
                # it can (a dead engine, a released or lost collection) and marks it up again.
                index.health.mark_down(str(exc))
            failed.append(channel.value)

    wants_index = Channel.DENSE in query.channels or Channel.KEYWORD in query.channels
    if index.health.ok:
        keyword = None
        # A Milvus without BM25 (before 2.5): keywords come from Postgres full-text search, as a channel, not degraded.
        bm25 = index.index.keyword_search_available
        if Channel.KEYWORD in query.channels and bm25:
            # Beside the dense channel, in the pool; in a copy of this context, so the RPC span travels along.
            keyword = index.pool.submit(contextvars.copy_context().run, index.index.search_keyword, query.text, flt, depth)
        if vector is not None:
            collect(Channel.DENSE, lambda: index.index.search_dense(vector.result(), flt, depth))  # type: ignore[arg-type]  # an ndarray
        if keyword is not None:
            collect(Channel.KEYWORD, keyword.result)
        elif Channel.KEYWORD in query.channels and not bm25:
            rankings[Channel.KEYWORD] = fulltext.search(conn, query.text, query.filter, readable, depth)
    degraded = ""
    if wants_index and not rankings:
        rankings[Channel.KEYWORD] = fulltext.search(conn, query.text, query.filter, readable, depth)
        degraded = DEGRADED_FULLTEXT
    elif failed:
        degraded = f"the {' and '.join(failed)} channel failed; ranked without it"
    if Channel.ENTITY in query.channels and asked.weights.get(Channel.ENTITY, 1.0) > 0 and asked.entity_keys:
        rankings[Channel.ENTITY] = entity_search.search(conn, list(asked.entity_keys), query.filter, readable, depth)
    return Candidates(rankings, degraded)
