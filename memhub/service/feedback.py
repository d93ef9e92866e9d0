"""MarkUsed and the retrieval log's read side, in plain Python.

Rights: a mark counts only for a memory the caller can read now; an
unreadable or unknown id is refused as GetMemory refuses it (NOT_FOUND,
the same words either way), and nothing of the call is recorded. Reading
the log, a caller sees its own searches; anyone else's need the admin
action. In every entry only memories the reader can read now are shown
(ids included): the log must not become a way around the read policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from opentelemetry import trace
from sqlalchemy import Engine, Row

from memhub.core import paging
from memhub.core.access import Action, Authorizer, require
from memhub.core.model import Caller, Status
from memhub.core.recall_stats import RecallRecorder
from memhub.db import retrieval_log as log_db
from memhub.errors import NotFound
from memhub.retrieval_log.records import PREVIEW_CHARS, LogEntry, LoggedHit, LogPage, LogQuery, MarkedCount, UseMarks


class RetrievalFeedback:
    def __init__(self, engine: Engine, authorizer: Authorizer, recorder: RecallRecorder) -> None:
        self._engine = engine
        self._authorizer = authorizer
        self._recorder = recorder

    def mark_used(self, caller: Caller, marks: UseMarks) -> MarkedCount:
        """Record the marks (all or none) and queue the memories' use counts."""
        with self._engine.connect() as conn:
            found = log_db.memories_now(conn, marks.memory_ids, 0)
        self._refuse_unreadable(caller, marks.memory_ids, found)
        with self._engine.begin() as conn:
            new = log_db.insert_marks(conn, caller.agent_id, marks.search_id, marks.memory_ids, marks.useful)
        self._recorder.record_uses(
            (m.memory_id for m in new if m.inserted),
            (m.memory_id for m in new) if marks.useful is False else (),
        )
        trace.get_current_span().set_attributes({"memhub.marked": len(new), "memhub.marked.ids": len(marks.memory_ids)})
        return MarkedCount(counted=len(new), already_marked=len(marks.memory_ids) - len(new))

    def _refuse_unreadable(self, caller: Caller, ids: Sequence[str], found: dict[str, log_db.MemoryNow]) -> None:
        namespaces = list(dict.fromkeys(m.namespace for m in found.values()))
        readable = {
            ns for ns, ok in zip(namespaces, self._authorizer.allowed_many(caller, Action.READ, namespaces), strict=True) if ok
        }
        admin: bool | None = None  # asked only when a quarantined memory is named
        for i, mid in enumerate(ids):
            now = found.get(mid)
            visible = now is not None and now.namespace in readable
            if visible and now is not None and now.status == Status.QUARANTINED:
                if admin is None:
                    admin = self._authorizer.allowed(caller, Action.ADMIN, None)
                visible = admin
            if not visible:
                raise NotFound(f"memory_ids[{i}]: memory {mid} not found; nothing was marked")

    def log_page(self, caller: Caller, query: LogQuery) -> LogPage:
        """A page of the log, newest first, each entry cut to what ``caller`` may read now."""
        if query.all_agents or (query.agent_id is not None and query.agent_id != caller.agent_id):
            require(self._authorizer, caller, Action.ADMIN, None)
        agent = None if query.all_agents else (query.agent_id or caller.agent_id)
        fp = paging.fingerprint("retrieval-log", agent, query.since)
        after = paging.decode(query.page_token, fp)
        with self._engine.connect() as conn:
            rows = log_db.log_page(conn, agent, query.since, query.page_size + 1, after)
            page = rows[: query.page_size]
            hit_ids = list(dict.fromkeys(mid for r in page for mid in r.hit_ids))
            now = log_db.memories_now(conn, hit_ids, PREVIEW_CHARS)
            marks = log_db.marks_of(conn, [r.search_id for r in page])
        visible = self._visible(caller, now)
        entries = tuple(_entry(r, now, visible, marks) for r in page)
        token = paging.encode(page[-1].at, page[-1].search_id, fp) if len(rows) > query.page_size else ""
        return LogPage(entries, token)

    def _visible(self, caller: Caller, now: dict[str, log_db.MemoryNow]) -> set[str]:
        """Ids of the memories ``caller`` may read now (quarantined ones: admins only, as GetMemory)."""
        namespaces = list(dict.fromkeys(m.namespace for m in now.values()))
        verdicts = self._authorizer.allowed_many(caller, Action.READ, namespaces)
        readable = {ns for ns, ok in zip(namespaces, verdicts, strict=True) if ok}
        ids = {mid for mid, m in now.items() if m.namespace in readable}
        quarantined = {mid for mid in ids if now[mid].status == Status.QUARANTINED}
        if quarantined and not self._authorizer.holds(caller, Action.ADMIN, None, "quarantined hits in the retrieval log"):
            ids -= quarantined
        return ids


def _entry(
    row: Row[Any], now: dict[str, log_db.MemoryNow], visible: set[str], marks: dict[tuple[str, str, str], bool | None]
) -> LogEntry:
    hits = []
    for position, mid in enumerate(row.hit_ids):
        if mid not in visible:
            continue
        m = now[mid]
        key = (row.agent_id, row.search_id, mid)
        hits.append(
            LoggedHit(
                memory_id=mid,
                rank=position + 1,
                score=float(row.hit_scores[position]),
                relevance=float(row.hit_relevance[position]),
                used=key in marks,
                useful=marks.get(key),
                namespace=m.namespace,
                status=_effective_status(m),
                preview="" if m.status == Status.FORGOTTEN else m.preview,
            )
        )
    return LogEntry(
        search_id=row.search_id,
        at=row.at,
        agent_id=row.agent_id,
        rpc=row.rpc,
        query_hash=row.query_hash,
        query_text=row.query_text,
        namespaces=tuple(row.namespaces),
        namespace_count=row.namespace_count,
        hits=tuple(hits),
        hidden_hits=len(row.hit_ids) - len(hits),
        trace_id=row.trace_id,
        hub_request_id=row.hub_request_id,
    )


def _effective_status(m: log_db.MemoryNow) -> Status:
    """An active memory past its expiry reads as expired even before the sweeper marks it (as in GetMemory)."""
    status = Status(m.status)
    if status is Status.ACTIVE and m.expires_at is not None and m.expires_at <= datetime.now(timezone.utc):
        return Status.EXPIRED
    return status
