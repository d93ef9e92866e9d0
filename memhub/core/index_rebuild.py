"""`memhub reindex` without a gap: build the new index beside the live one, then switch every replica to it.

The old way dropped the collection and refilled it through the outbox, so for
the half-minute of the refill searches missed memories and said nothing
(7-12% of searches over known memories, degraded=false). Now:

1. a new collection ``<name>_r<unix time>`` is created next to the one in use,
   which keeps serving searches and taking the outbox's writes;
2. every servable memory is read from Postgres in write order and written
   to the new collection (with its keyword context; its vector taken from the
   old collection when that one was built with the same model, embedded
   otherwise), not through the outbox, which belongs to the live index;
3. the memories changed since the fill began (``updated_at``, with a margin
   for transactions still open then) are applied again, and the pointer in
   Postgres (memhub/core/index_pointer.py) is switched: each replica's health
   monitor moves its searches and writes to the new collection within a
   check interval;
4. after a grace period longer than that interval, what changed since the
   switch began is applied again (a write a replica indexed into the old
   collection before it followed), a reconciliation queues whatever still
   differs (memhub/core/index_reconcile.py), and the old collection is dropped.

No search ever runs on a half-filled collection, and no write is missed: one
made before the switch reaches the new collection through steps 3-4, one
made after it through the outbox of a replica that already follows.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from sqlalchemy import Connection, Engine, func, select, tuple_

from memhub.core.index_apply import apply_rows, indexed_memories, is_servable
from memhub.core.index_pointer import current, switch
from memhub.core.index_reconcile import Reconciled, reconcile
from memhub.db import context
from memhub.db.memory_rows import servable_condition
from memhub.db.schema import memories
from memhub.embedding import Embedder, embed_bulk
from memhub.index import IndexedMemory, MilvusIndex

log = logging.getLogger(__name__)

BATCH = 256
FILL_BATCH = 2048
"""Memories per page of the fill: one Postgres read, one batch of inserts (``MilvusIndex.insert_new`` splits it)."""
# A change whose transaction was open this long before a pass began is still seen by the pass.
OPEN_TRANSACTION_MARGIN = timedelta(seconds=120)
DEFAULT_GRACE_S = 15.0
"""Longer than the health monitor's 5 s check: every serving replica has followed the switch by then."""


@dataclass(frozen=True)
class Rebuilt:
    collection: str
    replaced: str
    filled: int
    refreshed: int
    reconciled: Reconciled


def new_collection_name(base: str) -> str:
    return f"{base}_r{int(time.time())}"


def _db_now(engine: Engine) -> datetime:
    with engine.connect() as conn:
        return conn.execute(select(func.now())).scalar_one()


def _write(
    engine: Engine,
    index: MilvusIndex,
    embedder: Embedder,
    window: context.Window,
    ids: list[str],
    *,
    skip_unchanged: bool,
    reuse_from: str | None = None,
) -> int:
    """Write the current state of ``ids`` to ``index``: the servable ones upserted, the others deleted; returns how
    many were upserted (``skip_unchanged``: rows the index already holds as they are are left alone). ``reuse_from``:
    a collection whose vectors are taken where it holds them, if it was built with this model (a memory's content,
    and so its vector, never changes while it is servable); the rest are embedded."""
    # Embedded before the rows are locked, as the indexer does (memhub/core/indexer.py): a batch of new memories
    # embeds for seconds, and a forget of one of them must not wait that long for its row.
    with engine.connect() as conn:
        ahead = [r._mapping for r in conn.execute(select(*_ROW_COLUMNS).where(memories.c.id.in_(ids)))]
        vectors = _vectors(index, embedder, _servable(ahead), reuse_from)
    # Then the rows are locked as the indexer locks them and read again: after the switch the hubs' indexers write
    # this collection too, and one writer per memory at a time lets both insert the rows the index does not hold
    # rather than upsert them (a Lite upsert scans the collection). Read under the lock, a memory forgotten a moment
    # before is seen as forgotten, not written back after its delete.
    locked = select(*_ROW_COLUMNS).where(memories.c.id.in_(ids)).order_by(memories.c.id).with_for_update(key_share=True)
    with engine.begin() as conn:
        live = _servable([r._mapping for r in conn.execute(locked)])
        # A memory's content never changes while it is servable, so a vector made above is still its own; only one
        # that became servable in between (released from quarantine) is embedded here.
        late = [m for m in live if str(m["id"]) not in vectors]
        if late:
            vectors.update(_vectors(index, embedder, late, None))
        contexts = context.surrounding_turns(conn, [str(m["id"]) for m in live], window)
        gone = sorted(set(ids) - {str(m["id"]) for m in live})
        return apply_rows(index, live, vectors, contexts, gone, skip_unchanged=skip_unchanged, exclusive=True)


