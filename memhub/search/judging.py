"""Stage 10, judging relevance: each hit's relevance (memhub/search/relevance.py), on a scale that means
the same for every query, and the hits below the request's min_relevance left out.

The dense channel gave the similarity of the hits it found; the few others' is computed from their stored
vectors (one index query), and when that fails they are judged without it (the model-free calibration),
never failing the search.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from concurrent.futures import Future

import numpy as np

from memhub import outage_log, telemetry
from memhub.core.model import Channel, MemoryRecord, Placement, SearchHit
from memhub.embedding import EmbeddingError
from memhub.index import IndexBackendError, MilvusIndex
from memhub.search.fusion import Fused
from memhub.search.priors import PriorBreakdown
from memhub.search.query import Understood

log = logging.getLogger(__name__)
_tracer = telemetry.tracer(__name__)


def judged_hits(
    index: MilvusIndex,
    asked: Understood,
    fused: list[Fused],
    records: Mapping[str, MemoryRecord],
    priors: Mapping[str, PriorBreakdown],
    vector: Future[np.ndarray] | None,
    placements: Mapping[str, Placement] | None = None,
) -> list[SearchHit]:
    """``fused`` as hits, each with its relevance (and, when explained, its channels, priors and placement)."""
    query = asked.query
    judged = relevances(index, asked, fused, records, vector if asked.judge.wants_cosine else None)
    return [
        SearchHit(
            records[f.id],
            f.score,
            f.channels if query.explain else (),
            relevance=r,
            priors=_prior_tuple(priors.get(f.id)) if query.explain else None,
            placement=placements.get(f.id) if query.explain and placements else None,
        )
        for f, r in zip(fused, judged, strict=True)
        if r >= query.min_relevance
    ]


def relevances(
    index: MilvusIndex,
    asked: Understood,
    fused: list[Fused],
    records: Mapping[str, MemoryRecord],
    vector: Future[np.ndarray] | None,
) -> list[float]:
    cosines = {f.id: c.score for f in fused for c in f.channels if c.channel is Channel.DENSE}
    missing = [f.id for f in fused if f.id not in cosines]
    if vector is not None and missing:
        with _tracer.start_as_current_span("search.relevance_vectors", attributes={"memhub.search.hits": len(missing)}):
            try:
                cosines.update(index.similarities(vector.result(), missing))
            except (IndexBackendError, EmbeddingError) as exc:
                outage_log.Site("searches", log, ()).failed(exc, f"relevance without similarity for {len(missing)} hits")
    # Rounded as SearchHit.relevance carries it (a float32), so a client that passes a relevance it saw
    # as min_relevance keeps that hit.
    judge = asked.judge
    return [float(np.float32(judge.relevance(records[f.id].content, records[f.id].entities, cosines.get(f.id)))) for f in fused]


def _prior_tuple(part: PriorBreakdown | None) -> tuple[float, float, float, float] | None:
    return None if part is None else (part.importance, part.recency, part.use, part.type)
