"""Stage 5, expansion (off by default): a second round seeded by the first round's best hits, fused in as
one more channel. Keywords: the query plus the entities its seeds name; dense: the query's embedding moved
towards the seeds'. A failure leaves the first round's ranking and says so."""

from __future__ import annotations

import dataclasses
import logging
from concurrent.futures import Future

import numpy as np
from sqlalchemy import Connection

from memhub import telemetry
from memhub.core.model import Channel
from memhub.db import memory_reads
from memhub.embedding import EmbeddingError
from memhub.index import IndexBackendError, IndexFilter
from memhub.search.channels import Ranked
from memhub.search.fusion import Ranking, rrf
from memhub.search.query import Understood
from memhub.search.settings import IndexAccess, RetrievalSettings

log = logging.getLogger(__name__)
_tracer = telemetry.tracer(__name__)


def expand(
    index: IndexAccess,
    settings: RetrievalSettings,
    conn: Connection,
    asked: Understood,
    ranking: Ranking,
    vector: Future[np.ndarray] | None,
    flt: IndexFilter,
) -> Ranking:
    """``vector``: the query's embedding when the dense channel is asked for (expansion needs it)."""
    if not (asked.expansion and ranking.fused and vector is not None and index.health.ok):
        return ranking
    try:
        return ranking.adding(Channel.EXPANSION, _second_round(index, settings, conn, asked, ranking, vector.result(), flt))
    except (IndexBackendError, EmbeddingError) as exc:
        log.warning("search expansion failed: %s", exc)
        return dataclasses.replace(ranking, degraded=ranking.degraded or "the expansion stage failed; ranked by the first round")


def _second_round(
    index: IndexAccess,
    settings: RetrievalSettings,
    conn: Connection,
    asked: Understood,
    ranking: Ranking,
    query_vector: np.ndarray,
    flt: IndexFilter,
) -> Ranked:
    text, depth = asked.query.text, asked.depth
    seeds = [f.id for f in ranking.fused[: settings.expansion_seeds]]
    with _tracer.start_as_current_span("search.expansion", attributes={"memhub.search.seeds": len(seeds)}):
        own = set(asked.entity_keys)
        extra = [k for k in memory_reads.entity_keys_of(conn, seeds) if k not in own]
        rounds: dict[Channel, Ranked] = {}
        if extra:
            rounds[Channel.KEYWORD] = index.index.search_keyword(text + " " + " ".join(extra), flt, depth)
        held = index.index.vectors(seeds)
        if held:
            moved = query_vector + settings.expansion_beta * np.mean(list(held.values()), axis=0)
            rounds[Channel.DENSE] = index.index.search_dense(moved / np.linalg.norm(moved), flt, depth)
        return [(f.id, f.score) for f in rrf(rounds)]