# What a memory's index row is made of (memhub/core/index_apply.py), and whether it is servable.
_ROW_COLUMNS = [
    memories.c[name]
    for name in ("id", "namespace", "kind", "type", "content", "tags", "occurred_at", "created_at", "expires_at", "status")
]


def _servable(rows: Sequence) -> list:
    """The memory rows that belong in the index now."""
    now_ms = int(time.time() * 1000)
    return [m for m in rows if is_servable(m, now_ms)]


def _vectors(index: MilvusIndex, embedder: Embedder, rows: Sequence, reuse_from: str | None) -> dict[str, np.ndarray]:
    """Memory id -> vector for ``rows``: taken from collection ``reuse_from`` where it holds one, else embedded."""
    vectors = index.vectors_in(reuse_from, [str(m["id"]) for m in rows]) if reuse_from else {}
    fresh = [m for m in rows if str(m["id"]) not in vectors]
    if fresh:
        vectors.update(zip((str(m["id"]) for m in fresh), embed_bulk(embedder, [m["content"] for m in fresh]), strict=True))
    return vectors


def _prepared(
    conn: Connection,
    index: MilvusIndex,
    embedder: Embedder,
    window: context.Window,
    rows: Sequence,
    reuse_from: str | None,
) -> tuple[list, dict[str, np.ndarray], dict[str, list[str]]]:
    """The servable ones among memory ``rows``, their vectors (reused or embedded) and their keyword contexts."""
    live = _servable(rows)
    contexts = context.surrounding_turns(conn, [str(m["id"]) for m in live], window)
    return live, _vectors(index, embedder, live, reuse_from), contexts


# Write order, as the hub's indexer hands memories to the index (memhub/core/indexer.py, outbox order): the write's
# transaction time, which every memory of one write request shares, then the position in the request; the id only
# breaks what ties remain, so the key is unique and keyset paging exact. Close to the outbox's order, not equal: the
# outbox has a request's subject-keyed memories and extracted facts after its other memories, and orders concurrent
# writes by when they inserted rather than when they began. Milvus Lite 2.5.1 searched a 100k collection the fill had
# inserted in id order slower than the indexer's own: dense 12.3 and 11.6 ms against 10.3 and 9.6 ms, BM25 4.9 against
# 3.2 ms (docs/benchmarks.md, seventh round).
_WRITE_ORDER = (memories.c.created_at, memories.c.write_pos, memories.c.id)
_WriteKey = tuple[datetime, int, str]


@dataclass(frozen=True)
class _Page:
    """One page of the fill: the memories read (the write-order key of the last one, how many) and the index rows
    made of them."""

    last: _WriteKey
    read: int
    rows: list[IndexedMemory]


def fill(
    engine: Engine,
    index: MilvusIndex,
    embedder: Embedder,
    window: context.Window,
    progress: Callable[[int], None],
    reuse_from: str | None = None,
    *,
    new_collection: bool = False,
) -> int:
    """Every servable memory into ``index``, in write order (``_WRITE_ORDER``: the collection then searches as fast
    as one the indexer filled), FILL_BATCH at a time; vectors ``reuse_from`` holds are reused. Returns how many
    rows were written.

    ``new_collection``: ``index`` was created for this fill and has never held a row, so rows are inserted, never
    upserted (``MilvusIndex.insert_new``; Lite's upserts made the fill slow down as the collection grew). Each
    page of rows is read from Postgres, given its keyword context and vectors, in a thread while the page before
    is written: the index's work (a separate process on Lite) and this process's overlap.
    """
    write = index.insert_new if new_collection else index.upsert
    total = 0
    with ThreadPoolExecutor(1, thread_name_prefix="memhub-fill-read") as pool:
        ahead = pool.submit(_read_page, engine, index, embedder, window, None, reuse_from)
        while (page := ahead.result()) is not None:
            ahead = pool.submit(_read_page, engine, index, embedder, window, page.last, reuse_from)
            total += write(page.rows) if page.rows else 0
            progress(page.read)
    return total


