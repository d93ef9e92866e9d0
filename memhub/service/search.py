"""Searching memories: the caller's readable namespaces, then the retrieval stages, then recall and the log.

Postgres is the truth; Milvus only proposes candidates, which are re-checked against Postgres before
anything is returned. The service adds counts (never content or query text) to the current span, the
RPC's; the channels run in a thread pool, each in a copy of the caller's context, so their spans stay
children of the RPC span.
"""

from __future__ import annotations

import contextvars
import dataclasses
import logging
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timezone

import numpy as np
from opentelemetry import trace
from sqlalchemy import Connection

from memhub import outage_log, telemetry
from memhub.core import fusion, priors, relevance, response_size
from memhub.core.model import Caller, Channel, MemoryFilter, MemoryRecord, SearchHit, SearchQuery, SearchResult
from memhub.core.retrieval import Retrieval, RetrievalSettings
from memhub.db import context
from memhub.db import memories as memories_db
from memhub.embedding import EmbeddingError
from memhub.index import IndexBackendError, IndexFilter
from memhub.rerank import Candidate, Reranker, RerankError
from memhub.rerank.local import LocalReranker
from memhub.retrieval_log.writer import RetrievalLogWriter
from memhub.service.context import ServiceContext

log = logging.getLogger(__name__)
_tracer = telemetry.tracer(__name__)


def _index_filter(query: SearchQuery, readable: list[str]) -> IndexFilter:
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


def _prior_tuple(part: priors.PriorBreakdown | None) -> tuple[float, float, float, float] | None:
    return None if part is None else (part.importance, part.recency, part.use, part.type)


