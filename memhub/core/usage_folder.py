"""Folds the per-statement storage deltas into one row per namespace, in the background (memhub/db/namespace_usage.py).

Every write statement leaves a delta row; without folding, reading a
namespace's use (what the quota triggers do on every write) would read ever
more rows. Every replica runs a folder; SKIP LOCKED keeps them apart.
"""

from __future__ import annotations

import logging

from sqlalchemy import Engine

from memhub.db import namespace_usage
from memhub.periodic import Periodic

log = logging.getLogger(__name__)


class UsageFolder:
    def __init__(self, engine: Engine, interval_s: float = 5.0) -> None:
        self._engine = engine
        # A failed fold (Postgres restarting) leaves the deltas to wait; quotas stay exact meanwhile.
        self._periodic = Periodic(
            self.fold, interval_s, "memhub-usage-folder", log, "could not fold namespace storage deltas; will retry"
        )

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
        self._periodic.start()

    def stop(self) -> None:
        self._periodic.stop()
