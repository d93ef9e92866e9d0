"""One log line when a dependency goes, one when it returns: not one per retry.

Background loops (the indexer, the health monitor, the audit, retrieval-log
and recall writers, the periodic jobs) retry a failing store every fraction
of a second; logging each failure with its traceback buried a 30 s Postgres
outage under ~1,600 ERROR lines. Here each dependency (Postgres, Milvus, the
embedder) has one process-wide record of its outage, shared by every loop:

- the first failure logs one ERROR line, with its traceback, naming the
  dependency, the loop that saw it and the error;
- later failures are counted, their traceback at DEBUG only;
- an outage still going logs one WARNING every REMIND_S with the count;
- the first success after it logs one WARNING: back after N failures over T s;
- a dependency that fails again within RELAPSE_S of coming back (Milvus Lite
  answers a restart with a few failed searches while it loads) starts a new
  outage with one WARNING and no traceback: the first one already showed it.

A failure no class below recognises (a bug rather than a store) gets a
record of its own per loop, so it is still logged once per streak.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable

REMIND_S = 300.0
RELAPSE_S = 60.0

_NAMES = {
    "postgres": "Postgres",
    "milvus": "the retrieval index (Milvus)",
    "embedder": "the embedder",
    # Postgres answers but cannot write: its own record, ended by memhub/db/disk_full.py's probe only.
    "disk": "the Postgres storage (disk full)",
}


def classify(exc: BaseException) -> str | None:
    """Which dependency ``exc`` says failed: "disk" (Postgres out of space), "postgres", "milvus", "embedder", or None."""
    # Imported here: this module is imported by low-level ones (memhub.periodic) that must not pull in the stores.
    import psycopg
    from sqlalchemy.exc import SQLAlchemyError

    from memhub.db.disk_full import is_disk_full
    from memhub.embedding import EmbeddingError
    from memhub.index.errors import IndexBackendError

    if is_disk_full(exc):
        return "disk"
    cur: BaseException | None = exc
    for _ in range(8):  # the cause chain, bounded
        if cur is None:
            break
        if isinstance(cur, IndexBackendError):
            return "milvus"
        if isinstance(cur, EmbeddingError):
            return "embedder"
        if isinstance(cur, SQLAlchemyError | psycopg.Error):
            return "postgres"
        cur = cur.__cause__ or cur.__context__
    return None


class Outage:
    """The outage record of one dependency in this process."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._since: float | None = None
        self._failures = 0
        self._reminded = 0.0
        self._recovered: float | None = None  # when the last outage ended

    @property
    def down(self) -> bool:
        return self._since is not None

    @property
    def failures(self) -> int:
        """Failures counted in the current outage (0 when there is none)."""
        return self._failures

    def failed(self, exc: BaseException, where: str, logger: logging.Logger, message: str = "") -> None:
        now = time.monotonic()
        with self._lock:
            first = self._since is None
            relapse = first and self._recovered is not None and now - self._recovered < RELAPSE_S
            back_for = now - self._recovered if relapse and self._recovered is not None else 0.0
            if first:
                self._since = self._reminded = now
                self._failures = 0
            self._failures += 1
            count, since = self._failures, self._since
            remind = not first and now - self._reminded >= REMIND_S
            if remind:
                self._reminded = now
        what = f"{message}: " if message else ""
        if relapse:
            logger.warning(
                "%s is failing again %.1f s after it came back (seen by the %s): %s%s; logged once until it works again",
                self.name,
                back_for,
                where,
                what,
                exc,
            )
        elif first:
            logger.error(
                "%s is failing (seen by the %s): %s%s; logged once until it works again",
                self.name,
                where,
                what,
                exc,
                exc_info=exc,
            )
        elif remind:
            logger.warning("%s still failing: %d failures over %.0f s (last: %s)", self.name, count, now - since, exc)
        else:
            logger.debug("%s failed again (%s): %s%s", self.name, where, what, exc, exc_info=exc)

    def ok(self, where: str, logger: logging.Logger) -> None:
        if self._since is None:  # the common case, without the lock
            return
        with self._lock:
            if self._since is None:
                return
            count, lasted = self._failures, time.monotonic() - self._since
            self._since = None
            self._failures = 0
            self._recovered = time.monotonic()
        logger.warning("%s works again (seen by the %s) after %d failures over %.1f s", self.name, where, count, lasted)


class Records:
    """Outage records by key. The hub keeps one process-wide set (``outage``); a test that must not see the
    hub's own loops (other hubs run in the same test process) keeps its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[str, Outage] = {}

    def get(self, key: str) -> Outage:
        with self._lock:
            found = self._by_key.get(key)
            if found is None:
                found = self._by_key[key] = Outage(_NAMES.get(key, key))
            return found


_PROCESS_RECORDS = Records()


def outage(key: str) -> Outage:
    """The process-wide record for ``key`` ("postgres", "milvus", "embedder", or a loop's own key)."""
    return _PROCESS_RECORDS.get(key)


class Site:
    """One loop that reports to the outage records: ``failed(exc)`` in its except clause, ``ok()`` after a success."""

    def __init__(
        self,
        where: str,
        logger: logging.Logger,
        depends: Iterable[str] = ("postgres",),
        records: Records = _PROCESS_RECORDS,
    ) -> None:
        """``where`` names the loop in the lines ("indexer"); ``depends``: what a success of it proves works."""
        self.where = where
        self._logger = logger
        self._depends = tuple(depends)
        self._records = records
        self._seen: set[str] = set()

    def failed(self, exc: BaseException, message: str = "") -> None:
        key = classify(exc) or f"{self.where} ({type(exc).__name__})"
        self._seen.add(key)
        self._records.get(key).failed(exc, self.where, self._logger, message)

    def ok(self, depends: Iterable[str] | None = None) -> None:
        """A step succeeded: the dependencies it used (default: those given at construction) work, and so does
        whatever this loop failed on that is not a store (its own streak ends)."""
        keys = set(self._depends if depends is None else depends)
        own = {k for k in self._seen if k not in _NAMES}
        self._seen -= own
        for key in keys | own:
            self._records.get(key).ok(self.where, self._logger)