class Searching:
    def __init__(
        self,
        ctx: ServiceContext,
        *,
        search_threads: int,
        retrieval: RetrievalSettings,
        reranker: Reranker | None,
        rerank_depth: int,
        prior_weights: priors.PriorWeights,
        retrieval_log: RetrievalLogWriter | None,
    ) -> None:
        self._ctx = ctx
        self._reranker = reranker
        self._rerank_depth = rerank_depth
        self._local_reranker = LocalReranker()
        self.retrieval_log = retrieval_log
        # Channels of one search run side by side: dense waits on the embedder, keyword on Milvus.
        self._pool = ThreadPoolExecutor(max_workers=search_threads, thread_name_prefix="memhub-search")
        self._retrieval = Retrieval(ctx.index, ctx.index_health, self._pool, retrieval)
        self._priors = prior_weights

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._reranker is not None:
            self._reranker.close()

    def search(self, caller: Caller, query: SearchQuery) -> SearchResult:
        result = self._search(caller, query)
        if self.retrieval_log is None:
            return result
        # Queued, never waited for: a full queue drops the entry (memhub/retrieval_log/writer.py).
        return dataclasses.replace(result, search_id=self.retrieval_log.record_search(caller, query.text, result))

    def _embed_query(self, text: str) -> np.ndarray:
        return self._ctx.embedder.embed([text])[0]

    def _search(self, caller: Caller, query: SearchQuery) -> SearchResult:
        ctx = self._ctx
        span = trace.get_current_span()
        span.set_attributes(
            {
                "memhub.search.query_chars": len(query.text),
                "memhub.search.top_k": query.top_k,
                "memhub.search.channels": [ch.value for ch in query.channels],
            }
        )
        judge = relevance.Judge(query.text, ctx.embedder.model_id)
        # The query's embedding does not depend on who asks: start it now, while
        # Postgres and the policies decide which namespaces may be searched. Relevance
        # needs it too, so it is made even when the dense channel is not asked for.
        vector = None
        dense = Channel.DENSE in query.channels
        if (dense or judge.wants_cosine) and ctx.index_health.ok:
            vector = self._pool.submit(contextvars.copy_context().run, self._embed_query, query.text)
        try:
            # One connection for the whole search, in autocommit: read-only
            # statements need no BEGIN/ROLLBACK round trips.
            with ctx.reads.connect() as conn:
                readable = ctx.readable_namespaces(caller, query.filter.namespaces, conn)
                span.set_attribute("memhub.search.namespaces", len(readable))
                if not readable:
                    span.set_attribute("memhub.search.hits", 0)
                    return SearchResult(())
                # Deeper channel lists than top_k: fusion needs overlap, and hydration may drop stale hits.
                depth = min(max(query.top_k * 3, 30), 300)
                ranked = self._retrieval.rank(
                    conn, query, readable, depth, vector if dense else None, _index_filter(query, readable)
                )
                fused, degraded = ranked.fused, ranked.degraded
                flt = query.filter
                ids = [f.id for f in fused]
                reranker = self._reranker_for(query)
                # A few spare rows cover hits that turn out stale or filtered; a second round covers the rest.
                head = max(query.top_k + 3, self._rerank_depth if reranker else 0)
                records = memories_db.hydrate(conn, ids[:head], flt, readable)
                if len(records) < query.top_k and len(ids) > head:  # stale or filtered hits: look deeper
                    records.update(memories_db.hydrate(conn, ids[head:], flt, readable))
                fused = [f for f in fused if f.id in records]
                prior_parts: dict[str, priors.PriorBreakdown] = {}
                if (query.priors if query.priors is not None else True) and not self._priors.off:
                    # Before the rerank: the local reranker starts from the fused score, priors included.
                    now = query.as_of or datetime.now(timezone.utc)
                    fused, prior_parts = priors.apply(fused, records, self._priors, now)
                if reranker is not None:
                    fused, failure = self._reranked(reranker, query.text, fused, records)
                    degraded = degraded or failure
                fused = fused[: query.top_k]
                judged = self._relevances(judge, fused, records, vector if judge.wants_cosine else None)
                hits = [
                    SearchHit(
                        records[f.id],
                        f.score,
                        f.channels if query.explain else (),
                        relevance=r,
                        priors=_prior_tuple(prior_parts.get(f.id)) if query.explain else None,
                    )
                    for f, r in zip(fused, judged, strict=True)
                    if r >= query.min_relevance
                ]
                hits = hits[: fusion.fit_budget([h.memory.content for h in hits], query.max_tokens)]
                if query.context_window and hits:
                    hits = self._with_context(conn, hits, query.context_window, readable)
                kept = response_size.fitting([response_size.hit_bytes(h) for h in hits], ctx.response_budget)
                truncated, hits = kept < len(hits), hits[:kept]
        finally:
            if vector is not None:
                vector.cancel()  # not needed after all (nothing readable, or an error); no-op once done
        ctx.recorder.record(h.memory.id for h in hits)
        span.set_attribute("memhub.search.hits", len(hits))
        if degraded:
            span.set_attribute("memhub.search.degraded", True)
        if truncated:
            span.set_attribute("memhub.search.truncated", True)
        return SearchResult(tuple(hits), degraded, truncated, namespaces=tuple(readable))

    def _relevances(
        self, judge: relevance.Judge, fused: list[fusion.Fused], records: dict[str, MemoryRecord], vector: Future | None
    ) -> list[float]:
        """Each hit's relevance (memhub/core/relevance.py). The dense channel gave the similarity of the hits it
        found; the few others' is computed from their stored vectors (one index query), and when that fails
        they are judged without it (the model-free calibration), never failing the search."""
        cosines = {f.id: c.score for f in fused for c in f.channels if c.channel is Channel.DENSE}
        missing = [f.id for f in fused if f.id not in cosines]
        if vector is not None and missing:
            with _tracer.start_as_current_span("search.relevance_vectors", attributes={"memhub.search.hits": len(missing)}):
                try:
                    held = self._ctx.index.vectors(missing)
                    query_vector = vector.result()
                    cosines.update({mid: float(np.dot(v, query_vector)) for mid, v in held.items()})
                except (IndexBackendError, EmbeddingError) as exc:
                    outage_log.Site("searches", log, ()).failed(exc, f"relevance without similarity for {len(missing)} hits")
        # Rounded as SearchHit.relevance carries it (a float32), so a client that passes a relevance it saw
        # as min_relevance keeps that hit.
        return [
            float(np.float32(judge.relevance(records[f.id].content, records[f.id].entities, cosines.get(f.id)))) for f in fused
        ]

    def _reranker_for(self, query: SearchQuery) -> Reranker | None:
        if query.rerank is None:
            return self._reranker
        if not query.rerank:
            return None
        return self._reranker or self._local_reranker

    def _reranked(
        self, reranker: Reranker, text: str, fused: list[fusion.Fused], records: dict[str, MemoryRecord]
    ) -> tuple[list[fusion.Fused], str]:
        """The best ``rerank_depth`` candidates in the reranker's order, the rest after them; on failure the
        fused order and why."""
        top, rest = fused[: self._rerank_depth], fused[self._rerank_depth :]
        candidates = [Candidate(f.id, records[f.id].content, f.score, records[f.id].entities) for f in top]
        with _tracer.start_as_current_span("rerank", attributes={"memhub.rerank.candidates": len(top)}):
            try:
                scores = reranker.scores(text, candidates)
            except RerankError as exc:
                log.warning("rerank failed, keeping the fused order: %s", exc)
                return fused, "the rerank stage failed; hits are in fused order"
        order = sorted(range(len(top)), key=lambda i: -scores[i])  # stable: ties keep the fused order
        return [top[i] for i in order] + rest, ""

    @staticmethod
    def _with_context(conn: Connection, hits: list[SearchHit], turns: int, readable: list[str]) -> list[SearchHit]:
        """Attach the turns around each episodic hit in its session (servable, same namespace, so readable)."""
        around = context.neighbour_ids(conn, [h.memory.id for h in hits], context.Window(turns, turns))
        wanted = list(dict.fromkeys(nid for before, after in around.values() for nid in (*before, *after)))
        records = memories_db.hydrate(conn, wanted, MemoryFilter(namespaces=()), readable)
        out = []
        for h in hits:
            before, after = around.get(h.memory.id, ((), ()))
            out.append(
                dataclasses.replace(
                    h,
                    before=tuple(records[n] for n in before if n in records),
                    after=tuple(records[n] for n in after if n in records),
                )
            )
        return out
