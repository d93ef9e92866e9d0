"""The newest changes, read once per hub process and shared by every stream that has caught up.

Without it, every commit anywhere woke every stream, and each stream read the table: with 16
subscribers, 16 queries per write (bench/bench_change_feed.py measured writes 24% slower with 16
subscribers connected). With it, one read per wake-up per hub fetches the new changes, unfiltered, into
a bounded window; a stream whose position lies inside the window takes its changes from there, filtered
and judged in Python exactly as the SQL path would (``matches`` + subscription.visible), at no cost to
Postgres. A stream whose position is outside the window (it fell behind, or resumed from an old cursor,
or from a replica that is ahead) reads the table itself until it has caught up.

The window holds every change in the interval (``base``, ``head``): ``head`` is where the next read
starts (changes.read's next_position), and evicting the oldest changes moves ``base`` up to the last
evicted one. So a stream at position p with base <= p <= head finds in the window every change after p
up to head, and may move to head.
"""

from __future__ import annotations

import bisect
import threading

from sqlalchemy import Engine

from memhub.core.namespaces import is_within
from memhub.db import changes as changes_db
from memhub.feed.config import ChangeFeedConfig
from memhub.feed.holdback import HoldBack
from memhub.feed.model import ChangeRecord, FeedFilter, Position

MAX_CONTENT_CHARS = 4_000_000
"""Content the window holds at most (each memory up to 16,384 characters), whatever its event count."""


def matches(change: ChangeRecord, flt: FeedFilter) -> bool:
    """What the SQL of changes.read selects, for one change in memory."""
    m = change.memory
    if flt.namespaces and not any(is_within(m.namespace, root) for root in flt.namespaces):
        return False
    if flt.changes and change.change not in flt.changes:
        return False
    if flt.kinds and m.kind not in flt.kinds:
        return False
    if flt.types and m.type not in flt.types:
        return False
    return not flt.tags_any or any(tag in m.tags for tag in flt.tags_any)


class Taken:
    """Changes a stream took from the window."""

    def __init__(self, changes: list[ChangeRecord], next_position: Position, full: bool) -> None:
        self.changes = changes
        self.next_position = next_position
        self.full = full


class FeedTail:
    """The window; ``advance`` (one caller at a time: the feed's tail task) and ``take`` (any stream) are thread-safe."""

    def __init__(self, engine: Engine, config: ChangeFeedConfig, capacity: int = 512) -> None:
        self._engine = engine.execution_options(isolation_level="REPEATABLE READ")
        self._config = config
        self._capacity = capacity
        self._lock = threading.Lock()
        self._changes: list[ChangeRecord] = []
        self._positions: list[Position] = []
        self._chars = 0
        self.base: Position | None = None
        self.head: Position | None = None
        self.held_back = False
        self._hold = HoldBack()

    def reset(self) -> None:
        """Drop the window (no stream needs it); the next advance starts from now."""
        with self._lock:
            self._changes, self._positions, self._chars = [], [], 0
            self.base = self.head = None
            self.held_back = False

    def advance(self) -> tuple[bool, bool]:
        """Read what became final since ``head``; returns (anything new, more waiting at once)."""
        with self._engine.connect() as conn, conn.begin():
            start = self.head if self.head is not None else changes_db.head(conn)
            batch = changes_db.read(
                conn,
                start,
                FeedFilter(),
                None,
                scan_limit=self._config.scan_limit,
                limit=self._capacity,
                scoped_bound=self._hold.scoped,
            )
        self._hold.saw(batch.held_back)
        with self._lock:
            if self.head is None:
                self.base = start
            self._changes += batch.changes
            self._positions += [c.position for c in batch.changes]
            self._chars += sum(len(c.memory.content) for c in batch.changes)
            moved = batch.next_position != self.head
            self.head = batch.next_position
            self.held_back = batch.held_back
            self._evict()
        return moved, batch.full

    def _evict(self) -> None:
        drop = 0
        while len(self._changes) - drop > self._capacity or (self._chars > MAX_CONTENT_CHARS and drop < len(self._changes)):
            self._chars -= len(self._changes[drop].memory.content)
            drop += 1
        if drop:
            self.base = self._positions[drop - 1]
            del self._changes[:drop]
            del self._positions[:drop]

    def take(self, after: Position, flt: FeedFilter, limit: int) -> Taken | None:
        """The changes after ``after`` matching ``flt``, up to ``limit``, and where to go on from; None when ``after``
        is outside the window (the stream must read the table)."""
        with self._lock:
            if self.base is None or self.head is None or not self.base <= after <= self.head:
                return None
            start = bisect.bisect_right(self._positions, after)
            found: list[ChangeRecord] = []
            for change in self._changes[start:]:
                if matches(change, flt):
                    found.append(change)
                    if len(found) == limit:
                        return Taken(found, change.position, True)
            return Taken(found, self.head, False)
