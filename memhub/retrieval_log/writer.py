"""Every search into the retrieval log, in background batches.

The pattern of the audit writer (memhub/audit/writer.py), with one difference
that matters: a full queue drops entries and counts them instead of
blocking. The audit log must have no holes, so it slows the hub down; the
retrieval log is an analytics record, and a search must never wait for it.

The queue lives in memory: a killed process loses its last half second of
entries (and the search ids it returned then point at nothing, which
MarkUsed accepts: marks are kept and counted all the same).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from dataclasses import dataclass, fields
from datetime import datetime, timezone

from sqlalchemy import Engine

from memhub import outage_log
from memhub.core.model import Caller, SearchResult
from memhub.db.batch_rows import copy_rows, delete_older_than
from memhub.db.schema import retrieval_log, retrieval_use
from memhub.metrics import record
from memhub.periodic import Periodic
from memhub.retrieval_log.config import QueryLogging, RetrievalLogConfig
from memhub.retrieval_log.query_key import load_key, query_hash

log = logging.getLogger(__name__)
_SITE = outage_log.Site("retrieval-log writer", log)  # one line per outage, not per retry (memhub/outage_log.py)

MAX_LOGGED_NAMESPACES = 64
"""Namespaces kept per entry (with the full count beside them): an agent may read thousands."""


@dataclass(frozen=True)
class LoggedSearch:
    """One row of the retrieval log; field names are its columns."""

    search_id: str
    at: datetime
    agent_id: str
    rpc: str
    query_hash: str
    query_text: str | None
    namespaces: tuple[str, ...]
    namespace_count: int
    hit_ids: tuple[str, ...]
    hit_scores: tuple[float, ...]
    hit_relevance: tuple[float, ...]
    trace_id: str
    hub_request_id: str


_COLUMNS = tuple(f.name for f in fields(LoggedSearch))


class RetrievalLogWriter:
    def __init__(self, engine: Engine, config: RetrievalLogConfig, *, batch_size: int = 1_000) -> None:
        self._engine = engine
        self._config = config
        self._batch_size = batch_size
        with engine.connect() as conn:
            self._key = load_key(conn)
        self._queue: queue.Queue[LoggedSearch] = queue.Queue(maxsize=config.max_queue)
        self._dropped = 0
        self._dropped_lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._last_purge: float | None = None  # None: not yet, so the first step purges
        self._periodic = Periodic(
            self._step, config.flush_interval_s, "memhub-retrieval-log", log, "could not write the retrieval log; will retry"
        )

    @property
    def dropped(self) -> int:
        """Entries dropped since start because the queue was full."""
        with self._dropped_lock:
            return self._dropped

    def record_search(self, caller: Caller, query_text: str, result: SearchResult) -> str:
        """Queue ``result`` for the log without waiting; returns its search id (also when the entry was dropped)."""
        search_id = str(uuid.uuid4())
        mode = self._config.query
        hits = result.hits
        entry = LoggedSearch(
            search_id=search_id,
            at=datetime.now(timezone.utc),
            agent_id=caller.agent_id,
            rpc=caller.rpc.rsplit("/", 1)[-1],
            query_hash=query_hash(self._key, query_text) if mode is QueryLogging.HASH else "",
            query_text=query_text if mode is QueryLogging.TEXT else None,
            namespaces=result.namespaces[:MAX_LOGGED_NAMESPACES],
            namespace_count=len(result.namespaces),
            hit_ids=tuple(h.memory.id for h in hits),
            hit_scores=tuple(h.score for h in hits),
            hit_relevance=tuple(h.relevance for h in hits),
            trace_id=caller.trace_id,
            hub_request_id=caller.hub_request_id,
        )
        self._offer(entry)
        return search_id

    def record(self, entry: LoggedSearch) -> None:
        """Queue a prepared entry (drop and count when the queue is full)."""
        self._offer(entry)

    def _offer(self, entry: LoggedSearch) -> None:
        try:
            self._queue.put_nowait(entry)
        except queue.Full:
            self._count_dropped(1)

    def _count_dropped(self, n: int) -> None:
        with self._dropped_lock:
            self._dropped += n
            total = self._dropped
        record.retrieval_log_dropped(n)
        # Once per power of two: a long outage must not turn into a log line per search.
        if total & (total - 1) == 0 or n > 1:
            log.warning(
                "retrieval log queue full (%d entries): %d searches left out of the log so far", self._config.max_queue, total
            )

    def flush(self) -> int:
        """Write everything queued so far; returns how many entries were written."""
        written = 0
        with self._flush_lock:
            while True:
                batch: list[LoggedSearch] = []
                while len(batch) < self._batch_size:
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                if not batch:
                    return written
                try:
                    with self._engine.begin() as conn:
                        copy_rows(conn, retrieval_log, _COLUMNS, (tuple(getattr(e, c) for c in _COLUMNS) for e in batch))
                    _SITE.ok()
                except Exception as exc:
                    # Back into the queue for the next attempt (Postgres may be restarting); what no longer fits is dropped.
                    _SITE.failed(exc, f"could not write {len(batch)} retrieval log entries; will retry")
                    for e in batch:
                        self._offer(e)
                    return written
                written += len(batch)

    def purge_older_than(self, days: float) -> int:
        """Retention: delete log entries and use marks older than ``days``; returns the log entries deleted."""
        with self._engine.begin() as conn:
            delete_older_than(conn, retrieval_use, retrieval_use.c.at, days)
            return delete_older_than(conn, retrieval_log, retrieval_log.c.at, days)

    def _step(self) -> None:
        self.flush()
        days = self._config.retention_days
        due = self._last_purge is None or time.monotonic() - self._last_purge > self._config.purge_interval_s
        if days is not None and due:
            self._last_purge = time.monotonic()
            purged = self.purge_older_than(days)
            if purged:
                log.info("retrieval log retention: deleted %d entries older than %s days", purged, days)

    def start(self) -> None:
        self._periodic.start()

    def stop(self) -> None:
        self._periodic.stop()
        self.flush()
