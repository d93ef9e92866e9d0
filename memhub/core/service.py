"""The memory service: write, search, get, list, forget, in plain Python.

Inputs arrive validated (memhub/api/convert.py builds them); this layer checks
access, runs the transactions and the retrieval channels, and returns domain
records. Postgres is the truth; Milvus only proposes candidates, which are
re-checked against Postgres before anything is returned.

Tracing: the service adds counts (never content or query text) to the
current span, the RPC's; policy, embedding, Milvus and Postgres spans are
its children. Search runs its channels in a thread pool, each in a copy of
the caller's context, so their spans stay children of the RPC span.
"""

from __future__ import annotations

import contextvars
import dataclasses
import logging
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timezone
from typing import TypeVar

import numpy as np
from opentelemetry import trace
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

from memhub import outage_log, telemetry
from memhub.audit.aggregate import AggregatedEvents, EventKey
from memhub.audit.held import HeldDecisions, NotHeld
from memhub.audit.writer import AuditWriter
from memhub.core import extracted_facts, fusion, lineage, paging, priors, relevance, response_size, screening, visible_links
from memhub.core.access import Action, Authorizer, denied, require
from memhub.core.history_paging import HistoryPaging, refuse_token
from memhub.core.history_paging import page as history_page
from memhub.core.index_health import IndexHealth
from memhub.core.indexer import Indexer
from memhub.core.model import (
    Caller,
    Channel,
    ForgetRequest,
    ForgetResult,
    ListPage,
    ListQuery,
    MemoryFilter,
    MemoryRecord,
    NewMemory,
    Replaced,
    SearchHit,
    SearchQuery,
    SearchResult,
    Status,
    WriteOutcome,
    WriteResponse,
)
from memhub.core.namespaces import minimal_roots
from memhub.core.near_duplicates import NearDuplicateFinder
from memhub.core.recall_stats import RecallRecorder
from memhub.core.retrieval import Retrieval, RetrievalSettings
from memhub.core.retrieval_feedback import RetrievalFeedback
from memhub.curation import archive, write_gate
from memhub.curation.fact_extraction import FactExtractor
from memhub.curation.near_dup import NearDupConfig
from memhub.db import changes as changes_db
from memhub.db import context, idempotency, namespace_scope
from memhub.db import lineage as lineage_db
from memhub.db import memories as memories_db
from memhub.db import versions as versions_db
from memhub.db.engine import is_transient_conflict
from memhub.embedding import Embedder, EmbeddingError
from memhub.errors import Aborted, FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from memhub.index import IndexBackendError, IndexFilter, MilvusIndex
from memhub.rerank import Candidate, Reranker, RerankError
from memhub.rerank.local import LocalReranker
from memhub.retrieval_log.records import LogPage, LogQuery, MarkedCount, UseMarks
from memhub.retrieval_log.writer import RetrievalLogWriter

log = logging.getLogger(__name__)
_tracer = telemetry.tracer(__name__)
T = TypeVar("T")


_CONFLICT_ATTEMPTS = 3


def _retrying_conflicts(transaction: Callable[[], T]) -> T:
    """Run ``transaction`` again (up to 3 times in all) when Postgres rolled it back for a deadlock
    or serialization failure; then report Aborted, which a client may retry. Safe: a rolled-back
    transaction left nothing behind, and ``transaction`` does all its reading inside itself."""
    for attempt in range(1, _CONFLICT_ATTEMPTS + 1):
        try:
            return transaction()
        except DBAPIError as exc:
            if not is_transient_conflict(exc):
                raise
            if attempt == _CONFLICT_ATTEMPTS:
                raise Aborted("the request conflicted with concurrent writes; retry it") from exc
            log.info("write transaction rolled back for a conflict (attempt %d); running it again", attempt)
            time.sleep(random.uniform(0.005, 0.05) * attempt)  # jitter: the other writer gets ahead
    raise AssertionError("unreachable")


class _ConcurrentRetry(Exception):
    """A call with the same request_id committed while this one ran: replay its result."""


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


def _refuse_blind_subject_keys(items: Sequence[NewMemory], blind: frozenset[str]) -> None:
    """A write into a namespace the caller cannot read may not carry a subject key.

    Superseding would retire a memory the caller cannot see, and the answer
    (what was superseded) would describe it. Refused whether or not such a
    memory exists, so the refusal itself reveals nothing.
    """
    for i, item in enumerate(items):
        if item.subject_key is not None and item.namespace in blind:
            raise PermissionDenied(
                f"memories[{i}].subject_key: this agent may write {item.namespace!r} but not read it, so its writes "
                "there cannot carry a subject_key (replacing a memory needs reading it and the forget right); "
                "write it without subject_key"
            )


