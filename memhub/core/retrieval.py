"""The retrieval stages of a search, between the caller's readable namespaces and the hydrated hits.

Order: the channels (dense and keyword in Milvus, entity in Postgres) ->
weighted RRF -> the time channel (candidates inside the time the query
names) -> expansion (a second round seeded by the first round's best hits)
-> neighbour smoothing -> rerank (in service.py, after hydration). Every
stage is switchable per hub and per request, and a stage that fails leaves
the ranking as it was and says so (``degraded``).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np
from sqlalchemy import Connection

from memhub import outage_log, telemetry
from memhub.core import fusion, ranking
from memhub.core.index_health import IndexHealth
from memhub.core.model import Channel, SearchQuery
from memhub.db import context, entity_search, fulltext
from memhub.db import memories as memories_db
from memhub.embedding import EmbeddingError
from memhub.index import IndexBackendError, IndexFilter, MilvusIndex
from memhub.recall import entities, timeparse

log = logging.getLogger(__name__)
_SEARCHES = outage_log.Site("searches", log, depends=())  # one line per outage (memhub/outage_log.py)
_tracer = telemetry.tracer(__name__)

DEGRADED_FULLTEXT = (
    "the retrieval index is unavailable; answered by Postgres full-text search "
    "(keywords only, English stemming, no Chinese word segmentation)"
)


@dataclass(frozen=True)
class RetrievalSettings:
    """The hub's defaults for the stages; a request may turn smoothing and expansion on or off."""

    weights: Mapping[Channel, float] = field(
        default_factory=lambda: {
            Channel.DENSE: 1.0,
            Channel.KEYWORD: 1.0,
            Channel.ENTITY: 0.0,
            Channel.TIME: 0.5,
            Channel.EXPANSION: 0.5,
        }
    )
    neighbour_smoothing: float = 0.1
    expansion: bool = False
    expansion_seeds: int = 3
    """How many of the first round's best hits seed the second round."""
    expansion_beta: float = 0.5
    """Share of the seeds' mean embedding added to the query's for the second dense search."""


@dataclass
class Ranked:
    fused: list[fusion.Fused]
    channels_ran: int
    degraded: str = ""


