"""Recall statistics, written in the background.

Search must not write on its hot path (nor wait for row locks the indexer
holds), so hits are counted in memory and flushed every few seconds.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable

from sqlalchemy import Engine

from hub.db import memories as memories_db
from hub.periodic import Periodic

log = logging.getLogger(__name__)


class RecallRecorder:
    def __init__(self, engine: Engine, flush_interval_s: float = 2.0) -> None:
        self._engine = engine
        self._pending: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._periodic = Periodic(self.flush, flush_interval_s, "memhub-recall-stats", log, "could not flush recall statistics")

    def record(self, ids: Iterable[str]) -> None:
        with self._lock:
            self._pending.update(ids)

    def flush(self) -> None:
        """Write the counts recorded so far. Returns after they (and any flush already under way) committed."""
        # One flush at a time: a caller that flushes while the background thread
        # is mid-write must not return before that write has committed.
        with self._flush_lock:
            with self._lock:
                batch, self._pending = self._pending, Counter()
            if not batch:
                return
            try:
                with self._engine.begin() as conn:
                    # Sorted ids: concurrent flushes from several replicas lock rows in one order.
                    memories_db.record_recalls(conn, dict(sorted(batch.items())))
            except Exception:
                log.exception("could not record recall statistics; %d counts dropped", sum(batch.values()))

    def start(self) -> None:
        self._periodic.start()

    def stop(self) -> None:
        self._periodic.stop(5)
        self.flush()
