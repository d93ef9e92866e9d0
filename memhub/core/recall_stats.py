"""Recall and use statistics, written in the background.

Search must not write on its hot path (nor wait for row locks the indexer
holds), so hits are counted in memory and flushed every few seconds. Use
marks (MarkUsed) take the same road: a hot memory marked by many agents at
once costs one row update per flush, not one per mark, and never makes a
caller wait on a lock a writer or a forget holds on that row.

A flush that fails (Postgres down, a lock timeout) keeps its counts for the
next one instead of dropping them: the archive job reads recall_count = 0 as
"never returned by a search" (memhub/curation/archive.py), so a dropped count
can send a memory an agent just used to the archive. Only past
``MAX_PENDING_IDS`` distinct memories are counts dropped (and said so), so a
long outage cannot grow the hub's memory without bound.

A kill -9 would lose what was not flushed, and a memory a search returned in
its last 2 s would then look never recalled forever. So every recorded
recall is also appended to a journal in the data directory
(``RECALL_JOURNAL``, one write(2) per search, no fsync: it outlives the
process, not the machine) before the search answers; after each successful
flush the journal is rewritten to hold just the counts still pending, and
the next hub on that data directory replays it on start. A kill between the
commit and the rewrite counts those recalls twice: the safe direction, it
only keeps a memory out of the archive.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import uuid
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from sqlalchemy import Engine

from memhub import outage_log
from memhub.db import memories as memories_db
from memhub.db import retrieval_log as retrieval_log_db
from memhub.periodic import Periodic

log = logging.getLogger(__name__)
_SITE = outage_log.Site("recall statistics", log)  # one line per outage, not per retry (memhub/outage_log.py)

RECALL_JOURNAL = "recall-pending.log"
"""In the data directory: the counts not yet in Postgres, replayed by the next hub after a kill -9."""


def journal_name(group_member: int) -> str:
    """The journal of a hub process: RECALL_JOURNAL, or ``recall-pending-N.log`` for the Nth process (N >= 2) of
    `memhub serve --processes`, which share the data directory and each hold their journal's lock."""
    return RECALL_JOURNAL if group_member <= 1 else f"recall-pending-{group_member}.log"


JOURNAL_MAX_BYTES = 16 << 20
"""Past this (a long outage appending every search) the journal is rewritten from the pending counts."""

MAX_PENDING_IDS = 100_000
"""Distinct memories whose counts wait for a working Postgres (a few MB); past it new failures drop theirs."""


def _lock_orphans(own: Path) -> list[tuple[Path, int]]:
    """The other processes' journals beside ``own`` that no live hub holds (left by a group of `memhub serve
    --processes` that ran with more processes than now, or was killed), each with its lock taken: the caller moves
    their counts into its own journal, then deletes them, so no count is lost or replayed twice."""
    found = []
    for other in sorted(own.parent.glob("recall-pending*.log")):
        if other == own:
            continue
        fd = os.open(other.with_name(other.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a live hub process's journal
            os.close(fd)
            continue
        found.append((other, fd))
    return found


class RecallRecorder:
    def __init__(self, engine: Engine, flush_interval_s: float = 2.0, journal: Path | None = None) -> None:
        self._engine = engine
        self._pending: Counter[str] = Counter()
        self._uses: Counter[str] = Counter()
        self._not_useful: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._periodic = Periodic(self.flush, flush_interval_s, "memhub-recall-stats", log, "could not flush recall statistics")
        self._journal = journal
        self._fd: int | None = None
        self._lock_fd: int | None = None
        self._journal_bytes = 0
        if journal is not None:
            try:
                # One hub per journal: a second live hub on this data directory must not rewrite (and so
                # drop) the first one's lines; it runs without a journal instead, and says so.
                self._lock_fd = os.open(journal.with_name(journal.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._pending.update(_read_journal(journal))  # what a killed hub left unflushed
                orphans = _lock_orphans(journal)
                for path, _ in orphans:
                    self._pending.update(_read_journal(path))
                self._rewrite_journal()  # the orphans' counts are in this journal before theirs go
                for path, fd in orphans:
                    path.unlink(missing_ok=True)
                    os.close(fd)
            except OSError as exc:
                # The hub still serves; only the last seconds' counts of a crash are at risk, so say it once.
                log.warning("recall journal %s unusable (%s): counts not yet flushed die with the process", journal, exc)
                self._journal = None
                if self._lock_fd is not None:
                    os.close(self._lock_fd)
                    self._lock_fd = None

    def record(self, ids: Iterable[str]) -> None:
        ids = list(ids)
        with self._lock:
            self._pending.update(ids)
            if self._fd is not None and ids:
                line = "".join(f"{i}\n" for i in ids).encode()
                try:
                    os.write(self._fd, line)
                    self._journal_bytes += len(line)
                    if self._journal_bytes > JOURNAL_MAX_BYTES:
                        self._rewrite_journal()
                except OSError as exc:  # a full disk: the count is still in memory and flushed as usual
                    _SITE.failed(exc, "could not append to the recall journal")

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
                    self._compact_journal()
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

    def _compact_journal(self) -> None:
        """After a committed flush: the journal holds just the counts still pending."""
        with self._lock:
            if self._journal is None:
                return
            try:
                self._rewrite_journal()
            except OSError as exc:  # the old journal stays: a replay would count more, never fewer
                _SITE.failed(exc, "could not rewrite the recall journal")

    def _rewrite_journal(self) -> None:
        """Replace the journal with ``_pending`` (caller holds ``_lock``, or is the constructor)."""
        assert self._journal is not None
        tmp = self._journal.with_name(self._journal.name + ".tmp")
        body = "".join(f"{mid} {n}\n" for mid, n in self._pending.items()).encode()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, body)
        finally:
            os.close(fd)
        os.replace(tmp, self._journal)
        if self._fd is not None:
            os.close(self._fd)
        self._fd = os.open(self._journal, os.O_WRONLY | os.O_APPEND, 0o600)
        self._journal_bytes = len(body)

    def start(self) -> None:
        if self.pending:
            self.flush()  # a killed predecessor's counts, before this hub's archive job can look
        self._periodic.start()

    def stop(self) -> None:
        self._periodic.stop(5)
        self.flush()
        with self._lock:
            for fd in (self._fd, self._lock_fd):
                if fd is not None:
                    os.close(fd)
            self._fd = self._lock_fd = None


def _read_journal(path: Path) -> Counter[str]:
    """The counts in a journal: lines "id" (one recall) or "id n"; a torn or foreign line is skipped."""
    counts: Counter[str] = Counter()
    try:
        raw = path.read_text(errors="replace")
    except FileNotFoundError:
        return counts
    for line in raw.splitlines():
        parts = line.split()
        try:
            mid = str(uuid.UUID(parts[0]))
            n = int(parts[1]) if len(parts) == 2 else 1
        except (IndexError, ValueError):
            continue
        if len(parts) <= 2 and 0 < n < 1 << 31 and (mid in counts or len(counts) < MAX_PENDING_IDS):
            counts[mid] += n
    return counts
