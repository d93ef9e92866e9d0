"""Folds the per-statement storage deltas into one row per namespace, in the background (hub/db/namespace_usage.py).

Every write statement leaves a delta row; without folding, reading a
namespace's use (what the quota triggers do on every write) would read ever
more rows. Every replica runs a folder; SKIP LOCKED keeps them apart.
"""

from __future__ import annotations

import logging
import threading

from sqlalchemy import Engine

from hub.db import namespace_usage

log = logging.getLogger(__name__)


class UsageFolder:
    def __init__(self, engine: Engine, interval_s: float = 5.0) -> None:
        self._engine = engine
        self._interval = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def fold(self, rounds: int = 20) -> int:
        """Fold the deltas there are (up to ``rounds`` batches: writers may add more all the while); returns the
        namespaces updated."""
        updated = 0
        for _ in range(rounds):
            with self._engine.begin() as conn:
                n = namespace_usage.fold(conn)
            if not n:
                break
            updated += n
        return updated

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="memhub-usage-folder", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self.fold()
            except Exception:  # Postgres restarting: the deltas wait, and quotas stay exact meanwhile
                log.warning("could not fold namespace storage deltas; will retry", exc_info=True)
