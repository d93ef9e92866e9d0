"""The outbox indexer: brings Milvus in line with Postgres.

Each write commits its memories and an outbox row per changed memory in one
transaction. The indexer claims outbox rows with FOR UPDATE SKIP LOCKED (so
any number of hub replicas can run it without doing the same work twice),
reads the memories' *current* state, upserts the servable ones into Milvus
and deletes the rest, then deletes the outbox rows, all before commit. A
failure leaves the rows in place with a back-off and the error recorded.

The servable memories are embedded first, without locking them (a batch of
256 embeds for seconds); then the memory rows are read again and locked, and
only those still servable with the content that was embedded are upserted.
The lock is exclusive among indexers (FOR NO KEY UPDATE): one batch at a time
writes a memory's row in Milvus, so a row the index does not hold is inserted
(Lite's upsert deletes first, and a delete scans the whole collection).
A forget that races with the Milvus write waits for this batch to commit
(tens of milliseconds), and its own outbox row (created after that) then
deletes what this batch upserted, so the index never keeps a forgotten
memory for longer than one batch.

Episodic memories are indexed for keywords with the turns around them in
their session (memhub/db/context.py); a memory queued only because a neighbour
changed reuses its vector from the index, and waits until such rows are due
together (``CONTEXT_DELAY_S``), so that replacing them in the index is one
call every few seconds rather than one a batch.

Two batches are in flight at once by default (``workers``): while one is
written to Milvus and committed, the next is already being embedded, so the
embedder, the bottleneck, never waits for Postgres or Milvus. The workers
claim disjoint rows (SKIP LOCKED) and decide from each memory's current state
under its row lock, as replicas do, so their order does not matter.

Beside it, one job per module: how a memory becomes an index row
(memhub/core/index_apply.py, shared with ``memhub reindex``), what a batch
reports in traces and metrics (memhub/core/indexer_telemetry.py: a root span
"indexer.batch" per batch that claims rows, "indexer.catch_up" after catching
up; idle polls make neither), and whether the embedded index kept what it
acknowledged (memhub/core/index_durability.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta

import numpy as np
import psycopg
from opentelemetry import context as otel_context
from sqlalchemy import ColumnElement, Connection, Engine, delete, exists, func, or_, select

from memhub import outage_log
from memhub.core import index_pointer
from memhub.core.index_apply import apply_rows, is_servable
from memhub.core.index_durability import DurabilityWatch
from memhub.core.index_health import IndexHealth
from memhub.core.index_reconcile import Reconciler, interval_from_env
from memhub.core.indexer_telemetry import CATCH_UP_SPAN, BatchSpan, outcome, tracer
from memhub.db import context, outbox_queue
from memhub.db.listen import WakeableEvent, next_notifications
from memhub.db.memories import enqueue_index
from memhub.db.schema import memories, outbox
from memhub.embedding import Embedder, embed_bulk
from memhub.index import IndexUnavailable, MilvusIndex
from memhub.metrics import record

log = logging.getLogger(__name__)
# Failures in the loops below are logged once per outage of the store that failed, not per retry (memhub/outage_log.py).
_LOOP = outage_log.Site("indexer", log)
_LISTENER = outage_log.Site("outbox listener", log)


CONTEXT_DELAY_S = 2.0
"""Rows queued only because a neighbour changed their keyword context wait until the oldest of them is this old,
then go together. Each new turn of a conversation re-indexes the turns before it that hold it in their context,
and on Lite a replaced row costs a scan of the collection per call, however many rows it carries (~110 ms of its
CPU at 100k rows; bench/bench_lite_writes.py): taken with every batch, one turn per write made two such calls a
batch. A turn's own row is never delayed, only its neighbours' context, and the rows the reconciliation and the
durability check queue the same way (they too reuse the index's vectors)."""


def _context_rows_due() -> ColumnElement[bool]:
    """True when some row queued for its keyword context has waited CONTEXT_DELAY_S (then they all go)."""
    waiting = outbox.alias("waiting")
    return exists().where(
        waiting.c.context_only,
        waiting.c.available_at <= func.now(),
        waiting.c.created_at <= func.now() - timedelta(seconds=CONTEXT_DELAY_S),
    )


class Indexer:
    """Applies outbox rows to the index; run it in a background thread with start()."""

    def __init__(
        self,
        engine: Engine,
        index: MilvusIndex,
        embedder: Embedder,
        *,
        batch_size: int = 256,
        poll_interval_s: float = 1.0,
        expiry_sweep_s: float = 30.0,
        listen_url: str | None = None,
        index_health: IndexHealth | None = None,
        context: context.Window = context.Window(),
        reconcile_interval_s: float | None = None,
        workers: int = 2,
    ) -> None:
        """``reconcile_interval_s``: between comparisons of Postgres with the index (memhub/core/index_reconcile.py);
        None reads MEMHUB_INDEX_RECONCILE_INTERVAL_S. The first runs when the loop starts. ``workers``: batches
        in flight at once (1 to 8); two keep the embedder busy while a batch is written (module docstring)."""
        if not 1 <= workers <= 8:
            raise ValueError(f"indexer workers must be 1 to 8, got {workers}")
        self._engine = engine
        self._index = index
        self._embedder = embedder
        self._batch_size = batch_size
        self._poll_interval_s = poll_interval_s
        self._expiry_sweep_s = expiry_sweep_s
        self._listen_url = listen_url
        self._index_health = index_health
        self._context = context
        self._workers = workers
        self._wakes = [threading.Event() for _ in range(workers)]
        self._stop = WakeableEvent()  # a stop wakes the listener at once (memhub/db/listen.py)
        self._progress = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._last_sweep = 0.0
        self._unflushed = False
        self.reconciler = Reconciler(
            engine, index, interval_from_env() if reconcile_interval_s is None else reconcile_interval_s, nudge=self.nudge
        )
        self._index_was_ok = True
        if index_health is not None:
            index_health.subscribe(self._on_index_health)
        self.durability = DurabilityWatch(engine, index, index_health, self.nudge)

    # -- one step -------------------------------------------------------------

    def run_once(self, *, eager: bool = False) -> int:
        """Claim and apply one batch; return how many outbox rows it consumed (0 when idle).

        ``eager``: take rows queued only for their keyword context at once, not when they are due
        (``CONTEXT_DELAY_S``); ``drain`` is eager."""
        claimed: list[int] = []
        batch = BatchSpan()
        started = time.perf_counter()
        applied = (0, 0)
        try:
            with self._engine.begin() as conn:
                claim = select(outbox.c.id, outbox.c.memory_id, outbox.c.context_only).where(outbox.c.available_at <= func.now())
                if not eager:
                    claim = claim.where(or_(~outbox.c.context_only, _context_rows_due()))
                rows = conn.execute(claim.order_by(outbox.c.id).limit(self._batch_size).with_for_update(skip_locked=True)).all()
                if not rows:
                    return 0
                claimed = [r[0] for r in rows]
                batch.open(len(claimed))
                memory_ids = list(dict.fromkeys(str(r[1]) for r in rows))
                # Queued only because a neighbour changed: the content (and so the vector) is as indexed.
                entered_or_left = list(dict.fromkeys(str(r[1]) for r in rows if not r[2]))
                reusable = set(memory_ids) - set(entered_or_left)
                # Embed before locking the memories: a large batch embeds for seconds, and a
                # forget of one of them must not wait that long for the row lock.
                vectors = self._embed_servable(conn, memory_ids, reusable)
                # Then lock and read the current state: a memory forgotten meanwhile is
                # deleted, one that changed meanwhile is left to its own outbox row.
                # Locked exclusively (FOR NO KEY UPDATE, in id order so two batches cannot deadlock): a batch
                # holding a memory is its only writer in the index, which lets the index insert an absent row
                # rather than upsert it (memhub/index/milvus_index.py ``exclusive``). Rows that only reference
                # a memory (links, versions) still insert beside it.
                current = conn.execute(
                    select(memories).where(memories.c.id.in_(memory_ids)).order_by(memories.c.id).with_for_update(key_share=True)
                ).all()
                now_ms = int(time.time() * 1000)
                servable = {str(r._mapping["id"]): r._mapping for r in current if is_servable(r._mapping, now_ms)}
                # In the order they were written, not the lock's id order: Lite searched 100k LoCoMo turns
                # indexed in id order 20-50% slower (bench/anatomy.py on both; docs/benchmarks.md).
                upsert = [
                    servable[mid]
                    for mid in memory_ids
                    if mid in servable and vectors.get(mid, (None,))[0] == servable[mid]["content_hash"]
                ]
                gone = [mid for mid in memory_ids if mid not in servable]
                batch.set("memhub.indexer.upserted", len(upsert))
                batch.set("memhub.indexer.deleted", len(gone))
                contexts = context.surrounding_turns(conn, [str(m["id"]) for m in upsert], self._context)
                self._apply(upsert, {mid: v for mid, (_, v) in vectors.items()}, contexts, gone)
                applied = (len(upsert), len(gone))
                conn.execute(delete(outbox).where(outbox.c.id.in_(claimed)))
                # The turns around a memory that came or went hold it in their keyword context.
                enqueue_index(conn, context.holders(conn, entered_or_left, self._context, claimed), context_only=True)
        except Exception as exc:  # any store or embedding failure: back off and retry later
            record.indexer_batch(outcome(exc), time.perf_counter() - started)
            batch.failed(exc)
            if isinstance(exc, IndexUnavailable) and self._index_health is not None:
                self._index_health.mark_down(str(exc))
            if claimed:
                self._record_failure(claimed, exc)
            raise
        finally:
            batch.close()
        record.indexer_batch("ok", time.perf_counter() - started, len(claimed), *applied)
        with self._progress:
            self._progress.notify_all()
        return len(claimed)

    def _embed_servable(self, conn: Connection, memory_ids: list[str], reusable: set[str]) -> dict[str, tuple[str, np.ndarray]]:
        """Embed the servable ones among ``memory_ids`` (unlocked read): id -> (content hash, vector).

        ``reusable``: ids whose vector the index already holds, if it does (a
        memory's content never changes while it is servable); read, not embedded.
        """
        now_ms = int(time.time() * 1000)
        columns = (memories.c.id, memories.c.content, memories.c.content_hash, memories.c.status, memories.c.expires_at)
        found = conn.execute(select(*columns).where(memories.c.id.in_(memory_ids)))
        rows = [r._mapping for r in found if is_servable(r._mapping, now_ms)]
        if not rows:
            return {}
        held = self._index.vectors([str(m["id"]) for m in rows if str(m["id"]) in reusable]) if reusable else {}
        out = {str(m["id"]): (m["content_hash"], held[str(m["id"])]) for m in rows if str(m["id"]) in held}
        fresh = [m for m in rows if str(m["id"]) not in held]
        if fresh:
            # Bulk lane: queries embedded meanwhile go first (memhub/embedding/batcher.py).
            vectors = embed_bulk(self._embedder, [m["content"] for m in fresh])
            out.update({str(m["id"]): (m["content_hash"], vec) for m, vec in zip(fresh, vectors, strict=True)})
        return out

    def _apply(
        self, upsert: Sequence, vectors: dict[str, np.ndarray], contexts: dict[str, list[str]], gone: Sequence[str]
    ) -> None:
        apply_rows(self._index, upsert, vectors, contexts, gone, exclusive=True)

    def _record_failure(self, ids: list[int], exc: Exception) -> None:
        # Not logged here: the loop reports the failure once per outage (the rows carry last_error).
        try:
            outbox_queue.back_off(self._engine, ids, str(exc))
        except Exception as db_exc:  # Postgres itself is down: the rows stay claimable as they were
            _LOOP.failed(db_exc, "could not record the indexing failure")

    def sweep_expired(self) -> int:
        """Mark active memories past expires_at as expired (and queue their removal from the index)."""
        return outbox_queue.sweep_expired(self._engine)

    def retry_now(self) -> int:
        """Release outbox rows waiting out a back-off (the index answers again); returns how many."""
        released = outbox_queue.release_backoffs(self._engine)
        self.nudge()
        return released

    def servable_count(self) -> int:
        """Memories that belong in the index (active, not expired)."""
        return outbox_queue.servable_count(self._engine)

    def backfill(self) -> int:
        """Queue every servable memory for indexing (the index was rebuilt empty); returns how many."""
        count = outbox_queue.queue_all_servable(self._engine)
        self.nudge()
        return count

    def pending(self, memory_ids: Sequence[str]) -> int:
        """How many outbox rows still wait for these memories."""
        return outbox_queue.pending(self._engine, memory_ids)

    def backlog(self) -> int:
        return outbox_queue.backlog(self._engine)

    # -- waiting --------------------------------------------------------------

    def wait_indexed(self, memory_ids: Sequence[str], timeout_s: float) -> bool:
        """Block until no outbox row is left for these memories (any replica may do the work)."""
        deadline = time.monotonic() + timeout_s
        self.nudge()
        while True:
            if not memory_ids or self.pending(memory_ids) == 0:
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with self._progress:
                # Woken by our own batches; the timeout covers batches other replicas apply.
                self._progress.wait(min(remaining, 0.05))

    def drain(self, timeout_s: float = 60.0, on_progress: Callable[[int], None] | None = None) -> bool:
        """Run batches in this thread until the outbox is empty; for the CLI and tests."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            done = self.run_once(eager=True)
            if on_progress is not None and done:
                on_progress(done)
            if done == 0 and self.backlog() == 0:
                return True
            if done == 0:
                time.sleep(0.05)  # rows in back-off or claimed by another replica
        return False

    # -- background loop --------------------------------------------------------

    def nudge(self) -> None:
        """Wake the workers now (a local write committed)."""
        for wake in self._wakes:
            wake.set()

    def start(self) -> None:
        """Start the background loop (again, after stop())."""
        self._stop.clear()
        self._threads = []
        worker = threading.Thread(target=self._loop, name="memhub-indexer", daemon=True)
        worker.start()
        self._threads.append(worker)
        for i in range(1, self._workers):
            extra = threading.Thread(target=self._batches, args=(self._wakes[i],), name=f"memhub-indexer-{i}", daemon=True)
            extra.start()
            self._threads.append(extra)
        self.reconciler.start()
        if self._listen_url:
            listener = threading.Thread(target=self._listen, name="memhub-indexer-listen", daemon=True)
            listener.start()
            self._threads.append(listener)

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        self.nudge()
        self.reconciler.stop(timeout_s)
        for t in self._threads:
            t.join(timeout_s)

    def _loop(self) -> None:
        """The first worker: batches, and the chores of a caught-up indexer (expiry sweep, flush, durability)."""
        wake = self._wakes[0]
        while not self._stop.is_set():
            try:
                if time.monotonic() - self._last_sweep > self._expiry_sweep_s:
                    self._last_sweep = time.monotonic()
                    self.sweep_expired()
                if self.run_once() > 0:
                    self._unflushed = True
                    _LOOP.ok(("postgres", "milvus", "embedder"))
                    continue  # more may be waiting: no sleep between full batches
                _LOOP.ok()
                if self._unflushed:
                    # Caught up: seal what we wrote, grow the dense index if it is due.
                    self._unflushed = False
                    self.durability.wrote()
                    with tracer.start_as_current_span(CATCH_UP_SPAN, context=otel_context.Context()):
                        self._index.after_catch_up()
                # Did the index keep what it was given? (memhub/core/index_durability.py)
                self.durability.maybe_check()
            except Exception as exc:
                _LOOP.failed(exc, "indexer step failed; retrying after the poll interval")
            wake.wait(self._poll_interval_s)
            wake.clear()

    def _batches(self, wake: threading.Event) -> None:
        """Another worker: batches only, so one is embedded while another is written (the module docstring)."""
        while not self._stop.is_set():
            try:
                if self.run_once() > 0:
                    self._unflushed = True
                    continue
            except Exception as exc:
                _LOOP.failed(exc, "indexer step failed; retrying after the poll interval")
            wake.wait(self._poll_interval_s)
            wake.clear()

    def _on_index_health(self, ok: bool, reason: str) -> None:
        was_ok, self._index_was_ok = self._index_was_ok, ok
        if ok and not was_ok:
            self.reconciler.soon()  # the index is back: a restarted engine may have lost what it did not persist

    def follow_collection(self) -> bool:
        """Serve from the collection ``memhub reindex`` last switched to, if it moved (memhub/core/index_pointer.py)."""
        return index_pointer.follow(self._engine, self._index)

    def check_durable(self) -> bool | None:
        """Did the embedded index keep what it acknowledged? Checked now (memhub/core/index_durability.py)."""
        return self.durability.check()

    def _listen(self) -> None:
        """LISTEN for commits from other replicas so their writes are indexed promptly, not at the next poll."""
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._listen_url, autocommit=True) as conn:
                    conn.execute("LISTEN memhub_outbox")
                    _LISTENER.ok()
                    while not self._stop.is_set():
                        if next_notifications(conn, self._stop):
                            self.nudge()
            except Exception as exc:  # Postgres restarting: polling still covers us
                _LISTENER.failed(exc, "outbox listener lost its connection; reconnecting")
                self._stop.wait(2.0)
