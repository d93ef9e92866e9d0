"""Recall and use statistics, written in the background.

Search must not write on its hot path (nor wait for row locks the indexer
holds), so hits are counted in memory and flushed every few seconds. Use
marks (MarkUsed) take the same road: a hot memory marked by many agents at
once costs one row update per flush, not one per mark, and never makes a
caller wait on a lock a writer or a forget holds on that row.

A flush that fails (Postgres down, a lock timeout) keeps its counts for the
next one instead of dropping them: the archive job reads recall_count = 0 as
"never returned by a search" (hub/curation/archive.py), so a dropped count
can send a memory an agent just used to the archive. Only past
``MAX_PENDING_IDS`` distinct memories are counts dropped (and said so), so a
long outage cannot grow the hub's memory without bound. A kill -9 still
loses what was not flushed: the archive job's grace period is what keeps it
from acting on counts that may still be on their way.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable

from sqlalchemy import Engine

from hub import outage_log
from hub.db import memories as memories_db
from hub.db import retrieval_log as retrieval_log_db
from hub.periodic import Periodic

log = logging.getLogger(__name__)
_SITE = outage_log.Site("recall statistics", log)  # one line per outage, not per retry (hub/outage_log.py)

MAX_PENDING_IDS = 100_000
"""Distinct memories whose counts wait for a working Postgres (a few MB); past it new failures drop theirs."""


class RecallRecorder:
    def __init__(self, engine: Engine, flush_interval_s: float = 2.0) -> None:
        self._engine = engine
        self._pending: Counter[str] = Counter()
        self._uses: Counter[str] = Counter()
        self._not_useful: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._periodic = Periodic(self.flush, flush_interval_s, "memhub-recall-stats", log, "could not flush recall statistics")

    def record(self, ids: Iterable[str]) -> None:
        with self._lock:
            self._pending.update(ids)

    def record_uses(self, ids: Iterable[str], not_useful: Iterable[str] = ()) -> None:
        """Count a use of each of ``ids``, and a "not useful" verdict for each of ``not_useful``."""
        with self._lock:
            self._uses.update(ids)
            self._not_useful.update(not_useful)

    def flush(self) -> None:
        """Write the counts recorded so far. Returns after they (and any flush already under way) committed."""
        # One flush at a time: a caller that flushes while the background thread
        # is mid-write must not return before that write has committed.
        with self._flush_lock:
            with self._lock:
                batch, self._pending = self._pending, Counter()
                uses, self._uses = self._uses, Counter()
                not_useful, self._not_useful = self._not_useful, Counter()
            if batch:
                try:
                    with self._engine.begin() as conn:
                        # Sorted ids: concurrent flushes from several replicas lock rows in one order.
                        memories_db.record_recalls(conn, dict(sorted(batch.items())))
                    _SITE.ok()
                except Exception as exc:
                    kept = self._keep(self._pending, batch)
                    _SITE.failed(exc, f"could not record recall statistics; {kept}")
            if uses or not_useful:
                counts = {mid: (uses[mid], not_useful[mid]) for mid in uses.keys() | not_useful.keys()}
                try:
                    with self._engine.begin() as conn:
                        retrieval_log_db.record_uses(conn, counts)
                except Exception as exc:
                    kept = self._keep(self._uses, uses)
                    self._keep(self._not_useful, not_useful)
                    _SITE.failed(exc, f"could not record use statistics; {kept}")

    def _keep(self, pending: Counter[str], failed: Counter[str]) -> str:
        """Put a failed batch back for the next flush, within MAX_PENDING_IDS; says what became of it."""
        with self._lock:
            if len(pending.keys() | failed.keys()) > MAX_PENDING_IDS:
                return f"{sum(failed.values())} counts dropped ({MAX_PENDING_IDS} memories already wait)"
            pending.update(failed)
        return f"{sum(failed.values())} counts kept for the next try"

    @property
    def pending(self) -> int:
        """Counts recorded and not yet written (for tests and the archive job's log line)."""
        with self._lock:
            return sum(self._pending.values())

    def start(self) -> None:
        self._periodic.start()

    def stop(self) -> None:
        self._periodic.stop(5)
        self.flush()