class Retrieval:
    """Runs the stages for one search on the caller's connection."""

    def __init__(
        self, index: MilvusIndex, index_health: IndexHealth, pool: ThreadPoolExecutor, settings: RetrievalSettings
    ) -> None:
        self._index = index
        self._index_health = index_health
        self._pool = pool
        self.settings = settings

    def rank(
        self, conn: Connection, query: SearchQuery, readable: list[str], depth: int, vector: Future | None, flt: IndexFilter
    ) -> Ranked:
        weights = dict(self.settings.weights)
        if query.channels_named:  # a channel asked for by name counts, even one the hub leaves out by default
            weights |= {c: 1.0 for c in query.channels if weights.get(c, 1.0) <= 0}
        rankings, degraded = self._channels(conn, query, readable, depth, vector, flt, weights)
        fused = fusion.rrf(rankings, weights)
        if Channel.TIME in query.channels and weights.get(Channel.TIME, 1.0) > 0 and fused:
            when = timeparse.window(query.text, query.as_of or datetime.now(timezone.utc))
            if when is not None:
                inside = memories_db.occurred_within(conn, [f.id for f in fused], when)
                rankings[Channel.TIME] = [(f.id, 0.0) for f in fused if f.id in inside]
                fused = fusion.rrf(rankings, weights)
        expand = self.settings.expansion if query.expansion is None else query.expansion
        if expand and fused and vector is not None and self._index_health.ok:
            try:
                rankings[Channel.EXPANSION] = self._expansion(conn, query.text, vector.result(), fused, depth, flt)
                fused = fusion.rrf(rankings, weights)
            except (IndexBackendError, EmbeddingError) as exc:
                log.warning("search expansion failed: %s", exc)
                degraded = degraded or "the expansion stage failed; ranked by the first round"
        smoothing = ranking.smoothing_weight(self.settings.neighbour_smoothing, query.neighbour_smoothing)
        if smoothing and fused:
            # Neighbours of the head only: hits far down the list are not returned, whatever they gain.
            adjacent = context.neighbour_ids(conn, [f.id for f in fused[: max(30, 2 * query.top_k)]], context.Window(1, 1))
            fused = ranking.smooth(fused, adjacent, smoothing)
        ran = sum(weights.get(c, 1.0) for c, hits in rankings.items() if hits)
        return Ranked(fused, ran, degraded)

    def _channels(
        self,
        conn: Connection,
        query: SearchQuery,
        readable: list[str],
        depth: int,
        vector: Future | None,
        flt: IndexFilter,
        weights: Mapping[Channel, float],
    ) -> tuple[dict[Channel, list], str]:
        """Each requested channel's best-first (id, score) list, and why the answer is degraded ("" if it is not).

        A Milvus channel that fails (the index unreachable, the embedder down)
        is left out and the answer marked degraded; when none can answer, or
        the index is known to be down, Postgres full-text search stands in for
        keywords. The entity channel runs in Postgres either way.
        """
        failed: list[str] = []
        rankings: dict[Channel, list] = {}

        def collect(channel: Channel, ranked: Callable[[], list[tuple[str, float]]]) -> None:
            try:
                rankings[channel] = ranked()
            except (IndexBackendError, EmbeddingError) as exc:
                # Details go to the log only: the caller learns which channel, not the hub's topology.
                _SEARCHES.failed(exc, f"search channel {channel.value}")
                if isinstance(exc, IndexBackendError):
                    # Later searches skip Milvus and the monitor probes it at once: it heals what
                    # it can (a dead engine, a released or lost collection) and marks it up again.
                    self._index_health.mark_down(str(exc))
                failed.append(channel.value)

        wants_index = Channel.DENSE in query.channels or Channel.KEYWORD in query.channels
        if self._index_health.ok:
            keyword = None
            if Channel.KEYWORD in query.channels:
                # Beside the dense channel, in the pool; in a copy of this context, so the RPC span travels along.
                keyword = self._pool.submit(contextvars.copy_context().run, self._index.search_keyword, query.text, flt, depth)
            if vector is not None:
                collect(Channel.DENSE, lambda: self._index.search_dense(vector.result(), flt, depth))
            if keyword is not None:
                collect(Channel.KEYWORD, keyword.result)
        degraded = ""
        if wants_index and not rankings:
            rankings[Channel.KEYWORD] = fulltext.search(conn, query.text, query.filter, readable, depth)
            degraded = DEGRADED_FULLTEXT
        elif failed:
            degraded = f"the {' and '.join(failed)} channel failed; ranked without it"
        if Channel.ENTITY in query.channels and weights.get(Channel.ENTITY, 1.0) > 0:
            keys = entities.extract(query.text)
            if keys:
                rankings[Channel.ENTITY] = entity_search.search(conn, keys, query.filter, readable, depth)
        return rankings, degraded

    def _expansion(
        self, conn: Connection, text: str, query_vector: np.ndarray, fused: Sequence[fusion.Fused], depth: int, flt: IndexFilter
    ) -> list[tuple[str, float]]:
        """The second round: the query plus what its best hits name (keywords), and moved towards their
        embeddings (dense), fused into one list."""
        seeds = [f.id for f in fused[: self.settings.expansion_seeds]]
        with _tracer.start_as_current_span("search.expansion", attributes={"memhub.search.seeds": len(seeds)}):
            own = set(entities.extract(text))
            extra = [k for k in memories_db.entity_keys_of(conn, seeds) if k not in own]
            rounds: dict[Channel, list] = {}
            if extra:
                rounds[Channel.KEYWORD] = self._index.search_keyword(text + " " + " ".join(extra), flt, depth)
            held = self._index.vectors(seeds)
            if held:
                moved = query_vector + self.settings.expansion_beta * np.mean(list(held.values()), axis=0)
                rounds[Channel.DENSE] = self._index.search_dense(moved / np.linalg.norm(moved), flt, depth)
            return [(f.id, f.score) for f in fusion.rrf(rounds)]
