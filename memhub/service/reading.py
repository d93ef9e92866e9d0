"""Reading memories: get, list, history (whole or in pages), lineage, and the links a reader may see.

A memory in a namespace the caller cannot read and a missing one look the same everywhere here; so does a
quarantined one to anyone but an admin (it is served to nobody until released).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from opentelemetry import trace

from memhub.core import lineage, paging, response_size, visible_links
from memhub.core.access import Action, require
from memhub.core.history_paging import HistoryPaging, refuse_token
from memhub.core.history_paging import page as history_page
from memhub.core.model import Caller, ListPage, ListQuery, MemoryRecord, Status
from memhub.core.namespaces import minimal_roots
from memhub.db import lineage as lineage_db
from memhub.db import memories as memories_db
from memhub.db import memory_reads
from memhub.errors import NotFound
from memhub.service.context import ServiceContext, with_effective_status


class Reading:
    def __init__(self, ctx: ServiceContext) -> None:
        self._ctx = ctx

    def get(self, caller: Caller, memory_id: str) -> MemoryRecord:
        ctx = self._ctx
        with ctx.engine.connect() as conn:
            record = memories_db.get(conn, memory_id)
        if record is None or not ctx.authorizer.allowed(caller, Action.READ, record.namespace):
            raise NotFound(f"memory {memory_id} not found")
        if record.status is Status.QUARANTINED and not ctx.authorizer.allowed(caller, Action.ADMIN, None):
            raise NotFound(f"memory {memory_id} not found")
        return with_effective_status(record)

    def history(self, caller: Caller, memory_id: str, limit: int) -> tuple[str, list[MemoryRecord], bool]:
        """The chain of versions of the subject ``memory_id`` belongs to ("why did this change?").

        Reading the one memory is the right needed: the versions of a subject all live in its namespace.
        A memory without a subject key is its own whole history. Returns (subject key, versions oldest
        first, whether older versions were left out).
        """
        record = self.get(caller, memory_id)
        if record.subject_key is None:
            return "", [record], False
        with self._ctx.reads.connect() as conn:
            versions, truncated = memories_db.subject_history(conn, record.namespace, record.subject_key, limit)
        return record.subject_key, [with_effective_status(v) for v in versions], truncated

    def history_page(self, caller: Caller, memory_id: str, want: HistoryPaging) -> tuple[str, list[MemoryRecord], str]:
        """``history`` one page at a time through the whole chain (memhub/core/history_paging.py)."""
        record = self.get(caller, memory_id)  # the right to read, checked again on every page
        if record.subject_key is None:
            refuse_token(want)  # its own whole history: one page, no token to follow
            return "", [record], ""
        with self._ctx.reads.connect() as conn:
            versions, token = history_page(conn, record.namespace, record.subject_key, want)
        return record.subject_key, [with_effective_status(v) for v in versions], token

    def readable_links(self, caller: Caller, records: Sequence[MemoryRecord]) -> list[MemoryRecord]:
        """``records`` as ``caller`` may see them: derived_from naming only memories it may read."""
        return visible_links.readable_links(self._ctx.reads, self._ctx.authorizer, caller, records)

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
        ctx = self._ctx
        record = self.get(caller, memory_id)
        admin = ctx.authorizer.holds(caller, Action.ADMIN, None, "quarantined memories in a lineage")
        with ctx.reads.connect() as conn:
            readable = ctx.readable_namespaces(caller, roots, conn)
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
                limits=lineage.LineageLimits(max_depth, max_entries, ctx.response_budget),
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
            dataclasses.replace(e, memory=lineage.only_links_to(with_effective_status(e.memory), may_see))
            if e.memory is not None
            else e
            for e in found.entries
        )
        trace.get_current_span().set_attributes(
            {"memhub.lineage.entries": len(entries), "memhub.lineage.hidden": sum(e.memory is None for e in entries)}
        )
        return dataclasses.replace(found, entries=entries)

    def list(self, caller: Caller, query: ListQuery) -> ListPage:
        ctx = self._ctx
        flt = dataclasses.replace(query.filter, namespaces=tuple(minimal_roots(list(query.filter.namespaces))))
        statuses = query.statuses or (Status.ACTIVE,)
        if Status.QUARANTINED in statuses:
            # Quarantined memories are for the admins who decide whether to release them.
            require(ctx.authorizer, caller, Action.ADMIN, None)
        fp = paging.fingerprint(flt, statuses)
        after = paging.decode(query.page_token, fp)
        readable = ctx.readable_namespaces(caller, flt.namespaces)
        if not readable:
            return ListPage((), "")
        with ctx.engine.connect() as conn:
            rows = memory_reads.list_page(conn, flt, readable, statuses, query.page_size + 1, after)
        page = rows[: query.page_size]
        # A page of large memories ends early (still with a token): the response must stay under the limit.
        kept = response_size.fitting([response_size.memory_bytes(r) for r in page], ctx.response_budget)
        more = len(rows) > kept
        page = page[:kept]
        token = paging.encode(page[-1].created_at, page[-1].id, fp) if more else ""
        return ListPage(tuple(with_effective_status(r) for r in page), token)