def as_first_written(record: MemoryRecord, item: NewMemory) -> MemoryRecord:
    """``record`` as its writer's first response showed it, with nothing that changed since or came from others.

    Fields fixed at insert come from the row; content and entities (which a
    forget erases) from ``item``, the same request again; status, links and
    recall statistics are those of a new memory. Built field by field: a field
    added to MemoryRecord must be placed here deliberately (fields with
    defaults would otherwise slip through as their default).
    """
    return MemoryRecord(
        id=record.id,
        namespace=record.namespace,
        kind=record.kind,
        type=record.type,
        content=item.content,
        tags=record.tags,
        entities=item.entities,
        importance=record.importance,
        confidence=record.confidence,
        occurred_at=record.occurred_at,
        created_at=record.created_at,
        updated_at=record.created_at,
        valid_from=record.valid_from,
        valid_to=record.valid_to,
        expires_at=record.expires_at,
        source_agent=record.source_agent,
        source_session=record.source_session,
        source_trace=record.source_trace,
        source_request_id=record.source_request_id,
        source_trace_from_caller=record.source_trace_from_caller,
        content_hash=record.content_hash,
        # What the insert stored: quarantined when screening held it back (the same request, screened
        # again), else active; never what an admin or a reader did with it since.
        status=Status.QUARANTINED if item.quarantined else Status.ACTIVE,
        subject_key=record.subject_key,
        supersedes=(),
        derived_from=record.derived_from,
        superseded_by=None,
        recall_count=0,
        last_recalled_at=None,
        embedding_model=record.embedding_model,
        forgotten_at=None,
        forgotten_by=None,
        forget_reason=None,
        trust=record.trust,
        flags=record.flags,
        seen_count=1,
        use_count=0,
        not_useful_count=0,
        last_used_at=None,
        version=1,  # a new memory's; a replay puts in the version the first response showed
        hidden_sources=0,  # the API layer counts them for the reader (memhub/core/visible_links.py)
    )


def _gated_outcomes(stored: Sequence[WriteOutcome | None], gated: write_gate.Gated) -> list[WriteOutcome]:
    """One outcome per memory of the request: what was stored (with the secrets redacted), or the filter's rule."""
    out = []
    for i, outcome in enumerate(stored):
        if outcome is None:
            out.append(WriteOutcome(None, deduplicated=False, filtered=gated.filtered[i]))
        else:
            out.append(dataclasses.replace(outcome, redacted=gated.redacted.get(i, ())))
    return out


def _prior_tuple(part: priors.PriorBreakdown | None) -> tuple[float, float, float, float] | None:
    return None if part is None else (part.importance, part.recency, part.use, part.type)


