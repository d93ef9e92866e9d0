"""ConsolidateMemories: episodes into the lessons they teach, under the caller's rights.

Rights. The caller needs `consolidate` on the namespace it consolidates,
and `read` and `write` on the target namespace (read because the run looks
at what was consolidated there before; without it the answer "already
consolidated" would describe a namespace it cannot see). Sources are only
the episodes the caller may read: the readable namespaces are decided
before any row is selected, exactly as for a search, so an unreadable
episode is neither used nor counted. The memories are written through the
ordinary write path (MemoryService.write): its checks, screening, dedup and
audit apply, and derived_from is checked readable once more there.

Idempotency. Every consolidated memory carries the tag "consolidated" and
names its sources in derived_from. A run leaves out episodes that an active
memory so tagged in the target namespace is already derived from, so a
re-run over the same episodes writes nothing, whatever the summariser
(an LLM may word things differently each time, so a key over the text, or
a request_id, which is per agent and would let a scheduled job and an agent
consolidate the same episodes twice, would not do). Forgetting a
consolidated memory makes its episodes eligible again. The writing phase
runs under a per-target advisory lock and checks again, so two concurrent
runs (two replicas' schedules, an agent and the schedule) cannot both write
a group.

Nothing half-written by a failing summariser: every group is summarised
before anything is written, and a summariser error fails the call.
"""

from __future__ import annotations

import logging
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence

from opentelemetry import trace
from sqlalchemy import Connection, Engine

from memhub.core import validation as v
from memhub.core.access import Action, Authorizer, require
from memhub.core.model import Caller, Kind, MemoryFilter, MemoryRecord, MemoryType, NewMemory
from memhub.core.validation import MAX_BATCH, MAX_DERIVED_FROM_PER_REQUEST, MAX_ENTITIES, MAX_TAGS, MAX_WRITE_CONTENT_BYTES
from memhub.curation import consolidation_model as m
from memhub.curation import grouping
from memhub.curation.summariser import Summariser, SummariserError
from memhub.db import consolidation as db
from memhub.db import namespace_scope
from memhub.embedding import Embedder, embed_bulk
from memhub.errors import FailedPrecondition, InvalidArgument, Unavailable
from memhub.service import MemoryService

log = logging.getLogger(__name__)


def target_kind_for(named: Kind | None, type_: MemoryType) -> Kind:
    """The kind a consolidated memory of ``type_`` gets: the write rules' (validation.kind_for_type), narrowed to what
    consolidation writes (semantic or procedural, never an episode). ``named``: the kind the caller asked for, None
    when it asked for none (then semantic where the type allows it, as before, else the type's own kind).

    Issue 22: target_type=EVENT wrote a semantic "event", which the write API refuses; now it is INVALID_ARGUMENT
    naming target_type (or target_kind, when the kind named is the one that does not fit).
    """
    allowed = [k for k in v.KINDS_OF_TYPE[type_] if k is not Kind.EPISODIC]
    if not allowed:
        fits = [t.value for t, kinds in v.KINDS_OF_TYPE.items() if any(k is not Kind.EPISODIC for k in kinds)]
        raise InvalidArgument(
            "target_type",
            f"is {type_.value}, an episodic type; consolidation writes semantic or procedural memories: "
            f"use one of {', '.join(fits)}",
        )
    if named is None:
        named = Kind.SEMANTIC if Kind.SEMANTIC in allowed else allowed[0]
    return v.kind_for_type(named, type_, "target_kind")


