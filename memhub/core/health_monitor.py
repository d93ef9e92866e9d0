"""Keeps the hub's health truthful and heals the retrieval index, in a background thread.

Every few seconds (every second while something is down) it asks Postgres
``SELECT 1`` and probes the index (``MilvusIndex.probe``: restarts a dead
embedded Milvus Lite, loads a released collection). When the collection is
gone altogether (a fresh Milvus, a dropped collection) it creates it again
and queues every servable memory for indexing: Postgres is the truth, so
the index rebuilds itself. When the index answers again after an outage,
outbox rows waiting out a back-off are released at once.

Listeners (the gRPC health service) hear ``(database_ok, index_ok)``
whenever either changes. ``database_ok`` means Postgres answers and can
write: after a write failed for a full disk, it stays False until a probe
finds room again (memhub/db/disk_full.py), while reads may still work.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqlalchemy import Engine, text

from memhub import outage_log
from memhub.core.index_health import IndexHealth
from memhub.core.indexer import Indexer
from memhub.db import disk_full
from memhub.index import IndexBackendError, IndexCollectionMissing, MilvusIndex

log = logging.getLogger(__name__)
_SITE = outage_log.Site("health monitor", log, depends=())

Listener = Callable[[bool, bool], None]


class HealthMonitor:
    def __init__(
        self,
        engine: Engine,
        index: MilvusIndex,
        index_health: IndexHealth,
        indexer: Indexer,
        *,
        interval_s: float = 5.0,
        down_interval_s: float = 1.0,
    ) -> None:
        self._engine = engine
        self._index = index
        self._index_health = index_health
        self._indexer = indexer
        self._interval = interval_s
        self._down_interval = down_interval_s
        self._db_ok = True
        self._backfill_due = False  # a collection was created, its refill from Postgres not yet queued
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        index_health.subscribe(lambda ok, reason: self._notify())

    @property
    def database_ok(self) -> bool:
        return self._db_ok

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener(database_ok, index_ok)`` now and on every change."""
        with self._lock:
            self._listeners.append(listener)
        listener(self._db_ok, self._index_health.healthy)

    def check_once(self) -> None:
        """Probe both stores once, healing the index where possible."""
        self._check_database()
        self._check_index()

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="memhub-health", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        self._index_health.wake()
        if self._thread is not None:
            self._thread.join(timeout_s)

    # -- internals ---------------------------------------------------------------

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.check_once()
            except Exception as exc:  # a monitor that dies would leave health frozen
                _SITE.failed(exc, "health check failed")
            healthy = self._db_ok and self._index_health.ok
            # A search that marks the index down wakes us at once.
            self._index_health.wait_change(self._interval if healthy else self._down_interval)

    def _check_database(self) -> None:
        try:
            with self._engine.connect() as conn:
                conn.execute(text("SELECT 1"))
            _SITE.ok(("postgres",))
            # A full disk leaves SELECT 1 answering while every write fails: after a write met it
            # (any RPC or loop), "ok" also needs the probe to find room (memhub/db/disk_full.py).
            if disk_full.full():
                disk_full.probe(self._engine)
                _SITE.ok((disk_full.OUTAGE_KEY,))
            ok = True
        except Exception as exc:
            _SITE.failed(exc, "Postgres health check failed")  # once per outage (memhub/outage_log.py)
            ok = False
        if ok != self._db_ok:
            self._db_ok = ok
            self._notify()

    def _check_index(self) -> None:
        was_ok = self._index_health.ok
        self._indexer.follow_collection()  # `memhub reindex` may have switched collections (memhub/core/index_pointer.py)
        try:
            try:
                self._index.probe()
            except IndexCollectionMissing:
                self._rebuild()
            self._backfill()
        except IndexBackendError as exc:
            self._index_health.mark_down(str(exc))
            return
        except Exception as exc:  # Postgres failed the rebuild's count or refill: try again next time
            log.warning("could not refill the rebuilt index from Postgres yet: %s", exc)
            return
        self._index_health.mark_up()
        if not was_ok and self._db_ok:
            self._indexer.retry_now()

    def _rebuild(self) -> None:
        """The collection is gone: create it and queue every servable memory (needs Postgres)."""
        if self._index.ensure_collection():
            self._backfill_due = True
        self._backfill()

    def _backfill(self) -> None:
        # Separate from the create, and remembered: if Postgres fails in between, the next
        # check queues the refill instead of leaving an empty collection that looks healthy.
        if self._backfill_due:
            queued = self._indexer.backfill()
            self._backfill_due = False
            log.warning("the Milvus collection was missing; created it again and queued %d memories for indexing", queued)

    def _notify(self) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(self._db_ok, self._index_health.healthy)
