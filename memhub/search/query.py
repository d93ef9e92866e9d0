"""Stage 1, understanding the query: its terms and names (for relevance), its entities, the time it names,
and what this request asks of the other stages (channel weights, depth, expansion, smoothing).

Pure: no store is read here, so the result depends on the request and the hub's settings alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone

from memhub.core.model import Channel, SearchQuery, TimeWindow
from memhub.recall import entities
from memhub.search import intent, timeparse
from memhub.search.query_terms import QueryTerms
from memhub.search.relevance import Judge, calibration_for
from memhub.search.settings import RetrievalSettings

# Used when a request asks for smoothing that the hub's configuration leaves off.
DEFAULT_SMOOTHING = 0.1


@dataclass(frozen=True)
class Understood:
    query: SearchQuery
    judge: Judge
    """The query's terms and names, and whether the embedding similarity counts (memhub/search/relevance.py)."""
    entity_keys: tuple[str, ...]
    """The entities it names (memhub/recall/entities.py), for the entity channel and expansion."""
    window: TimeWindow | None
    """The occurred_at window it names (memhub/search/timeparse.py), when the time channel is on."""
    weights: Mapping[Channel, float]
    """Each channel's weight in fusion for this request."""
    depth: int
    """How deep each channel's list goes."""
    expansion: bool
    smoothing: float
    """The neighbour-smoothing weight (0: off)."""
    intent: intent.Intent = intent.Intent()
    """What kind of question it is (a request for a recommendation, one that needs every relevant memory)."""

    @property
    def dense(self) -> bool:
        return Channel.DENSE in self.query.channels

    @property
    def wants_vector(self) -> bool:
        """The query's embedding is needed: for the dense channel, or for relevance even without it."""
        return self.dense or self.judge.wants_cosine


def understand(query: SearchQuery, model_id: str, settings: RetrievalSettings) -> Understood:
    weights = dict(settings.weights)
    if query.channels_named:  # a channel asked for by name counts, even one the hub leaves out by default
        weights |= {c: 1.0 for c in query.channels if weights.get(c, 1.0) <= 0}
    judge = Judge(query.text, model_id)
    if Channel.DENSE in weights:
        weights[Channel.DENSE] *= dense_coverage(judge.terms, model_id)
    kind = intent.of(query.text)
    window = None
    if Channel.TIME in query.channels and weights.get(Channel.TIME, 1.0) > 0:
        window = timeparse.window(query.text, query.as_of or datetime.now(timezone.utc))
    return Understood(
        query=query,
        judge=judge,
        entity_keys=tuple(entities.extract(query.text)),
        window=window,
        weights=weights,
        # Deeper channel lists than top_k: fusion needs overlap, and hydration may drop stale hits. A question
        # that needs every relevant memory ("how many ...") looks twice as deep.
        depth=min(max(query.top_k * 3, settings.channel_depth) * (settings.aggregation_depth if kind.aggregation else 1), 300),
        expansion=settings.expansion if query.expansion is None else query.expansion,
        smoothing=smoothing_weight(settings.neighbour_smoothing, query.neighbour_smoothing),
        intent=kind,
    )


def dense_coverage(terms: QueryTerms, model_id: str) -> float:
    """How much of the query the embedding model can read: 1, except for a model of English only (MiniLM), whose
    similarities of Chinese text are noise (0.94 for 小雨喜欢绿色 against 小雨对什么过敏); then the share of the
    query's terms that are not Chinese. Fusing that noise at full weight made Chinese recall worse than keywords
    alone (issue 25); the dense channel still runs (relevance uses what it can)."""
    calibration = calibration_for(model_id)
    if calibration is None or not calibration.english_only or not terms.pairs:
        return 1.0
    return len(terms.words) / terms.count


def smoothing_weight(configured: float, requested: bool | None) -> float:
    """The neighbour-smoothing weight for one search: the hub's, unless the request turns it on or off."""
    if requested is None:
        return configured
    return (configured or DEFAULT_SMOOTHING) if requested else 0.0
