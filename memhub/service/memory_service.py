"""The memory service: write, search, get, list, forget, in plain Python, one use case per module.

``MemoryService`` is the one object the servicers, the consolidator and app.py hold; it builds the shared
``ServiceContext`` and hands each call to its use case: memhub/service/write.py, search.py, reading.py,
forgetting.py, and memhub/service/feedback.py (MarkUsed, the retrieval log). It decides nothing itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, Engine

from memhub.audit.aggregate import AggregatedEvents
from memhub.audit.writer import AuditWriter
from memhub.core import lineage, response_size, screening
from memhub.core.access import Authorizer
from memhub.core.history_paging import HistoryPaging
from memhub.core.index_health import IndexHealth
from memhub.core.indexer import Indexer
from memhub.core.model import (
    Caller,
    ForgetRequest,
    ForgetResult,
    ListPage,
    ListQuery,
    MemoryRecord,
    NewMemory,
    SearchQuery,
    SearchResult,
    WriteResponse,
)
from memhub.core.near_duplicates import NearDuplicateFinder
from memhub.core.recall_stats import RecallRecorder
from memhub.curation import write_gate
from memhub.curation.fact_extraction import FactExtractor
from memhub.curation.near_dup import NearDupConfig
from memhub.embedding import Embedder
from memhub.index import MilvusIndex
from memhub.rerank import Reranker
from memhub.retrieval_log.records import LogPage, LogQuery, MarkedCount, UseMarks
from memhub.retrieval_log.writer import RetrievalLogWriter
from memhub.search.priors import PriorWeights
from memhub.search.settings import RetrievalSettings
from memhub.service.context import ServiceContext
from memhub.service.feedback import RetrievalFeedback
from memhub.service.forgetting import Forgetting
from memhub.service.reading import Reading
from memhub.service.search import Searching
from memhub.service.write import Writing


class MemoryService:
    def __init__(
        self,
        engine: Engine,
        index: MilvusIndex,
        embedder: Embedder,
        indexer: Indexer,
        authorizer: Authorizer,
        recorder: RecallRecorder,
        index_health: IndexHealth | None = None,
        *,
        wait_indexed_timeout_s: float = 10.0,
        search_threads: int = 16,
        retrieval: RetrievalSettings | None = None,
        reranker: Reranker | None = None,
        rerank_depth: int = 30,
        max_response_bytes: int = 4 * 2**20,
        screening_config: screening.ScreeningConfig | None = None,
        audit: AuditWriter | None = None,
        near_dup: NearDupConfig | None = None,
        prior_weights: PriorWeights | None = None,
        gate: write_gate.GateConfig | None = None,
        events: AggregatedEvents | None = None,
        retrieval_log: RetrievalLogWriter | None = None,
        extractor: FactExtractor | None = None,
    ) -> None:
        """``audit``: the writer the authorizer records into; given, writes and forgets commit their
        decisions in their own transactions (memhub/audit/held.py). None: decisions go wherever the
        authorizer sends them (benchmarks with policies off record none). ``retrieval_log``: where
        every search is logged (None: nowhere, and searches return no search_id). ``extractor``: the LLM
        fact extractor of the write gate (None: off, the default; memhub/curation/fact_extraction.py)."""
        index_health = index_health or IndexHealth()
        ctx = ServiceContext(
            engine=engine,
            reads=engine.execution_options(isolation_level="AUTOCOMMIT"),
            index=index,
            embedder=embedder,
            indexer=indexer,
            authorizer=authorizer,
            recorder=recorder,
            index_health=index_health,
            response_budget=max_response_bytes - response_size.ENVELOPE_BYTES,
            audit=audit,
        )
        self._ctx = ctx
        self._extractor = extractor
        gate = gate or write_gate.GateConfig()
        self._writing = Writing(
            ctx,
            screening_config=screening_config or screening.ScreeningConfig(),
            gate=gate,
            extractor=extractor,
            near_dups=NearDuplicateFinder(ctx.reads, index, embedder, index_health, near_dup or NearDupConfig()),
            events=events,
            wait_indexed_timeout_s=wait_indexed_timeout_s,
        )
        self._searching = Searching(
            ctx,
            search_threads=search_threads,
            retrieval=retrieval or RetrievalSettings(),
            reranker=reranker,
            rerank_depth=rerank_depth,
            prior_weights=prior_weights or PriorWeights(),
            retrieval_log=retrieval_log,
        )
        self._reading = Reading(ctx)
        self._forgetting = Forgetting(ctx, gate)
        self._feedback = RetrievalFeedback(engine, authorizer, recorder)

    @property
    def embedding_model(self) -> str:
        return self._ctx.embedder.model_id

    @property
    def _retrieval_log(self) -> RetrievalLogWriter | None:
        """Where searches are logged; tests swap it on a running hub (tests/test_retrieval_log.py)."""
        return self._searching.retrieval_log

    @_retrieval_log.setter
    def _retrieval_log(self, writer: RetrievalLogWriter | None) -> None:
        self._searching.retrieval_log = writer

    def close(self) -> None:
        self._searching.close()
        if self._extractor is not None:
            self._extractor.close()

    def write(
        self,
        caller: Caller,
        items: Sequence[NewMemory],
        *,
        session_id: str = "",
        request_id: str | None = None,
        request_hash: str = "",
        wait_indexed: bool = False,
        force: bool = False,
        screened_by_hub: bool = False,
        consolidated: bool = False,
    ) -> WriteResponse:
        """memhub/service/write.py"""
        return self._writing.write(
            caller,
            items,
            session_id=session_id,
            request_id=request_id,
            request_hash=request_hash,
            wait_indexed=wait_indexed,
            force=force,
            screened_by_hub=screened_by_hub,
            consolidated=consolidated,
        )

    def search(self, caller: Caller, query: SearchQuery) -> SearchResult:
        """memhub/service/search.py"""
        return self._searching.search(caller, query)

    def get(self, caller: Caller, memory_id: str) -> MemoryRecord:
        return self._reading.get(caller, memory_id)

    def history(self, caller: Caller, memory_id: str, limit: int) -> tuple[str, list[MemoryRecord], bool]:
        return self._reading.history(caller, memory_id, limit)

    def history_page(self, caller: Caller, memory_id: str, want: HistoryPaging) -> tuple[str, list[MemoryRecord], str]:
        return self._reading.history_page(caller, memory_id, want)

    def readable_links(self, caller: Caller, records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
        return self._reading.readable_links(caller, records)

    def lineage(
        self,
        caller: Caller,
        memory_id: str,
        *,
        roots: Sequence[str] = (),
        max_depth: int = lineage.DEFAULT_DEPTH,
        max_entries: int = lineage.DEFAULT_ENTRIES,
    ) -> lineage.Lineage:
        return self._reading.lineage(caller, memory_id, roots=roots, max_depth=max_depth, max_entries=max_entries)

    def forget(
        self, caller: Caller, request: ForgetRequest, *, request_id: str | None = None, request_hash: str = ""
    ) -> ForgetResult:
        """memhub/service/forgetting.py"""
        return self._forgetting.forget(caller, request, request_id=request_id, request_hash=request_hash)

    def restore(self, caller: Caller, ids: Sequence[str]) -> list[str]:
        return self._forgetting.restore(caller, ids)

    def mark_used(self, caller: Caller, marks: UseMarks) -> MarkedCount:
        """Which recalled memories the caller used (memhub/service/feedback.py)."""
        return self._feedback.mark_used(caller, marks)

    def retrieval_log(self, caller: Caller, query: LogQuery) -> LogPage:
        """A page of the retrieval log: the caller's own searches, or (admins) anyone's."""
        return self._feedback.log_page(caller, query)

    def _readable_namespaces(self, caller: Caller, roots: Sequence[str], conn: Connection | None = None) -> list[str]:
        """memhub/service/context.py; bench/anatomy.py times it on its own."""
        return self._ctx.readable_namespaces(caller, roots, conn)

    # Last: below this line ``list`` in an annotation would name this method, not the builtin.
    def list(self, caller: Caller, query: ListQuery) -> ListPage:
        return self._reading.list(caller, query)