class Consolidator:
    def __init__(
        self,
        engine: Engine,
        authorizer: Authorizer,
        embedder: Embedder,
        service: MemoryService,
        extractive: Summariser,
        llm: Summariser | None = None,
    ) -> None:
        """``llm``: the configured LLM summariser, which is then the default; None: extractive is."""
        self._engine = engine
        self._reads = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._authorizer = authorizer
        self._embedder = embedder
        self._service = service
        self._extractive = extractive
        self._llm = llm

    def consolidate(self, caller: Caller, request: m.ConsolidationRequest) -> m.ConsolidationResult:
        span = trace.get_current_span()
        target_kind_for(request.target_kind, request.target_type)  # every caller, the schedule too: the write rules
        sel, target = request.selection, request.target
        require(self._authorizer, caller, Action.CONSOLIDATE, sel.namespace)
        require(self._authorizer, caller, Action.WRITE, target)
        require(self._authorizer, caller, Action.READ, target)
        summariser = self._summariser(request.summariser)
        with self._reads.connect() as conn:
            readable = self._readable(caller, sel.namespace, conn)
            fresh, done = self._select(conn, request, readable)
        truncated = len(fresh) > request.max_sources
        fresh = fresh[: request.max_sources]
        groups = grouping.split(
            grouping.group(
                fresh,
                request.group_by,
                embed=lambda texts: embed_bulk(self._embedder, texts),
                similarity=request.similarity,
                preferred_tags=sel.tags_any,
            ),
            request.max_group_size,
        )
        groups = [g for g in groups if len(g.sources) >= request.min_group_size]
        ungrouped = len(fresh) - sum(len(g.sources) for g in groups)
        if len(groups) > m.MAX_GROUPS:
            truncated, groups = True, groups[: m.MAX_GROUPS]
        span.set_attributes(
            {
                "memhub.consolidate.sources": len(fresh),
                "memhub.consolidate.groups": len(groups),
                "memhub.consolidate.dry_run": request.dry_run,
            }
        )
        drafts, skipped = self._drafts(groups, request, summariser)
        if request.dry_run:
            outcomes = [m.GroupOutcome(g.key, _ids(g), draft) for g, draft in drafts]
        else:
            outcomes = self._write(caller, target, drafts)
        written = sum(o.written for o in outcomes)
        span.set_attribute("memhub.consolidate.written", written)
        return m.ConsolidationResult(
            groups=tuple(outcomes),
            sources_selected=len(fresh),
            sources_already_consolidated=done,
            sources_ungrouped=ungrouped,
            memories_written=written,
            dry_run=request.dry_run,
            truncated=truncated,
            summariser=summariser.id,
            groups_skipped=skipped,
        )

    def close(self) -> None:
        """Close the LLM summariser's connections, if there is one."""
        close = getattr(self._llm, "close", None)
        if callable(close):
            close()

    def _summariser(self, choice: m.SummariserChoice) -> Summariser:
        if choice is m.SummariserChoice.EXTRACTIVE:
            return self._extractive
        if choice is m.SummariserChoice.LLM and self._llm is None:
            raise FailedPrecondition(
                "summariser: this hub has no LLM summariser configured (MEMHUB_SUMMARISER=llm with "
                "MEMHUB_SUMMARISER_BASE_URL and MEMHUB_SUMMARISER_MODEL); use the extractive one"
            )
        return self._llm or self._extractive

    def _readable(self, caller: Caller, root: str, conn: Connection) -> list[str]:
        """Existing namespaces under ``root`` the caller may read, decided (and audited) once, before any row is read."""
        return self._authorizer.readable(
            caller, Action.READ, [root], lambda scope: namespace_scope.namespaces_in_scope(conn, [root], scope)
        )

    @staticmethod
    def _select(conn: Connection, request: m.ConsolidationRequest, readable: list[str]) -> tuple[list[MemoryRecord], int]:
        """(episodes not consolidated yet, oldest first, one more than max_sources when more matched;
        how many matching ones are already consolidated)."""
        if not readable:
            return [], 0
        sel = request.selection
        flt = MemoryFilter(namespaces=(sel.namespace,), types=sel.types, tags_any=sel.tags_any, occurred=sel.occurred)
        where = {"target": request.target, "marker": m.CONSOLIDATED_TAG}
        fresh = db.select_episodes(conn, flt, readable, sel.session_id, limit=request.max_sources + 1, **where)
        return fresh, db.count_consolidated(conn, flt, readable, sel.session_id, **where)

    @staticmethod
    def _drafts(
        groups: Sequence[m.Group], request: m.ConsolidationRequest, summariser: Summariser
    ) -> tuple[list[tuple[m.Group, NewMemory]], int]:
        """Every group summarised (before anything is written); groups the summariser found empty are counted."""
        drafts, skipped = [], 0
        for g in groups:
            try:
                text = summariser.summarise(g, request.target_kind, request.max_sentences)
            except SummariserError as exc:
                # The cause names the endpoint, what it answered and the setting to change: the operator's business,
                # not the calling agent's (issue 22), so it goes to the log and the caller gets no configuration.
                log.warning("consolidation failed at group %r: %s", g.key, exc)
                raise Unavailable(
                    f"consolidation failed at group {g.key!r}: the summariser is unavailable (the hub operator's log "
                    "has the cause); nothing was written; retry later or ask for the extractive summariser"
                ) from None
            if text is None:
                skipped += 1
                continue
            drafts.append((g, draft(g, text, request)))
        return drafts, skipped

    def _write(self, caller: Caller, target: str, drafts: list[tuple[m.Group, NewMemory]]) -> list[m.GroupOutcome]:
        outcomes: list[m.GroupOutcome] = []
        with self._engine.begin() as lock:
            db.lock_target(lock, target)
            # Another run may have consolidated some of these episodes since they were selected.
            done = db.already_consolidated(lock, target, [sid for g, _ in drafts for sid in _ids(g)], m.CONSOLIDATED_TAG)
            pending = []
            for g, d in drafts:
                if done.isdisjoint(_ids(g)):
                    pending.append((g, d))
                else:
                    outcomes.append(m.GroupOutcome(g.key, _ids(g), d))  # shown, not written: its episodes were taken
            for chunk in _chunks(pending):
                response = self._service.write(caller, [d for _, d in chunk], screened_by_hub=True, consolidated=True)
                for (g, _), result in zip(chunk, response.results, strict=True):
                    outcomes.append(
                        m.GroupOutcome(
                            g.key, _ids(g), result.memory, written=not result.deduplicated, deduplicated=result.deduplicated
                        )
                    )
        order = {g.key: i for i, (g, _) in enumerate(drafts)}
        return sorted(outcomes, key=lambda o: order[o.key])


