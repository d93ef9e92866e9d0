"""Reconciliation: compare what Postgres says belongs in the index with what the index holds, and re-queue the rest.

The outbox makes every acknowledged change reach Milvus once; it cannot see
Milvus losing a row afterwards (an embedded Milvus Lite on a full disk
serves rows it never wrote, and forgets them at the next start; a restored
backup; an operator's delete). So at start and then on a schedule
(``MEMHUB_INDEX_RECONCILE_INTERVAL_S``, default 600 s; 0: at start only) the
hub walks the servable memories' ids in Postgres in id order, a chunk at a
time, lists the index's ids over the same range, and queues an outbox row
(context_only: a vector the index still holds is reused, not re-embedded)
for every id on one side only. Ids that already wait in the outbox are left
to it. Only ids are compared: content never changes while a memory is
servable, so an id present means a row present.

Every correction is an outbox row, and the indexer re-reads the memory's
current state before acting, so a race with a write (a memory written or
forgotten between the two reads) costs one redundant indexing, never a
wrong row. One replica at a time (a Postgres advisory lock), off the
request path (its own thread). Cost: bench/bench_index_reconcile.py.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Engine, select, text

from memhub import outage_log
from memhub.db.memories import enqueue_index
from memhub.db.memory_reads import servable_ids_after
from memhub.db.memory_rows import servable_condition
from memhub.db.schema import memories, outbox
from memhub.env_settings import env_float
from memhub.index import MilvusIndex

log = logging.getLogger(__name__)
_SITE = outage_log.Site("index reconciliation", log, depends=("postgres", "milvus"))

DEFAULT_INTERVAL_S = 600.0
CHUNK = 5000
# pg_try_advisory_lock key: one reconciliation at a time across replicas ("memhub-reconcile").
_LOCK_KEY = 0x6D656D7265636F6E


def interval_from_env() -> float:
    """MEMHUB_INDEX_RECONCILE_INTERVAL_S: seconds between reconciliations (0: only the one at start; default 600)."""
    return env_float(os.environ, "MEMHUB_INDEX_RECONCILE_INTERVAL_S", DEFAULT_INTERVAL_S, 0.0, 7 * 86400.0, " s")


@dataclass(frozen=True)
class Reconciled:
    checked: int
    """Servable memories in Postgres compared."""
    missing: int
    """Servable in Postgres, absent from the index (and not waiting in the outbox): queued."""
    extra: int
    """In the index but not servable in Postgres: queued (the indexer deletes them)."""
    seconds: float
    skipped: bool = False
    """Another replica held the lock: nothing was compared."""


def reconcile(engine: Engine, index: MilvusIndex, chunk: int = CHUNK) -> Reconciled:
    """One pass over every servable memory; queues what differs. Raises the stores' errors (the caller retries later)."""
    started = time.perf_counter()
    checked = missing = extra = 0
    with engine.connect() as lock_conn:
        if not lock_conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": _LOCK_KEY}).scalar_one():
            return Reconciled(0, 0, 0, time.perf_counter() - started, skipped=True)
        try:
            after: str | None = None
            while True:
                with engine.connect() as conn:
                    ids = servable_ids_after(conn, after, chunk)
                last = ids[-1] if len(ids) == chunk else None  # None: this chunk runs to the end of the key space
                # Waiting in the outbox before the index is read: the indexer will bring those in line anyway.
                pending = _waiting_in_range(engine, after, last)
                # The index is read after Postgres and the outbox: a memory indexed in between is found.
                held = index.ids_in_range(after, last)
                wanted = set(ids)
                differ = ((wanted - held - pending) | (held - wanted)) - pending
                if differ:
                    # Judged again now, so a write or forget racing with this pass is not counted as a fault.
                    now_servable = _servable_now(engine, differ)
                    lacking = {i for i in differ if i in now_servable and i not in held}
                    stray = {i for i in differ if i in held and i not in now_servable}
                    with engine.begin() as conn:
                        queue = sorted((lacking | stray) - _waiting(engine, lacking | stray))
                        enqueue_index(conn, queue, context_only=True)
                    missing += len(lacking & set(queue))
                    extra += len(stray & set(queue))
                checked += len(ids)
                if last is None:
                    break
                after = last
        finally:
            lock_conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _LOCK_KEY})
            lock_conn.commit()
    return Reconciled(checked, missing, extra, time.perf_counter() - started)


def _waiting(engine: Engine, ids: Iterable[str]) -> set[str]:
    wanted = sorted(set(ids))
    if not wanted:
        return set()
    with engine.connect() as conn:
        return {str(r[0]) for r in conn.execute(select(outbox.c.memory_id).where(outbox.c.memory_id.in_(wanted)))}


def _waiting_in_range(engine: Engine, after: str | None, upto: str | None) -> set[str]:
    """Memory ids with an outbox row in ``(after, upto]``: a range on the outbox's memory index, not a list of
    5,000 parameters (which doubled the pass)."""
    q = select(outbox.c.memory_id)
    if after is not None:
        q = q.where(outbox.c.memory_id > after)
    if upto is not None:
        q = q.where(outbox.c.memory_id <= upto)
    with engine.connect() as conn:
        return {str(r[0]) for r in conn.execute(q)}


def _servable_now(engine: Engine, ids: Iterable[str]) -> set[str]:
    with engine.connect() as conn:
        q = select(memories.c.id).where(memories.c.id.in_(sorted(ids)), servable_condition())
        return {str(r[0]) for r in conn.execute(q)}


class Reconciler:
    """Runs ``reconcile`` soon after start and then every ``interval_s`` on a daemon thread."""

    def __init__(
        self,
        engine: Engine,
        index: MilvusIndex,
        interval_s: float,
        *,
        first_delay_s: float = 1.0,
        nudge=None,  # noqa: ANN001
    ) -> None:
        self._engine = engine
        self._index = index
        self._interval = interval_s
        self._first_delay = first_delay_s
        self._nudge = nudge
        self._stop = threading.Event()
        self._soon = threading.Event()
        self._thread: threading.Thread | None = None
        self.last: Reconciled | None = None
        """The last finished pass (for reports and tests)."""

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="memhub-index-reconcile", daemon=True)
        self._thread.start()

    def soon(self) -> None:
        """Run a pass now (the index came back after an outage: an engine that restarted may have lost rows)."""
        self._soon.set()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        self._soon.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def run_once(self) -> Reconciled:
        result = reconcile(self._engine, self._index)
        if not result.skipped:
            self.last = result
        if result.missing or result.extra:
            log.warning(
                "the retrieval index lacked %d servable memories and held %d it should not (of %d compared, "
                "%.1f s); queued them for indexing",
                result.missing,
                result.extra,
                result.checked,
                result.seconds,
            )
            if self._nudge is not None:
                self._nudge()
        else:
            log.info("retrieval index matches Postgres (%d memories compared, %.1f s)", result.checked, result.seconds)
        return result

    def _run(self) -> None:
        wait = self._first_delay
        while True:
            self._soon.wait(wait if wait > 0 else None)
            self._soon.clear()
            if self._stop.is_set():
                return
            wait = self._interval
            try:
                self.run_once()
                _SITE.ok()
                if self._interval <= 0:
                    wait = 0  # no schedule: only when told (soon())
            except Exception as exc:  # a store is down: try again sooner
                _SITE.failed(exc, "index reconciliation failed, will retry")
                wait = min(self._interval, 30.0) if self._interval > 0 else 30.0
