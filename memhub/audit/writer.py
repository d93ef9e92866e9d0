"""Batched, asynchronous audit writes, and the hold that makes write and forget decisions durable.

A search over many namespaces makes one decision per namespace; writing each
as its own INSERT on the request path would cost more than the search. The
writer queues entries and a background thread inserts them in multi-row
batches. The queue is bounded: when Postgres falls behind, callers block
(back-pressure) rather than entries being dropped, because an audit log with
holes is worse than a slower hub.

The queue lives in memory, so a process that is killed loses the last half
second of it. That is accepted for reads (and admin calls); writes and
forgets hold their decisions instead (``hold``, memhub/audit/held.py) and commit
them in the transaction of the change they allowed.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from sqlalchemy import Connection, Engine

from memhub import outage_log
from memhub.audit.held import HeldDecisions
from memhub.audit.held import current as current_hold
from memhub.db.batch_rows import copy_rows, delete_older_than
from memhub.db.schema import audit_log

log = logging.getLogger(__name__)
_SITE = outage_log.Site("audit writer", log)  # one line per outage, not per retry (memhub/outage_log.py)


@dataclass(frozen=True)
class AuditEntry:
    agent_id: str
    groups: tuple[str, ...]
    action: str
    namespace: str  # "" for hub-wide actions
    decision: str  # "allow" | "deny"
    policy_ids: tuple[str, ...]
    policy_version: str
    rpc: str = ""
    request_id: str = ""  # the caller's idempotency key
    trace_id: str = ""
    detail: Mapping[str, str | int] = field(default_factory=dict)
    """What the entry aggregates or counts (memhub/audit/aggregate.py; a search's read decision)."""
    hub_request_id: str = ""  # the hub's id of the call
    trace_id_from_caller: bool = False


class AuditWriter:
    def __init__(
        self,
        engine: Engine,
        *,
        retention_days: float | None = 90.0,
        max_queue: int = 50_000,
        batch_size: int = 1_000,
        flush_interval_s: float = 0.5,
        purge_interval_s: float = 3600.0,
    ) -> None:
        self._engine = engine
        self._retention_days = retention_days
        self._purge_interval_s = purge_interval_s
        self._queue: queue.Queue[AuditEntry] = queue.Queue(maxsize=max_queue)
        self._batch_size = batch_size
        self._interval = flush_interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._flush_lock = threading.Lock()

    def record(self, entry: AuditEntry) -> None:
        """Hold ``entry`` for the running request's transaction when it holds its decisions; else queue it."""
        held = current_hold()
        if held is not None:
            held.add(entry)
            return
        self._queue.put(entry)

    def queued(self) -> int:
        """Entries waiting to be written (approximate: other threads add and take meanwhile)."""
        return self._queue.qsize()

    @property
    def capacity(self) -> int:
        """The queue's bound: past it, callers wait for the writer."""
        return self._queue.maxsize

    def hold(self) -> HeldDecisions:
        """A context in which decisions are held for the request's transaction (memhub/audit/held.py)."""
        return HeldDecisions(self._engine, _copy_rows, self._queue.put)

    def flush(self) -> int:
        """Write everything queued so far; returns how many entries were written."""
        written = 0
        with self._flush_lock:
            while True:
                batch: list[AuditEntry] = []
                while len(batch) < self._batch_size:
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                if not batch:
                    return written
                try:
                    with self._engine.begin() as conn:
                        _copy_rows(conn, batch)
                    _SITE.ok()
                except Exception as exc:
                    # Put them back for the next attempt; Postgres may be restarting.
                    _SITE.failed(exc, f"could not write {len(batch)} audit entries; will retry")
                    for e in batch:
                        self._queue.put(e)
                    return written
                written += len(batch)

    def purge_older_than(self, days: float) -> int:
        """Retention: delete entries older than `days`."""
        with self._engine.begin() as conn:
            return delete_older_than(conn, audit_log, audit_log.c.at, days)

    def start(self) -> None:
        log.info(
            "audit: write and forget decisions are committed with the change they allowed; read and admin "
            "decisions are written in batches every %.1f s, so a process killed in between loses its last ones",
            self._interval,
        )
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="memhub-audit", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        self.flush()

    def _loop(self) -> None:
        last_purge = 0.0
        while not self._stop.wait(self._interval):
            self.flush()
            if self._retention_days is not None and time.monotonic() - last_purge > self._purge_interval_s:
                last_purge = time.monotonic()
                try:
                    purged = self.purge_older_than(self._retention_days)
                    if purged:
                        log.info("audit retention: deleted %d entries older than %s days", purged, self._retention_days)
                except Exception as exc:
                    _SITE.failed(exc, "audit retention purge failed; will retry")


_COLUMNS = tuple(f.name for f in fields(AuditEntry))


def _copy_rows(conn: Connection, batch: list[AuditEntry]) -> None:
    copy_rows(conn, audit_log, _COLUMNS, (tuple(getattr(entry, c) for c in _COLUMNS) for entry in batch))
