"""Searching memories: the caller's rights decide the namespaces, the search pipeline does the rest
(memhub/search/pipeline.py), and the search is logged (memhub/search/recording.py)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import Connection

from memhub.core.model import Caller, SearchQuery, SearchResult
from memhub.embedding.multilingual_use import MultilingualUSE
from memhub.rerank import Reranker
from memhub.rerank.local import LocalReranker
from memhub.retrieval_log.writer import RetrievalLogWriter
from memhub.search import multilingual, pipeline, recording
from memhub.search.priors import PriorWeights
from memhub.search.settings import IndexAccess, RetrievalSettings
from memhub.service.context import ServiceContext


class Searching:
    def __init__(
        self,
        ctx: ServiceContext,
        *,
        search_threads: int,
        retrieval: RetrievalSettings,
        reranker: Reranker | None,
        rerank_depth: int,
        prior_weights: PriorWeights,
        retrieval_log: RetrievalLogWriter | None,
    ) -> None:
        self._ctx = ctx
        self.retrieval_log = retrieval_log
        # Channels of one search run side by side: dense waits on the embedder, keyword on Milvus.
        self._pool = ThreadPoolExecutor(max_workers=search_threads, thread_name_prefix="memhub-search")
        self._env = pipeline.SearchEnv(
            reads=ctx.reads,
            index=IndexAccess(ctx.index, ctx.index_health, self._pool),
            embedder=ctx.embedder,
            recorder=ctx.recorder,
            settings=retrieval,
            prior_weights=prior_weights,
            reranker=reranker,
            local_reranker=LocalReranker(),
            rerank_depth=rerank_depth,
            response_budget=ctx.response_budget,
            # Loaded on the first question or head in another script; an English-only hub never loads it.
            second_opinion=multilingual.SecondOpinion(MultilingualUSE()) if retrieval.multilingual_weight > 0 else None,
        )

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._env.reranker is not None:
            self._env.reranker.close()

    def search(self, caller: Caller, query: SearchQuery) -> SearchResult:
        def readable(conn: Connection) -> list[str]:  # decided on the search's own connection
            return self._ctx.readable_namespaces(caller, query.filter.namespaces, conn)

        result = pipeline.search(self._env, query, readable)
        return recording.logged(self.retrieval_log, caller, query.text, result)
