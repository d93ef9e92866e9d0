"""One search, stage by stage: the top-level function that runs them, and what they need.

The stages, in the order they run (each its own module here; the package docstring says more):
understand the query -> gather candidates per channel -> fuse -> the time channel -> expansion ->
neighbour smoothing -> hydrate from Postgres -> leave out restatements -> a multilingual second opinion -> priors ->
rerank -> judge relevance -> fit the token budget -> attach context turns -> fit the response -> log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from opentelemetry import trace
from sqlalchemy import Connection, Engine

from memhub.core.model import SearchQuery, SearchResult
from memhub.core.recall_stats import RecallRecorder
from memhub.embedding import Embedder
from memhub.rerank import Reranker
from memhub.search import (
    budget,
    channels,
    context_turns,
    derived,
    diversity,
    expansion,
    fusion,
    graph,
    hydration,
    judging,
    multilingual,
    placement,
    preference,
    priors,
    query_vector,
    recording,
    reranking,
    smoothing,
    speakers,
    time_channel,
)
from memhub.search.query import understand
from memhub.search.settings import IndexAccess, RetrievalSettings


@dataclass(frozen=True)
class SearchEnv:
    """What the stages read and how the hub configured them; one per hub."""

    reads: Engine
    """The database in autocommit: a search only reads, and needs no BEGIN/ROLLBACK round trips."""
    index: IndexAccess
    embedder: Embedder
    recorder: RecallRecorder
    settings: RetrievalSettings
    prior_weights: priors.PriorWeights
    reranker: Reranker | None
    local_reranker: Reranker
    rerank_depth: int
    response_budget: int
    """Bytes the hits may take in the response (memhub/core/response_size.py)."""
    second_opinion: multilingual.SecondOpinion | None = None
    """The multilingual model for text the dense channel's model cannot read (None: the stage is off)."""


def search(env: SearchEnv, query: SearchQuery, readable_namespaces: Callable[[Connection], list[str]]) -> SearchResult:
    """``query`` over the namespaces ``readable_namespaces`` allows (the caller's rights, decided on the
    search's connection before any candidate is sought). Adds counts, never text, to the current span."""
    span = trace.get_current_span()
    span.set_attributes(_attributes(query))
    asked = understand(query, env.embedder.model_id, env.settings)
    vector = query_vector.start(env.index, env.embedder, asked)  # while the policies decide
    dense = vector if asked.dense else None
    try:
        with env.reads.connect() as conn:  # one connection for the whole search
            readable = readable_namespaces(conn)
            span.set_attribute("memhub.search.namespaces", len(readable))
            if not readable:
                span.set_attribute("memhub.search.hits", 0)
                return SearchResult(())
            flt = channels.index_filter(query, readable)
            ranking = fusion.fuse(
                channels.gather(env.index, conn, asked, readable, dense, flt), asked.weights, env.settings.rrf_k
            )
            ranking = time_channel.boost(conn, asked, ranking)
            ranking = graph.add_channel(conn, env.settings.graph, asked, ranking, readable)
            ranking = preference.add_channel(env.index, conn, asked, ranking, readable, dense, flt)
            ranking = expansion.expand(env.index, env.settings, conn, asked, ranking, dense, flt)
            ranking = smoothing.smooth_neighbours(conn, ranking, asked.smoothing, query.top_k)
            reranker = reranking.choose(env.reranker, env.local_reranker, query, asked, env.settings.rerank_max_query_terms)
            head = reranking.rows_needed(reranker, env.rerank_depth, query.top_k)
            found = hydration.hydrate(conn, ranking.fused, query, readable, head)
            # Restatements out first: that step rebuilds the list in fused order, and the second opinion ranks the
            # head the rerank will see.
            found = derived.leave_out_restatements(found, asked, conn, readable, ranking.fused)
            found, multilingual_failure = multilingual.rescore(  # a second dense opinion: only with the dense channel
                found,
                query.text,
                env.second_opinion if asked.dense else None,
                env.settings.multilingual_weight,
                env.rerank_depth,
                ranking.k,
            )
            after_priors, prior_parts = priors.for_query(found.fused, found.records, env.prior_weights, query)
            fused, rerank_failure, rerank_scores = reranking.rerank(
                reranker, env.rerank_depth, query.text, after_priors, found.records
            )
            reranked = fused
            fused = derived.collapse(fused, found.records)
            fused = diversity.spread_sessions(fused, found.records, asked, env.settings.session_spread)
            fused, spoken_by_others = speakers.demote_other_speakers(fused, found.records, asked, env.settings.speaker_places)
            placed = (
                placement.placements(
                    found.fused, after_priors if prior_parts else None, fused, rerank_scores, reranked, spoken_by_others
                )
                if query.explain
                else {}
            )
            hits = judging.judged_hits(env.index.index, asked, fused[: query.top_k], found.records, prior_parts, vector, placed)
            hits = budget.fit_tokens(hits, query.max_tokens)
            hits = context_turns.attach(conn, hits, query.context_window, readable)
            hits, truncated = budget.fit_response(hits, env.response_budget)
    finally:
        if vector is not None:
            vector.cancel()  # not needed after all (nothing readable, or an error); no-op once done
    recording.recalled(env.recorder, hits)
    degraded = ranking.degraded or multilingual_failure or rerank_failure
    span.set_attribute("memhub.search.hits", len(hits))
    if degraded:
        span.set_attribute("memhub.search.degraded", True)
    if truncated:
        span.set_attribute("memhub.search.truncated", True)
    return SearchResult(tuple(hits), degraded, truncated, namespaces=tuple(readable))


def _attributes(query: SearchQuery) -> dict[str, int | list[str]]:
    return {
        "memhub.search.query_chars": len(query.text),
        "memhub.search.top_k": query.top_k,
        "memhub.search.channels": [ch.value for ch in query.channels],
    }
