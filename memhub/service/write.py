"""Writing memories: the rights, the write gate, screening, extracted facts, near-duplicates, one transaction.

Inputs arrive validated (memhub/api/convert.py builds them). A request_id makes a write idempotent: the same
request again gets its first result (memhub/service/write_replay.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from sqlalchemy import Connection

from memhub.audit.aggregate import AggregatedEvents, EventKey
from memhub.core import extracted_facts, screening
from memhub.core.access import Action, require
from memhub.core.model import Caller, NewMemory, WriteOutcome, WriteResponse
from memhub.core.near_duplicates import NearDuplicateFinder
from memhub.curation import write_gate
from memhub.curation.fact_extraction import FactExtractor
from memhub.db import changes as changes_db
from memhub.db import idempotency, memory_reads
from memhub.db import memories as memories_db
from memhub.errors import InvalidArgument, PermissionDenied
from memhub.service.context import ServiceContext
from memhub.service.transactions import ConcurrentRetry, retrying_conflicts
from memhub.service.write_replay import already_done, replay_write


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


def _gated_outcomes(stored: Sequence[WriteOutcome | None], gated: write_gate.Gated) -> list[WriteOutcome]:
    """One outcome per memory of the request: what was stored (with the secrets redacted), or the filter's rule."""
    out = []
    for i, outcome in enumerate(stored):
        if outcome is None:
            out.append(WriteOutcome(None, deduplicated=False, filtered=gated.filtered[i]))
        else:
            out.append(dataclasses.replace(outcome, redacted=gated.redacted.get(i, ())))
    return out


def _stored_response(outcomes: Sequence[WriteOutcome]) -> dict[str, Any]:
    """What the idempotency table keeps of a write's result, for its replays."""
    return {
        "ids": [o.memory.id if o.memory is not None else None for o in outcomes],
        "dedup": [o.deduplicated for o in outcomes],
        "near": [o.near for o in outcomes],
        "filtered": [o.filtered for o in outcomes],
        "redacted": [list(o.redacted) for o in outcomes],
        # As first written: a replay to a caller that can no longer read a memory shows these.
        "versions": [o.memory.version if o.memory is not None else None for o in outcomes],
        "replaced": [[o.replaced.id, o.replaced.version] if o.replaced else None for o in outcomes],
        "extracted": [
            [{"id": f.memory.id, "dedup": f.deduplicated, "near": f.near} for f in o.extracted if f.memory] for o in outcomes
        ],
        "extraction_failed": [o.extraction_failed for o in outcomes],
    }


