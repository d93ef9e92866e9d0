"""Did the embedded index keep what it acknowledged? The indexer asks after it catches up.

Milvus Lite 2.5 swallows ENOSPC: on a full disk an upsert and a flush
succeed and the rows are searchable, but they are not in its data file and
are gone at the next start (memhub/index/lite_durability.py reads the file
back). Rows served but not persisted are reported (health, GetIndexHealth,
one ERROR line) and queued again, at most every REPERSIST_INTERVAL_S (on a
disk that stays full they would fail again); once the file holds every row,
the index is durable again.

A row counts as lost only when two checks in a row, DURABILITY_CHECK_S apart, find it missing: Lite commits
its file a moment after it serves a row, and a check that lands in between saw rows "missing" with 76 GB free
(seen during a LoCoMo ingest: 37 rows, an ERROR line and health not serving for 5 s, all of them in the file
at the next check). A row lost to a full disk stays missing, so it is reported one interval later.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import Engine

from memhub.core.index_health import IndexHealth
from memhub.db.memories import enqueue_index
from memhub.index import MilvusIndex

# How often rows the embedded index failed to persist are queued again while the disk stays full.
REPERSIST_INTERVAL_S = 30.0
# At most this often the data file is read back after writes: 57 ms at 100k rows on Lite
# (bench/bench_index_reconcile.py), so a stream of small writes is not slowed.
DURABILITY_CHECK_S = 5.0


class DurabilityWatch:
    """When to check, and what to do about rows Lite did not persist."""

    def __init__(self, engine: Engine, index: MilvusIndex, index_health: IndexHealth | None, nudge: Callable[[], None]) -> None:
        self._engine = engine
        self._index = index
        self._index_health = index_health
        self._nudge = nudge
        self._durable: bool | None = None
        self._due = False
        self._last_check = 0.0
        self._last_repersist = 0.0
        self._suspects: frozenset[str] = frozenset()

    def wrote(self) -> None:
        """The indexer caught up after writing: check at the next chance."""
        self._due = True

    def maybe_check(self) -> None:
        """Check if one is due (after writes, or again and again while not durable) and DURABILITY_CHECK_S passed."""
        if (self._due or self._durable is False) and time.monotonic() - self._last_check >= DURABILITY_CHECK_S:
            self._due = False
            self._last_check = time.monotonic()
            self._durable = self.check()

    def check(self) -> bool | None:
        """Read the data file back now: True if it holds every row served, False (reported, rows queued again)
        if not, None when there is nothing to check (not embedded Lite, or the file cannot tell)."""
        found = self._index.unpersisted()
        if found is None:
            return None
        missing, free = found
        lost, self._suspects = confirmed_lost(self._suspects, missing)
        if not lost:
            if self._suspects:  # missing once: look again at the next interval before saying anything
                self._due = True
                return self._durable
            if self._index_health is not None:
                self._index_health.mark_durable()
            return True
        if self._index_health is not None:
            self._index_health.mark_not_durable(
                f"Milvus Lite serves {len(lost)} rows it could not write to its data file ({free} bytes free on its "
                "disk): they would be lost at the next start; free space there, the hub writes them again (and "
                "re-indexes from Postgres at start)"
            )
        if time.monotonic() - self._last_repersist >= REPERSIST_INTERVAL_S:
            self._last_repersist = time.monotonic()
            with self._engine.begin() as conn:
                enqueue_index(conn, lost, context_only=True)  # the vectors are still in the engine: not re-embedded
            self._nudge()
        return False


def confirmed_lost(suspects: frozenset[str], missing: list[str]) -> tuple[list[str], frozenset[str]]:
    """Of the ids a check found ``missing`` from the data file, those the check before found missing too (lost),
    and the ids to look at again next time (all of this check's missing ones)."""
    return [i for i in missing if i in suspects], frozenset(missing)