def _read_page(
    engine: Engine,
    index: MilvusIndex,
    embedder: Embedder,
    window: context.Window,
    after: _WriteKey | None,
    reuse_from: str | None,
) -> _Page | None:
    """The next FILL_BATCH servable memories after ``after`` in write order, as index rows; None past the last one."""
    q = select(*_ROW_COLUMNS, memories.c.write_pos).where(servable_condition()).order_by(*_WRITE_ORDER).limit(FILL_BATCH)
    if after is not None:
        # One row-value comparison: exact where many memories share a created_at, and an index range
        # (ix_memories_write_order), so a page costs the same at the millionth memory as at the first.
        q = q.where(tuple_(*_WRITE_ORDER) > after)
    with engine.connect() as conn:
        rows = [r._mapping for r in conn.execute(q)]
        if not rows:
            return None
        live, vectors, contexts = _prepared(conn, index, embedder, window, rows, reuse_from)
    last = rows[-1]
    return _Page((last["created_at"], last["write_pos"], str(last["id"])), len(rows), indexed_memories(live, vectors, contexts))


def refresh(engine: Engine, index: MilvusIndex, embedder: Embedder, window: context.Window, since: datetime) -> int:
    """Apply again every memory changed since ``since`` (and the turns whose keyword context holds one); returns
    how many rows were written.

    Rows the index holds unchanged are not written again: after the switch the collection is live, and on Milvus
    Lite a row being replaced is missing from searches until the upsert ends (memhub/index/replace_gate.py); the
    gate that hides that covers only the process that writes, and this one is not the hub."""
    count = 0
    after: str | None = None
    while True:
        with engine.connect() as conn:
            q = select(memories.c.id).where(memories.c.updated_at >= since).order_by(memories.c.id).limit(BATCH)
            if after is not None:
                q = q.where(memories.c.id > after)
            ids = [str(r[0]) for r in conn.execute(q)]
            if not ids:
                return count
            around = context.holders(conn, ids, window, [])
        # The filled collection holds their vectors already (a memory's content never changes while servable).
        changed = sorted(set(ids) | set(around))
        count += _write(engine, index, embedder, window, changed, skip_unchanged=True, reuse_from=index.collection)
        after = ids[-1]


def rebuild(
    engine: Engine,
    open_index: Callable[[str], MilvusIndex],
    base: str,
    embedder: Embedder,
    window: context.Window,
    *,
    grace_s: float = DEFAULT_GRACE_S,
    progress: Callable[[int], None] = lambda n: None,
) -> Rebuilt:
    """Steps 1-4 of the module docstring. ``open_index(name)`` connects to collection ``name`` of the hub's Milvus."""
    replaced = current(engine, base)
    name = new_collection_name(base)
    target = open_index(name)
    try:
        created = target.ensure_collection()
        began = _db_now(engine) - OPEN_TRANSACTION_MARGIN
        # The replaced collection's vectors, if its model is this one (e.g. a layout change): nothing is embedded again.
        filled = fill(
            engine,
            target,
            embedder,
            window,
            progress,
            reuse_from=replaced if replaced != name else None,
            new_collection=created,
        )
        switching = _db_now(engine) - OPEN_TRANSACTION_MARGIN
        refreshed = refresh(engine, target, embedder, window, began)
        target.flush()
        switch(engine, base, name)
        log.warning("switched the retrieval index from %r to %r; waiting %.0f s for every hub", replaced, name, grace_s)
        time.sleep(grace_s)
        refreshed += refresh(engine, target, embedder, window, switching)
        reconciled = reconcile(engine, target)
        if replaced != name:
            target.drop_collection(replaced)
        target.after_catch_up()
    finally:
        target.close()
    return Rebuilt(name, replaced, filled, refreshed, reconciled)
