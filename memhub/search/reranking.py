"""Stage 9, rerank (off unless configured or asked for): the best ``depth`` candidates in a reranker's
order (a cross-encoder service, memhub/rerank; or the local one when a request asks without a service),
the rest after them. A failure keeps the fused order and says so."""

from __future__ import annotations

import logging

from memhub import telemetry
from memhub.core.model import Channel, MemoryRecord, SearchQuery
from memhub.rerank import Candidate, Reranker, RerankError
from memhub.search.fusion import Fused
from memhub.search.query import Understood

log = logging.getLogger(__name__)
_tracer = telemetry.tracer(__name__)


def choose(
    configured: Reranker | None, local: Reranker, query: SearchQuery, asked: Understood, max_query_terms: int = 0
) -> Reranker | None:
    """The hub's reranker, unless the request turns reranking off, or on (then the local one if none).

    Never the model-free one for a recommendation question: it rewards the question's words, which the turn
    stating the asker's taste rarely has (the preference channel found it for that reason)."""
    chosen = configured if query.rerank is None else (configured or local) if query.rerank else None
    if chosen is not None and chosen.name == "local" and asked.intent.recommendation:
        return None
    if chosen is not None and chosen.name == "local" and max_query_terms and asked.judge.terms.count > max_query_terms:
        return None  # a long, chatty question: its many words favour long turns that repeat them
    return chosen


# The multilingual second opinion is a dense list too: for Chinese it is the one that reads the language.
_INDEX_CHANNELS = frozenset({Channel.DENSE, Channel.KEYWORD, Channel.MULTILINGUAL})


def _best_channel(f: Fused) -> float:
    return max((c.contribution for c in f.channels if c.channel in _INDEX_CHANNELS), default=0.0)


def rows_needed(reranker: Reranker | None, depth: int, top_k: int) -> int:
    """How many candidates hydration fetches first: the hits and a few spare, or all the reranker sees."""
    return max(top_k + 3, depth if reranker else 0)


def rerank(
    reranker: Reranker | None, depth: int, text: str, fused: list[Fused], records: dict[str, MemoryRecord]
) -> tuple[list[Fused], str, dict[str, float]]:
    """The candidates in the reranker's order (``fused`` itself without one), why degraded ("" if not), and the
    reranker's score of each candidate it reordered (empty when it did not run; for explain's placement)."""
    if reranker is None:
        return fused, "", {}
    top, rest = fused[:depth], fused[depth:]
    candidates = [Candidate(f.id, records[f.id].content, f.score, records[f.id].entities, _best_channel(f)) for f in top]
    with _tracer.start_as_current_span("rerank", attributes={"memhub.rerank.candidates": len(top)}):
        try:
            scores = reranker.scores(text, candidates)
        except RerankError as exc:
            log.warning("rerank failed, keeping the fused order: %s", exc)
            return fused, "the rerank stage failed; hits are in fused order", {}
    order = sorted(range(len(top)), key=lambda i: -scores[i])  # stable: ties keep the fused order
    return [top[i] for i in order] + rest, "", {f.id: float(score) for f, score in zip(top, scores, strict=True)}