def draft(g: m.Group, text: str, request: m.ConsolidationRequest) -> NewMemory:
    """The memory a group becomes: its text, and what its episodes share (tags, entities), their highest
    importance, mean confidence and latest event time; derived_from every episode."""
    sources = g.sources
    tags = [m.CONSOLIDATED_TAG, *(t for t in _by_frequency(s.tags for s in sources) if t != m.CONSOLIDATED_TAG)]
    return NewMemory(
        namespace=request.target,
        kind=request.target_kind,
        type=request.target_type,
        content=text,
        tags=tuple(tags[:MAX_TAGS]),
        entities=tuple(_by_frequency(s.entities for s in sources)[:MAX_ENTITIES]),
        importance=max(s.importance for s in sources),
        confidence=round(statistics.fmean(s.confidence for s in sources), 4),
        occurred_at=max(s.occurred_at for s in sources),
        valid_from=None,
        valid_to=None,
        expires_at=None,
        subject_key=None,
        derived_from=_ids(g),
    )


def _by_frequency(lists: Iterable[Sequence[str]]) -> list[str]:
    """Names by how many episodes carry them, then by first appearance."""
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    for names in lists:
        for name in dict.fromkeys(names):
            counts[name] += 1
            first.setdefault(name, len(first))
    return sorted(counts, key=lambda n: (-counts[n], first[n]))


def _ids(g: m.Group) -> tuple[str, ...]:
    return tuple(s.id for s in g.sources)


def _chunks(pending: list[tuple[m.Group, NewMemory]]) -> list[list[tuple[m.Group, NewMemory]]]:
    """Write requests within the write path's limits: 100 memories, 1,000 sources, 3 MiB of content."""
    chunks: list[list[tuple[m.Group, NewMemory]]] = []
    current: list[tuple[m.Group, NewMemory]] = []
    sources = size = 0
    for item in pending:
        n, b = len(item[1].derived_from), len(item[1].content.encode())
        if current and (
            len(current) == MAX_BATCH or sources + n > MAX_DERIVED_FROM_PER_REQUEST or size + b > MAX_WRITE_CONTENT_BYTES
        ):
            chunks.append(current)
            current, sources, size = [], 0, 0
        current.append(item)
        sources, size = sources + n, size + b
    if current:
        chunks.append(current)
    return chunks