class Writing:
    def __init__(
        self,
        ctx: ServiceContext,
        *,
        screening_config: screening.ScreeningConfig,
        gate: write_gate.GateConfig,
        extractor: FactExtractor | None,
        near_dups: NearDuplicateFinder,
        events: AggregatedEvents | None,
        wait_indexed_timeout_s: float,
    ) -> None:
        self._ctx = ctx
        self._screening = screening_config
        self._gate = gate
        self._extractor = extractor
        self._near_dups = near_dups
        self._events = events
        self._wait_timeout = wait_indexed_timeout_s

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
        ctx = self._ctx
        trace.get_current_span().set_attributes(
            {"memhub.memories": len(items), "memhub.namespaces": len({item.namespace for item in items})}
        )
        # Every decision of this request commits with the memories it allowed (memhub/audit/held.py).
        with ctx.hold_decisions() as held:
            namespaces = list(dict.fromkeys(item.namespace for item in items))
            for ns in namespaces:
                require(ctx.authorizer, caller, Action.WRITE, ns)
            if force:
                for ns in namespaces:
                    require(ctx.authorizer, caller, Action.WRITE_UNFILTERED, ns)
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
            if request_id is not None and self._extractor is not None and already_done(ctx, caller, request_id):
                return self._replay(caller, request_id, request_hash, items)  # without asking the model again
            # The extractor's HTTP calls happen here, before the transaction, never inside it.
            planned = extracted_facts.plan(
                None if screened_by_hub else self._extractor,
                items,
                skip,
                blind,
                lambda keyed: self._may_forget(caller, keyed),
                self._gate,
                self._screening,
                rules=self._gate.preferences and not screened_by_hub,
            )
            facts_may_supersede = self._supersedable_namespaces(caller, planned.facts)
            # One near-duplicate pass over the memories and their facts: one embedding batch, one index search
            # per (namespace, kind).
            found = self._near_dups.find([*items, *planned.facts], session_id, blind)
            near = {i: t for i, t in found.items() if i < len(items) and i not in skip}
            near_facts = {i - len(items): t for i, t in found.items() if i >= len(items)}

            def transaction() -> list[WriteOutcome]:
                with ctx.engine.begin() as conn:
                    if consolidated:
                        changes_db.mark_consolidation(conn)
                    if request_id is not None:
                        prior = idempotency.lookup(conn, caller.agent_id, request_id)
                        if prior is not None:
                            raise ConcurrentRetry()
                    stored = memories_db.insert_memories(
                        conn,
                        caller,
                        session_id,
                        items,
                        ctx.embedder.model_id,
                        blind=blind,
                        may_supersede=may_supersede,
                        near=near,
                        skip=skip,
                    )
                    outcomes = _gated_outcomes(stored, gated)
                    if planned.facts or planned.failed:
                        outcomes = self._store_facts(conn, caller, session_id, outcomes, planned, near_facts, facts_may_supersede)
                    if request_id is not None:
                        response = _stored_response(outcomes)
                        if not idempotency.store(conn, caller.agent_id, request_id, "write", request_hash, response):
                            raise ConcurrentRetry()  # rolls this transaction back
                    held.insert(conn)
                held.committed()
                return outcomes

            try:
                outcomes = retrying_conflicts(transaction)
            except ConcurrentRetry:
                return self._replay(caller, request_id or "", request_hash, items)
        self._count_filtered(caller, gated)
        ctx.indexer.nudge()
        indexed = False
        if wait_indexed:
            indexed = ctx.indexer.wait_indexed([o.memory.id for o in outcomes if o.memory is not None], self._wait_timeout)
        trace.get_current_span().set_attributes(
            {
                "memhub.deduplicated": sum(o.deduplicated for o in outcomes),
                "memhub.filtered": len(gated.filtered),
                "memhub.extracted": sum(len(o.extracted) for o in outcomes),
            }
        )
        return WriteResponse(tuple(outcomes), indexed=indexed)

    def _replay(self, caller: Caller, request_id: str, request_hash: str, items: Sequence[NewMemory]) -> WriteResponse:
        return replay_write(self._ctx, self._blind_namespaces, caller, request_id, request_hash, items)

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
            conn, caller, session_id, linked, self._ctx.embedder.model_id, may_supersede=may_supersede, near=near
        )
        by_origin: dict[int, list[WriteOutcome]] = {}
        for origin, outcome in zip(planned.origin, stored, strict=True):
            assert outcome is not None  # nothing is skipped among facts
            by_origin.setdefault(origin, []).append(outcome)
        return [
            dataclasses.replace(o, extracted=tuple(by_origin.get(i, ())), extraction_failed=i in planned.failed)
            for i, o in enumerate(outcomes)
        ]

    def _count_filtered(self, caller: Caller, gated: write_gate.Gated) -> None:
        """Filtered memories are not errors, but the audit log counts them, per agent and rule, in aggregate."""
        if self._events is None:
            return
        for rule in gated.filtered.values():
            self._events.record(EventKey("filter", rule, agent_id=caller.agent_id), rpc="WriteMemories", groups=caller.groups)

    def _blind_namespaces(self, caller: Caller, namespaces: Sequence[str]) -> frozenset[str]:
        """Those of the write's namespaces the caller may not read: it writes there blind."""
        verdicts = self._ctx.authorizer.allowed_many(caller, Action.READ, namespaces)
        return frozenset(ns for ns, ok in zip(namespaces, verdicts, strict=True) if not ok)

    def _supersedable_namespaces(self, caller: Caller, items: Sequence[NewMemory]) -> frozenset[str]:
        """Namespaces of subject-keyed items where the caller may forget: only there may a write retire an older memory."""
        return self._may_forget(caller, list(dict.fromkeys(item.namespace for item in items if item.subject_key is not None)))

    def _may_forget(self, caller: Caller, namespaces: list[str]) -> frozenset[str]:
        verdicts = self._ctx.authorizer.allowed_many(caller, Action.FORGET, namespaces)
        return frozenset(ns for ns, ok in zip(namespaces, verdicts, strict=True) if ok)

    def _check_sources_readable(self, caller: Caller, items: Sequence[NewMemory]) -> None:
        """derived_from may only name memories the caller can read (else they look missing)."""
        wanted = list(dict.fromkeys(mid for item in items for mid in item.derived_from))
        if not wanted:
            return
        with self._ctx.engine.connect() as conn:
            found = memory_reads.existing_ids(conn, wanted)
        for i, item in enumerate(items):
            for j, mid in enumerate(item.derived_from):
                ns = found.get(mid)
                if ns is None or not self._ctx.authorizer.allowed(caller, Action.READ, ns):
                    raise InvalidArgument(f"memories[{i}].derived_from[{j}]", f"no memory has id {mid}")