def _with_effective_status(record: MemoryRecord) -> MemoryRecord:
    """An active memory past its expiry reads as expired even before the sweeper marks it."""
    if record.status is Status.ACTIVE and record.expires_at is not None and record.expires_at <= datetime.now(timezone.utc):
        return dataclasses.replace(record, status=Status.EXPIRED)
    return record


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
        prior_weights: priors.PriorWeights | None = None,
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
        self._engine = engine
        self._screening = screening_config or screening.ScreeningConfig()
        # Read-only work runs in autocommit: no BEGIN/ROLLBACK round trip per statement batch.
        self._reads = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._index = index
        self._embedder = embedder
        self._indexer = indexer
        self._authorizer = authorizer
        self._recorder = recorder
        self._index_health = index_health or IndexHealth()
        self._wait_timeout = wait_indexed_timeout_s
        self._reranker = reranker
        self._rerank_depth = rerank_depth
        # What list pages and search results are cut to (memhub/core/response_size.py).
        self._response_budget = max_response_bytes - response_size.ENVELOPE_BYTES
        self._local_reranker = LocalReranker()
        self._audit = audit
        self._retrieval_log = retrieval_log
        self._feedback = RetrievalFeedback(engine, authorizer, recorder)
        # Channels of one search run side by side: dense waits on the embedder, keyword on Milvus.
        self._pool = ThreadPoolExecutor(max_workers=search_threads, thread_name_prefix="memhub-search")
        self._retrieval = Retrieval(index, self._index_health, self._pool, retrieval or RetrievalSettings())
        self._priors = prior_weights or priors.PriorWeights()
        self._gate = gate or write_gate.GateConfig()
        self._extractor = extractor
        self._events = events
        self._near_dups = NearDuplicateFinder(self._reads, index, embedder, self._index_health, near_dup or NearDupConfig())

    def _hold_decisions(self) -> HeldDecisions | NotHeld:
        return self._audit.hold() if self._audit is not None else NotHeld()

    @property
    def embedding_model(self) -> str:
        return self._embedder.model_id

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._reranker is not None:
            self._reranker.close()
        if self._extractor is not None:
            self._extractor.close()

    # -- write ------------------------------------------------------------------

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
        """Store ``items`` (one transaction) after the write gate (memhub/curation/write_gate.py): secrets redacted or
        refused, small talk filtered unless ``force`` (which needs write_unfiltered on every namespace).
        ``screened_by_hub``: the hub itself wrote the text (consolidation): the filter does not apply, secrets do.
        ``consolidated``: the change feed reports the new memories as consolidated rather than written."""
        trace.get_current_span().set_attributes(
            {"memhub.memories": len(items), "memhub.namespaces": len({item.namespace for item in items})}
        )
        # Every decision of this request commits with the memories it allowed (memhub/audit/held.py).
        with self._hold_decisions() as held:
            namespaces = list(dict.fromkeys(item.namespace for item in items))
            for ns in namespaces:
                require(self._authorizer, caller, Action.WRITE, ns)
            if force:
                for ns in namespaces:
                    require(self._authorizer, caller, Action.WRITE_UNFILTERED, ns)
            bypass = force or screened_by_hub
            gated = write_gate.gate(items, self._gate, unfiltered=frozenset(namespaces) if bypass else frozenset())
            items = list(items)
            for i, kept in gated.kept:
                items[i] = kept  # redacted, or kept as a fact to remember
            skip = frozenset(gated.filtered)
            blind = self._blind_namespaces(caller, namespaces)
            _refuse_blind_subject_keys(items, blind)
            may_supersede = self._supersedable_namespaces(caller, items)
            self._check_sources_readable(caller, items)
            # Flags and quarantine come from the hub's own reading of the content, never from the request.
            items = screening.screened(items, self._screening)
            if request_id is not None and self._extractor is not None and self._already_done(caller, request_id):
                return self._replay_write(caller, request_id, request_hash, items)  # without asking the model again
            # The extractor's HTTP calls happen here, before the transaction, never inside it.
            planned = extracted_facts.plan(
                None if screened_by_hub else self._extractor,
                items,
                skip,
                blind,
                lambda keyed: self._may_forget(caller, keyed),
                self._gate,
                self._screening,
            )
            facts_may_supersede = self._supersedable_namespaces(caller, planned.facts)
            # One near-duplicate pass over the memories and their facts: one embedding batch, one index search
            # per (namespace, kind).
            found = self._near_dups.find([*items, *planned.facts], session_id, blind)
            near = {i: t for i, t in found.items() if i < len(items) and i not in skip}
            near_facts = {i - len(items): t for i, t in found.items() if i >= len(items)}

            def transaction() -> list[WriteOutcome]:
                with self._engine.begin() as conn:
                    if consolidated:
                        changes_db.mark_consolidation(conn)
                    if request_id is not None:
                        prior = idempotency.lookup(conn, caller.agent_id, request_id)
                        if prior is not None:
                            raise _ConcurrentRetry()
                    stored = memories_db.insert_memories(
                        conn,
                        caller,
                        session_id,
                        items,
                        self._embedder.model_id,
                        blind=blind,
                        may_supersede=may_supersede,
                        near=near,
                        skip=skip,
                    )
                    outcomes = _gated_outcomes(stored, gated)
                    if planned.facts or planned.failed:
                        outcomes = self._store_facts(conn, caller, session_id, outcomes, planned, near_facts, facts_may_supersede)
                    if request_id is not None:
                        response = {
                            "ids": [o.memory.id if o.memory is not None else None for o in outcomes],
                            "dedup": [o.deduplicated for o in outcomes],
                            "near": [o.near for o in outcomes],
                            "filtered": [o.filtered for o in outcomes],
                            "redacted": [list(o.redacted) for o in outcomes],
                            # As first written: a replay to a caller that can no longer read a memory shows these.
                            "versions": [o.memory.version if o.memory is not None else None for o in outcomes],
                            "replaced": [[o.replaced.id, o.replaced.version] if o.replaced else None for o in outcomes],
                            "extracted": [
                                [{"id": f.memory.id, "dedup": f.deduplicated, "near": f.near} for f in o.extracted if f.memory]
                                for o in outcomes
                            ],
                            "extraction_failed": [o.extraction_failed for o in outcomes],
                        }
                        if not idempotency.store(conn, caller.agent_id, request_id, "write", request_hash, response):
                            raise _ConcurrentRetry()  # rolls this transaction back
                    held.insert(conn)
                held.committed()
                return outcomes

            try:
                outcomes = _retrying_conflicts(transaction)
            except _ConcurrentRetry:
                return self._replay_write(caller, request_id or "", request_hash, items)
        self._count_filtered(caller, gated)
        self._indexer.nudge()
        indexed = False
        if wait_indexed:
            indexed = self._indexer.wait_indexed([o.memory.id for o in outcomes if o.memory is not None], self._wait_timeout)
        trace.get_current_span().set_attributes(
            {
                "memhub.deduplicated": sum(o.deduplicated for o in outcomes),
                "memhub.filtered": len(gated.filtered),
                "memhub.extracted": sum(len(o.extracted) for o in outcomes),
            }
        )
        return WriteResponse(tuple(outcomes), indexed=indexed)

    def _store_facts(
        self,
        conn: Connection,
        caller: Caller,
        session_id: str,
        outcomes: list[WriteOutcome],
        planned: extracted_facts.PlannedFacts,
        near: dict[int, str],
        may_supersede: frozenset[str],
    ) -> list[WriteOutcome]:
        """Store the extracted facts, each derived_from the memory it came from (stored just before, in this
        transaction), and attach their outcomes to that memory's."""
        linked = []
        for fact, origin in zip(planned.facts, planned.origin, strict=True):
            source = outcomes[origin].memory
            assert source is not None  # facts come only from memories the write kept
            linked.append(dataclasses.replace(fact, derived_from=(source.id,)))
        stored = memories_db.insert_memories(
            conn, caller, session_id, linked, self._embedder.model_id, may_supersede=may_supersede, near=near
        )
        by_origin: dict[int, list[WriteOutcome]] = {}
        for origin, outcome in zip(planned.origin, stored, strict=True):
            assert outcome is not None  # nothing is skipped among facts
            by_origin.setdefault(origin, []).append(outcome)
        return [
            dataclasses.replace(o, extracted=tuple(by_origin.get(i, ())), extraction_failed=i in planned.failed)
            for i, o in enumerate(outcomes)
        ]

    def _replay_write(self, caller: Caller, request_id: str, request_hash: str, items: Sequence[NewMemory]) -> WriteResponse:
        """The first result of this request_id again.

        A memory the caller can read now is shown as it is now. One it can
        no longer read (a write-only namespace, or rights withdrawn since)
        is shown as the first response showed it, rebuilt from this request
        (the same one: its hash matched) and the memory's fixed fields, so
        a replay never reveals what others did since: a forget, a
        supersession, recalls.
        """
        with self._engine.connect() as conn:
            prior = idempotency.lookup(conn, caller.agent_id, request_id)
            if prior is None:  # cannot happen: a row was seen or blocked our insert
                raise FailedPrecondition(f"request_id {request_id!r}: earlier result vanished; retry with a new id")
            self._check_same_request(prior, "write", request_id, request_hash)
            records = []
            for mid in prior.response["ids"]:
                if mid is None:  # filtered: nothing was stored
                    records.append(None)
                    continue
                record = memories_db.get(conn, mid)
                if record is None:
                    raise FailedPrecondition(f"request_id {request_id!r}: memory {mid} no longer exists")
                records.append(record)
        namespaces = list(dict.fromkeys(r.namespace for r in records if r is not None))
        unreadable = self._blind_namespaces(caller, namespaces)
        outcomes = []
        near_flags = prior.response.get("near") or [False] * len(records)  # results stored before near-duplicates
        rules = prior.response.get("filtered") or [""] * len(records)
        redactions = prior.response.get("redacted") or [[]] * len(records)
        facts = self._replayed_facts(request_id, prior.response, len(records), unreadable)
        failures = prior.response.get("extraction_failed") or [False] * len(records)
        first_versions = prior.response.get("versions") or [1] * len(records)  # results stored before versions
        replacements = prior.response.get("replaced") or [None] * len(records)
        for record, dedup, near, item, rule, redacted, extracted, failed, first_version, replaced in zip(
            records,
            prior.response["dedup"],
            near_flags,
            items,
            rules,
            redactions,
            facts,
            failures,
            first_versions,
            replacements,
            strict=True,
        ):
            extras = {"redacted": tuple(redacted), "extracted": extracted, "extraction_failed": failed}
            if record is None:
                outcomes.append(WriteOutcome(None, deduplicated=False, filtered=rule))
            elif record.namespace not in unreadable:
                replacement = Replaced(*replaced) if replaced else None
                outcomes.append(
                    WriteOutcome(_with_effective_status(record), deduplicated=dedup, near=near, replaced=replacement, **extras)
                )
            elif record.source_agent == caller.agent_id:
                # Nothing about what it replaced: that memory is in a namespace the caller cannot read now.
                first = dataclasses.replace(as_first_written(record, item), version=first_version or 1)
                outcomes.append(WriteOutcome(first, deduplicated=dedup, near=near, **extras))
            else:
                # Only a write made before blind writes existed can have been deduplicated into another
                # agent's memory in a namespace the caller cannot read; showing that memory would leak it.
                raise FailedPrecondition(
                    f"request_id {request_id!r}: the first result of this request can no longer be shown to you; "
                    "send the write again with a new request_id"
                )
        return WriteResponse(tuple(outcomes), indexed=False, replayed=True)

    def _already_done(self, caller: Caller, request_id: str) -> bool:
        with self._reads.connect() as conn:
            return idempotency.lookup(conn, caller.agent_id, request_id) is not None

    def _replayed_facts(
        self, request_id: str, response: dict, count: int, unreadable: frozenset[str]
    ) -> list[tuple[WriteOutcome, ...]]:
        """The extracted facts of a replayed write, per memory, as they are now. Facts were only drawn where
        the writer could read (memhub/core/extracted_facts.py); where it no longer can, nothing of them is shown
        and the replay is refused, like any other result that can no longer be shown."""
        per_item = response.get("extracted") or [[]] * count
        ids = [f["id"] for facts in per_item for f in facts]
        if not ids:
            return [()] * count
        with self._engine.connect() as conn:
            records = {r.id: r for r in memories_db.get_many(conn, ids)}
        out = []
        for facts in per_item:
            shown = []
            for f in facts:
                record = records.get(f["id"])
                if record is None or record.namespace in unreadable:
                    raise FailedPrecondition(
                        f"request_id {request_id!r}: the first result of this request can no longer be shown to you; "
                        "send the write again with a new request_id"
                    )
                shown.append(WriteOutcome(_with_effective_status(record), deduplicated=f["dedup"], near=f["near"]))
            out.append(tuple(shown))
        return out

    def _count_filtered(self, caller: Caller, gated: write_gate.Gated) -> None:
        """Filtered memories are not errors, but the audit log counts them, per agent and rule, in aggregate."""
        if self._events is None:
            return
        for rule in gated.filtered.values():
            self._events.record(EventKey("filter", rule, agent_id=caller.agent_id), rpc="WriteMemories", groups=caller.groups)

    def _blind_namespaces(self, caller: Caller, namespaces: Sequence[str]) -> frozenset[str]:
        """Those of the write's namespaces the caller may not read: it writes there blind."""
        verdicts = self._authorizer.allowed_many(caller, Action.READ, namespaces)
        return frozenset(ns for ns, ok in zip(namespaces, verdicts, strict=True) if not ok)

    def _supersedable_namespaces(self, caller: Caller, items: Sequence[NewMemory]) -> frozenset[str]:
        """Namespaces of subject-keyed items where the caller may forget: only there may a write retire an older memory."""
        return self._may_forget(caller, list(dict.fromkeys(item.namespace for item in items if item.subject_key is not None)))

    def _may_forget(self, caller: Caller, namespaces: list[str]) -> frozenset[str]:
        verdicts = self._authorizer.allowed_many(caller, Action.FORGET, namespaces)
        return frozenset(ns for ns, ok in zip(namespaces, verdicts, strict=True) if ok)

    @staticmethod
    def _check_same_request(prior: idempotency.StoredResult, operation: str, request_id: str, request_hash: str) -> None:
        if prior.operation != operation or prior.request_hash != request_hash:
            raise FailedPrecondition(
                f"request_id {request_id!r} was already used for a different {prior.operation} request; "
                "use a new request_id for a new request"
            )

    # -- search -----------------------------------------------------------------

    def search(self, caller: Caller, query: SearchQuery) -> SearchResult:
        result = self._search(caller, query)
        if self._retrieval_log is None:
            return result
        # Queued, never waited for: a full queue drops the entry (memhub/retrieval_log/writer.py).
        return dataclasses.replace(result, search_id=self._retrieval_log.record_search(caller, query.text, result))

    def _search(self, caller: Caller, query: SearchQuery) -> SearchResult:
        span = trace.get_current_span()
        span.set_attributes(
            {
                "memhub.search.query_chars": len(query.text),
                "memhub.search.top_k": query.top_k,
                "memhub.search.channels": [ch.value for ch in query.channels],
            }
        )
        judge = relevance.Judge(query.text, self._embedder.model_id)
        # The query's embedding does not depend on who asks: start it now, while
        # Postgres and the policies decide which namespaces may be searched. Relevance
        # needs it too, so it is made even when the dense channel is not asked for.
        vector = None
        dense = Channel.DENSE in query.channels
        if (dense or judge.wants_cosine) and self._index_health.ok:
            vector = self._pool.submit(contextvars.copy_context().run, self._embed_query, query.text)
        try:
            # One connection for the whole search, in autocommit: read-only
            # statements need no BEGIN/ROLLBACK round trips.
            with self._reads.connect() as conn:
                readable = self._readable_namespaces(caller, query.filter.namespaces, conn)
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
                kept = response_size.fitting([response_size.hit_bytes(h) for h in hits], self._response_budget)
                truncated, hits = kept < len(hits), hits[:kept]
        finally:
            if vector is not None:
                vector.cancel()  # not needed after all (nothing readable, or an error); no-op once done
        self._recorder.record(h.memory.id for h in hits)
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
                    held = self._index.vectors(missing)
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

    def _readable_namespaces(self, caller: Caller, roots: Sequence[str], conn: Connection | None = None) -> list[str]:
        """The existing namespaces under `roots` (all, when empty) that the caller may read.

        Permission is decided *before* any search, so results and their count
        can only come from readable namespaces, and a denied namespace looks
        exactly like an empty or missing one. It is decided once, on the
        policies' scope for the caller, which the database applies to the
        namespace table: the cost does not grow with namespaces the caller
        cannot read (memhub/core/policy_authorizer.py).
        """
        if conn is None:
            with self._reads.connect() as own:
                return self._readable_namespaces(caller, roots, own)
        wanted = minimal_roots(list(roots))
        return self._authorizer.readable(
            caller, Action.READ, wanted, lambda scope: namespace_scope.namespaces_in_scope(conn, wanted, scope)
        )

    def _check_sources_readable(self, caller: Caller, items: Sequence[NewMemory]) -> None:
        """derived_from may only name memories the caller can read (else they look missing)."""
        wanted = list(dict.fromkeys(mid for item in items for mid in item.derived_from))
        if not wanted:
            return
        with self._engine.connect() as conn:
            found = memories_db.existing_ids(conn, wanted)
        for i, item in enumerate(items):
            for j, mid in enumerate(item.derived_from):
                ns = found.get(mid)
                if ns is None or not self._authorizer.allowed(caller, Action.READ, ns):
                    raise InvalidArgument(f"memories[{i}].derived_from[{j}]", f"no memory has id {mid}")

    def _embed_query(self, text: str) -> np.ndarray:
        return self._embedder.embed([text])[0]

    # -- get / list ---------------------------------------------------------------

    def get(self, caller: Caller, memory_id: str) -> MemoryRecord:
        with self._engine.connect() as conn:
            record = memories_db.get(conn, memory_id)
        # A memory in a namespace the caller cannot read and a missing one look the same;
        # so does a quarantined one to anyone but an admin (it is served to nobody until released).
        if record is None or not self._authorizer.allowed(caller, Action.READ, record.namespace):
            raise NotFound(f"memory {memory_id} not found")
        if record.status is Status.QUARANTINED and not self._authorizer.allowed(caller, Action.ADMIN, None):
            raise NotFound(f"memory {memory_id} not found")
        return _with_effective_status(record)

    def history(self, caller: Caller, memory_id: str, limit: int) -> tuple[str, list[MemoryRecord], bool]:
        """The chain of versions of the subject ``memory_id`` belongs to ("why did this change?").

        Reading the one memory is the right needed: the versions of a subject all live in its namespace.
        A memory without a subject key is its own whole history. Returns (subject key, versions oldest
        first, whether older versions were left out).
        """
        record = self.get(caller, memory_id)
        if record.subject_key is None:
            return "", [record], False
        with self._reads.connect() as conn:
            versions, truncated = memories_db.subject_history(conn, record.namespace, record.subject_key, limit)
        return record.subject_key, [_with_effective_status(v) for v in versions], truncated

    def history_page(self, caller: Caller, memory_id: str, want: HistoryPaging) -> tuple[str, list[MemoryRecord], str]:
        """``history`` one page at a time through the whole chain (memhub/core/history_paging.py)."""
        record = self.get(caller, memory_id)  # the right to read, checked again on every page
        if record.subject_key is None:
            refuse_token(want)  # its own whole history: one page, no token to follow
            return "", [record], ""
        with self._reads.connect() as conn:
            versions, token = history_page(conn, record.namespace, record.subject_key, want)
        return record.subject_key, [_with_effective_status(v) for v in versions], token

    def readable_links(self, caller: Caller, records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
        """``records`` as ``caller`` may see them: derived_from naming only memories it may read."""
        return visible_links.readable_links(self._reads, self._authorizer, caller, records)

    def lineage(
        self,
        caller: Caller,
        memory_id: str,
        *,
        roots: Sequence[str] = (),
        max_depth: int = lineage.DEFAULT_DEPTH,
        max_entries: int = lineage.DEFAULT_ENTRIES,
    ) -> lineage.Lineage:
        """Why ``memory_id`` says what it says (memhub/core/lineage.py): its versions, sources and derivations.

        Reading the memory is the right needed; every other memory is shown only when the caller may read it
        now (its namespace, among ``roots`` when given; quarantined ones to admins), else as a hidden entry.
        """
        record = self.get(caller, memory_id)
        admin = self._authorizer.allowed(caller, Action.ADMIN, None)
        with self._reads.connect() as conn:
            readable = self._readable_namespaces(caller, roots, conn)
            visible = frozenset(readable)
            if record.namespace not in visible:  # outside the roots asked for: it looks missing, as elsewhere
                raise NotFound(f"memory {memory_id} not found")

            def shown(memory: MemoryRecord) -> bool:
                return memory.namespace in visible and (admin or memory.status is not Status.QUARANTINED)

            found = lineage.walk(
                conn,
                record,
                shown=shown,
                readable=readable,
                with_quarantined=admin,
                limits=lineage.LineageLimits(max_depth, max_entries, self._response_budget),
            )
            # The ids a shown memory's links name are shown only when the caller may read those memories:
            # a hidden entry must not be identifiable through the links of its neighbour.
            named = {mid for e in found.entries if e.memory is not None for mid in lineage.linked_ids(e.memory)}
            placed = lineage_db.placement(conn, list(named))
            may_see = frozenset(
                mid
                for mid, (namespace, status) in placed.items()
                if namespace in visible and (admin or status is not Status.QUARANTINED)
            )
        entries = tuple(
            dataclasses.replace(e, memory=lineage.only_links_to(_with_effective_status(e.memory), may_see))
            if e.memory is not None
            else e
            for e in found.entries
        )
        trace.get_current_span().set_attributes(
            {"memhub.lineage.entries": len(entries), "memhub.lineage.hidden": sum(e.memory is None for e in entries)}
        )
        return dataclasses.replace(found, entries=entries)

    def list(self, caller: Caller, query: ListQuery) -> ListPage:
        flt = dataclasses.replace(query.filter, namespaces=tuple(minimal_roots(list(query.filter.namespaces))))
        statuses = query.statuses or (Status.ACTIVE,)
        if Status.QUARANTINED in statuses:
            # Quarantined memories are for the admins who decide whether to release them.
            require(self._authorizer, caller, Action.ADMIN, None)
        fp = paging.fingerprint(flt, statuses)
        after = paging.decode(query.page_token, fp)
        readable = self._readable_namespaces(caller, flt.namespaces)
        if not readable:
            return ListPage((), "")
        with self._engine.connect() as conn:
            rows = memories_db.list_page(conn, flt, readable, statuses, query.page_size + 1, after)
        page = rows[: query.page_size]
        # A page of large memories ends early (still with a token): the response must stay under the limit.
        kept = response_size.fitting([response_size.memory_bytes(r) for r in page], self._response_budget)
        more = len(rows) > kept
        page = page[:kept]
        token = paging.encode(page[-1].created_at, page[-1].id, fp) if more else ""
        return ListPage(tuple(_with_effective_status(r) for r in page), token)

    # -- forget -------------------------------------------------------------------

    def forget(
        self, caller: Caller, request: ForgetRequest, *, request_id: str | None = None, request_hash: str = ""
    ) -> ForgetResult:
        """Forget by ids or by filter: the ids forgotten now, their tombstones' versions, whether it was a replay.

        With expected versions the named memories are locked and compared first (memhub/db/versions.py): one
        that changed since the caller read it fails the whole request with VersionMismatch.
        """
        request = dataclasses.replace(request, reason=write_gate.screened_reason(request.reason, self._gate))
        # Every decision of this request commits with the tombstones it allowed (memhub/audit/held.py).
        with self._hold_decisions() as held:
            scope = self._forgettable_namespaces(caller, request.filter.namespaces) if request.filter is not None else []

            def transaction() -> ForgetResult:
                with self._engine.begin() as conn:
                    if request_id is not None and idempotency.lookup(conn, caller.agent_id, request_id) is not None:
                        raise _ConcurrentRetry()
                    if request.filter is not None:
                        ids = memories_db.select_ids_for_forget(conn, request.filter, scope, limit=100_000)
                    else:
                        ids = self._forgettable_ids(conn, caller, request.ids)
                        versions_db.check_memories(conn, request.expected_versions)
                    forgotten = memories_db.forget(conn, ids, caller, request.reason)
                    now = versions_db.current(conn, forgotten)
                    result = ForgetResult(forgotten, tuple(now[mid] for mid in forgotten))
                    if request_id is not None and not idempotency.store(
                        conn,
                        caller.agent_id,
                        request_id,
                        "forget",
                        request_hash,
                        {"ids": forgotten, "versions": list(result.versions)},
                    ):
                        raise _ConcurrentRetry()
                    held.insert(conn)
                held.committed()
                return result

            try:
                result = _retrying_conflicts(transaction)
            except _ConcurrentRetry:
                with self._engine.connect() as conn:
                    prior = idempotency.lookup(conn, caller.agent_id, request_id or "")
                assert prior is not None
                self._check_same_request(prior, "forget", request_id or "", request_hash)
                return ForgetResult(list(prior.response["ids"]), tuple(prior.response.get("versions", ())), replayed=True)
        self._indexer.nudge()
        trace.get_current_span().set_attribute("memhub.forgotten", len(result.ids))
        return result

    def restore(self, caller: Caller, ids: Sequence[str]) -> list[str]:
        """Bring archived memories back into search; returns the ids restored now (already active ones are not).

        Needs read (an unreadable memory looks missing) and write in the memory's namespace: restoring puts it
        back in front of every reader, as writing it would.
        """
        with self._hold_decisions() as held:
            with self._engine.begin() as conn:
                found = memories_db.existing_ids(conn, ids)
                for i, mid in enumerate(ids):
                    namespace = found.get(mid)
                    if namespace is None or not self._authorizer.allowed(caller, Action.READ, namespace):
                        raise NotFound(f"ids[{i}]: memory {mid} not found; nothing was restored")
                    require(self._authorizer, caller, Action.WRITE, namespace)
                restored = archive.restore(conn, list(ids))
                held.insert(conn)
            held.committed()
        self._indexer.nudge()
        return restored

    def _forgettable_ids(self, conn, caller: Caller, ids: Sequence[str]) -> list[str]:  # noqa: ANN001
        """The ids, once each is known to be readable and forgettable by the caller.

        Forgetting needs read as well as forget: the response lists what was
        forgotten, and a memory the caller cannot read must look missing.
        """
        found = memories_db.existing_ids(conn, ids)
        for i, mid in enumerate(ids):
            namespace = found.get(mid)
            if namespace is None or not self._authorizer.allowed(caller, Action.READ, namespace):
                raise NotFound(f"ids[{i}]: memory {mid} not found; nothing was forgotten")
            if not self._authorizer.allowed(caller, Action.FORGET, namespace):
                raise denied(caller, Action.FORGET, namespace)  # it can see the memory: say why
        return list(ids)

    def _forgettable_namespaces(self, caller: Caller, roots: Sequence[str]) -> list[str]:
        """Namespaces under the filter's root that a forget-by-filter may touch.

        Readable but not forgettable ones make the whole request fail with
        PERMISSION_DENIED (the caller sees those memories, so it learns
        nothing new); unreadable ones are left out silently, even where the
        caller may forget (the forgotten ids it gets back would reveal them).
        """
        with self._engine.connect() as conn:
            candidates = memories_db.resolve_namespaces(conn, list(roots))
        scope = []
        for ns in candidates:
            if not self._authorizer.allowed(caller, Action.READ, ns):
                continue
            if not self._authorizer.allowed(caller, Action.FORGET, ns):
                raise denied(caller, Action.FORGET, ns)
            scope.append(ns)
        return scope

    # -- retrieval log and feedback -------------------------------------------------

    def mark_used(self, caller: Caller, marks: UseMarks) -> MarkedCount:
        """Which recalled memories the caller used (memhub/core/retrieval_feedback.py)."""
        return self._feedback.mark_used(caller, marks)

    def retrieval_log(self, caller: Caller, query: LogQuery) -> LogPage:
        """A page of the retrieval log: the caller's own searches, or (admins) anyone's."""
        return self._feedback.log_page(caller, query)
