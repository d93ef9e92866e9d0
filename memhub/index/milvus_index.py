"""MilvusIndex: the derived retrieval index (dense + BM25) over one Milvus collection.

Postgres is the source of truth; this collection can always be rebuilt from
it. Hits are ids and scores only: the caller hydrates and re-checks them in
Postgres.

The index is built in four layers, one module each: ``MilvusConnection``
(milvus_connection.py: the client, the embedded server, and how every call is
traced, translated and healed), ``MilvusCollection`` (milvus_collection.py:
the collection's lifecycle and its model record), ``MilvusReads``
(milvus_reads.py: vectors, counts and ids read back), and ``MilvusIndex``
here: what the hub does with it, write and search. How a dense search runs
on each backend is dense_search.py (Lite's codes: dense_codes.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from numbers import Real
from typing import Any

import numpy as np

from memhub.index import dense_codes, dense_search, raw_search, schema
from memhub.index.backend import LITE_CANDIDATES, SERVER_HNSW, DenseIndex
from memhub.index.bulk_insert import insert_columns
from memhub.index.errors import IndexBackendError, IndexModelMismatch, IndexUnavailable
from memhub.index.filters import build_filter
from memhub.index.milvus_reads import MilvusReads, id_filters
from memhub.index.records import IndexedMemory, IndexFilter
from memhub.index.replace_gate import ReplaceGate
from memhub.index.rows import SCALAR_FIELDS, check_vector, same_fields, to_columns, to_row
from memhub.index.vector_copies import DEFAULT_BUDGET_BYTES, VectorCopies

__all__ = [
    "IndexBackendError",
    "IndexFilter",
    "IndexModelMismatch",
    "IndexUnavailable",
    "IndexedMemory",
    "MilvusIndex",
]

log = logging.getLogger(__name__)

# Milvus's maximum topk.
MAX_LIMIT = 16384
# Rows per upsert call: bounds a request at ~512 x (65 KB text + 1.5 KB vector)
# worst case, under Milvus's default 64 MB gRPC message limit; typical
# memories are a few hundred bytes, so this is one call per indexer batch.
_UPSERT_BATCH = 512
# Rows per insert call, and the bytes of content one may carry: larger calls than an upsert's (2048 rows took
# 8-20% less time than 512 at 30k rows), still well under the 64 MB message limit with long memories.
_INSERT_BATCH = 2048
_INSERT_BYTES = 16 << 20
# A keyword search that met Lite's BM25 statistics mid-change is tried again this often, this far apart.
_BM25_RACE_RETRIES = 2
_BM25_RACE_PAUSE_S = 0.01
# Rows per replacing upsert: each holds this process's searches back for its length. On Lite a call scans the
# collection whatever it carries: at 100k rows 64 rows took 164 ms, 256 rows 206 ms (27 and 61 ms at 10k;
# bench/bench_lite_writes.py).
_REPLACE_BATCH = 256
# Rows per page when the hub copies the index's vectors (~4 MB of float16 text a page at 384 dimensions).
_COPY_PAGE = 4096
# A failed copy is tried again at a catch-up no sooner than this after it failed, the wait doubling with each
# failure in a row up to the most: a copy that keeps failing (it reads every row before it does) must not read
# the whole index again at every catch-up of a steady trickle of writes.
_COPY_RETRY_FIRST_S = 30.0
_COPY_RETRY_MOST_S = 3600.0


class MilvusIndex(MilvusReads):
    """Dense and BM25 search over memories, filtered inside Milvus on scalar fields."""

    def __init__(
        self,
        uri: str,
        *,
        token: str | None = None,
        collection: str = "memhub_memories",
        model_id: str,
        dimension: int,
        db_name: str | None = None,
        analyzer: dict[str, Any] | None = None,
        consistency_level: str = "Strong",
        timeout_s: float = 10.0,
        search_timeout_s: float = 5.0,
        server_dense: DenseIndex = SERVER_HNSW,
        lite_candidates: int = LITE_CANDIDATES,
        vector_copies_bytes: int = DEFAULT_BUDGET_BYTES,
    ) -> None:
        """Connect to Milvus (starting the embedded server for a ``.db`` path); nothing is created until ``ensure_collection``.

        Args:
            uri: ``<dir>/<name>.db`` for embedded Milvus Lite, or ``http(s)://host:port``.
            token: Milvus token (``user:password`` or an API key); never logged.
            collection: collection name.
            model_id: embedding model id recorded with (and checked against) the collection.
            dimension: embedding dimension, likewise.
            db_name: Milvus database; None uses the server default.
            analyzer: BM25 ``analyzer_params`` for new collections; default
                ``schema.DEFAULT_ANALYZER`` (jieba words, lowercase, English
                stemmer, stop words).
            consistency_level: used by every search (and as the default of new
                collections). Strong, because a write that waited for
                ``wait_indexed`` promises read-your-writes, also when another
                replica did the upsert; Milvus's default, Bounded, may hide a
                fresh upsert for seconds on a server.
            timeout_s: per-call timeout for writes and administration
                (pymilvus retries within it), so a hung server fails a call
                instead of holding its thread.
            search_timeout_s: per-call timeout for searches, shorter: a search
                that cannot be answered quickly is better answered degraded.
            server_dense: the dense index of new collections on a Milvus server
                (``backend.server_dense_index``; default HNSW).
            lite_candidates: Milvus Lite: candidates each dense search scores
                exactly (``backend.LITE_CANDIDATES``).
            vector_copies_bytes: Milvus Lite: the most the hub's copy of the
                rows' vectors may take (memhub/index/vector_copies.py).

        Raises:
            IndexUnavailable: the URI is malformed, the server is unreachable,
                or the Milvus Lite data file is locked by another process.
        """
        self._search_timeout = search_timeout_s
        self._flush_lock = threading.Lock()  # one flush at a time
        self._pending = 0  # rows written since the last flush; guarded by _lock
        self._gate = ReplaceGate(search_timeout_s)
        # Lite: the hub's copy of the rows' float16 vectors (memhub/index/vector_copies.py). While it holds every row
        # (``_copies_whole``: read back whole by ``copy_vectors`` since the collection was last opened or switched, and
        # nothing pushed out since), dense searches ask Lite for their candidates' ids only.
        self._copies = VectorCopies(dimension, vector_copies_bytes)
        self._copies_whole = False
        self._copies_generation = 0  # goes up when the collection served changes: a copy begun before is not whole
        self._copying: threading.Thread | None = None
        # When the last copy failed: the monotonic time from which a catch-up tries again (None: it did not fail).
        self._copy_retry_at: float | None = None
        self._copy_retry_wait = _COPY_RETRY_FIRST_S  # the wait after the next failure
        # About how many rows the collection holds, for the candidates of a Lite search (dense_search.candidates_for):
        # counted when the collection is opened and after the indexer catches up, raised by each write in between.
        self._rows = dense_search.ROWS_UNKNOWN
        super().__init__(
            uri,
            token=token,
            collection=collection,
            model_id=model_id,
            dimension=dimension,
            db_name=db_name,
            analyzer=analyzer,
            consistency_level=consistency_level,
            timeout_s=timeout_s,
            server_dense=server_dense,
            lite_candidates=lite_candidates,
        )

    # -- lifecycle ----------------------------------------------------------------

    def recreate(self) -> None:
        """Drop the collection (if any) and create it empty for this model; used by ``memhub reindex``."""
        with self._call("drop_collection"):
            if self._client.has_collection(self._collection, timeout=self._timeout):
                self._client.drop_collection(self._collection, timeout=self._timeout)
        with self._lock:
            self._pending = 0
        self._create()
        self._load()
        self._copies_changed()
        self._copies_whole = self.backend.coded_dense  # empty, and every row from now on is written here

    def close(self) -> None:
        """Flush pending writes, close the client and stop an embedded server nobody else uses. Idempotent."""
        with self._lock:
            if self._closed:
                return
            pending = self._pending
        if self.backend.flush_after_writes and pending:
            try:
                self.flush()  # a reopened Lite replays unflushed writes from its log: keep the next start short
            except IndexBackendError as exc:
                log.warning("flush on close failed: %s", exc)
        super().close()

    def use_collection(self, name: str) -> None:
        previous = self._collection
        super().use_collection(name)
        if name != previous:
            self._copies_changed()
            self.start_copying_vectors()

    use_collection.__doc__ = MilvusReads.use_collection.__doc__

    # -- writes -------------------------------------------------------------------

    def upsert(self, rows: Sequence[IndexedMemory], *, skip_unchanged: bool = False, exclusive: bool = False) -> int:
        """Insert or replace memories by id; returns how many rows were written. Raises ValueError (naming the
        memory) for invalid rows.

        Rows the index already holds are replaced under the replace gate, so no search of this process runs
        while Lite has deleted them and not yet inserted them again (memhub/index/replace_gate.py).
        ``skip_unchanged``: a held row whose every field but the vector equals the new one is not written again
        (a memory's vector follows from its content, which never changes while it is servable).
        ``exclusive``: no one else writes these ids until this call returns (the indexer holds their memories'
        rows locked), so on Lite the ids the collection does not hold are inserted, not upserted. A Milvus upsert deletes
        before it inserts, and on Lite that scans the whole collection, held ids or new: ~100 ms of its CPU per
        call at 100k rows, against ~1 ms for an insert (bench/bench_lite_writes.py). Without the guarantee, two
        writers could each find an id absent and both insert it.
        """
        if not rows:
            return 0
        # Last write wins within a batch: Milvus may refuse duplicate keys in one call.
        latest = {m.id: m for m in rows}
        self._copies.forget(latest)  # kept again below once written: a failed write leaves none of them here
        # Only on Lite, where upserts cost a scan (a server finds ids by its own index), and only after a Strong
        # read of the held ids: another replica's insert of one of them must be seen, whatever the searches use.
        insert_absent = exclusive and self.backend.lite
        held = self._held_rows(list(latest), with_fields=skip_unchanged, strong=insert_absent)
        absent = [m for mid, m in latest.items() if mid not in held] if insert_absent else []
        # The rows to upsert are checked here, the absent ones by insert_new before it writes: a bad row (ValueError)
        # stops the call before anything is written.
        by_id = {
            mid: to_row(m, self._dimension, self.backend) for mid, m in latest.items() if not (insert_absent and mid not in held)
        }
        fresh = [row for mid, row in by_id.items() if mid not in held]
        replacing = [row for mid, row in by_id.items() if mid in held and not (skip_unchanged and same_fields(row, held[mid]))]
        with self._span("upsert", {"memhub.milvus.rows": len(absent) + len(fresh), "memhub.milvus.replaced": len(replacing)}):
            if absent:
                self.insert_new(absent)  # columns, as a reindex fills: no row dicts for pymilvus to pack
            for start in range(0, len(fresh), _UPSERT_BATCH):
                chunk = fresh[start : start + _UPSERT_BATCH]
                self._healing("upsert", lambda c=chunk: self._client.upsert(self._collection, c, timeout=self._timeout))
            # Small chunks: searches wait for one chunk at a time, not the whole batch.
            for start in range(0, len(replacing), _REPLACE_BATCH):
                chunk = replacing[start : start + _REPLACE_BATCH]
                with self._gate.replace():
                    self._healing("upsert", lambda c=chunk: self._client.upsert(self._collection, c, timeout=self._timeout))
            with self._lock:
                self._pending += len(fresh) + len(replacing)
                self._rows += len(fresh)
        self._keep_vectors([latest[mid] for mid in by_id])  # insert_new kept the absent ones'
        return len(absent) + len(fresh) + len(replacing)

    def insert_new(self, rows: Sequence[IndexedMemory]) -> int:
        """Add memories this collection has never held (``memhub reindex`` filling its new collection, and ``upsert``
        for the ids an exclusive caller's collection was found not to hold); returns how many rows were written.
        Raises ValueError (naming the memory) for invalid rows or an id given twice.

        Unlike ``upsert`` it never upserts: on Lite an upsert scans the collection, so a fill slowed as it grew
        (130-270 rows/s at 185k rows; bench/bench_lite_writes.py). Milvus does not check ids on insert: an id the
        collection already holds would be stored twice, so only a caller that knows the ids are new may use this.
        A chunk whose insert failed and was healed (a restarted engine) goes again as an upsert, which cannot store
        it twice if the failed insert landed.
        """
        if not rows:
            return 0
        ids = [m.id for m in rows]
        if len(set(ids)) != len(ids):
            raise ValueError("insert_new was given the same memory id twice")
        columns = to_columns(rows, self._dimension, self.backend)  # every row checked before anything is written
        with self._span("insert", {"memhub.milvus.rows": len(rows)}):
            for start, end in _chunks(columns[schema.CONTENT]):
                chunk = {name: values[start:end] for name, values in columns.items()}
                try:
                    with self._call("insert"):
                        insert_columns(self._client, self._collection, chunk, self._timeout)
                except IndexBackendError as exc:
                    if not self._heal(exc):
                        raise
                    self.upsert(rows[start:end])
                    continue
                with self._lock:
                    self._pending += len(chunk[schema.ID])
                    self._rows += len(chunk[schema.ID])
        self._keep_vectors(rows)
        return len(rows)

    def _held_rows(self, ids: list[str], *, with_fields: bool, strong: bool = False) -> dict[str, dict[str, Any]]:
        """The rows among ``ids`` the collection holds: id -> its stored scalar fields (only the id unless
        ``with_fields``). ``strong``: read at Strong consistency, whatever the collection's default."""
        fields = list(SCALAR_FIELDS) if with_fields else [schema.ID]
        rows = self._rows_by_id(ids, fields, "read held rows", consistency="Strong" if strong else None)
        return {str(r[schema.ID]): dict(r) for r in rows}

    def delete(self, ids: Sequence[str]) -> None:
        """Remove memories by id; unknown ids are ignored."""
        unique = sorted(set(ids))
        if not unique:
            return
        self._copies.forget(unique)
        with self._span("delete", {"memhub.milvus.rows": len(unique)}):
            # Not delete(ids=...): pymilvus wraps string keys in quotes without
            # escaping them, so an id containing ' could widen the delete.
            for expr in id_filters(unique):
                self._healing("delete", lambda e=expr: self._client.delete(self._collection, filter=e, timeout=self._timeout))
            with self._lock:
                self._pending += len(unique)

    def flush(self) -> None:
        """Seal written rows into segments (bounds what a restart replays from the write-ahead log)."""
        with self._span("flush", {}) as span, self._flush_lock:
            with self._lock:
                flushed = self._pending
            span.set_attribute("memhub.milvus.rows", flushed)
            self._healing("flush", lambda: self._client.flush(self._collection, timeout=self._timeout))
            with self._lock:
                self._pending = max(0, self._pending - flushed)

    def after_catch_up(self) -> None:
        """Called by the indexer when the outbox is empty: flush if this backend wants it; count the rows."""
        with self._lock:
            pending = self._pending
        if pending and self.backend.flush_after_writes:
            self.flush()
        if self.backend.coded_dense:
            self._rows = self.count()
        retry_at = self._copy_retry_at
        if retry_at is not None and time.monotonic() >= retry_at:  # Lite answers again (the indexer just wrote to it)
            self._copy_retry_at = None
            self.start_copying_vectors()

    def ensure_collection(self) -> bool:
        created = super().ensure_collection()
        if self.backend.coded_dense:
            self._rows = self.count()
        return created

    ensure_collection.__doc__ = MilvusReads.ensure_collection.__doc__

    # -- reads --------------------------------------------------------------------

    def search_dense(self, vector: Sequence[float], flt: IndexFilter, limit: int) -> list[tuple[str, float]]:
        """Nearest memories by cosine similarity (inner product of unit vectors), best first: ``[(id, similarity)]``.

        The similarities are exact on every backend; on Lite the candidates come from codes (``dense_search.py``).
        """
        query = check_vector(vector, self._dimension, "query")
        with self._span("search_dense", _search_attributes(flt, limit)) as span:
            hits = self._dense_hits([query], flt, limit)[0]
            span.set_attribute("memhub.milvus.hits", len(hits))
        return hits

    def search_dense_many(
        self, vectors: Sequence[Sequence[float]], flt: IndexFilter, limit: int, *, at_least: float | None = None
    ) -> list[list[tuple[str, float]]]:
        """`search_dense` for several vectors under one filter, in one call: one result list per vector.

        ``at_least``: only hits at this cosine similarity or above are wanted (the near-duplicate check's); the
        others are left out, and when they are close rows (``dense_search.CLOSE_FROM``) Lite proposes fewer
        candidates for them.
        """
        if at_least is not None and (isinstance(at_least, bool) or not isinstance(at_least, Real) or not -1.0 <= at_least <= 1.0):
            raise ValueError(f"at_least must be a similarity from -1 to 1 or None; got {at_least!r}")
        queries = [check_vector(v, self._dimension, "query") for v in vectors]
        if not queries:
            return []
        with self._span("search_dense", {**_search_attributes(flt, limit), "memhub.milvus.queries": len(queries)}):
            return self._dense_hits(queries, flt, limit, at_least)

    def _dense_hits(
        self, queries: list[np.ndarray], flt: IndexFilter, limit: int, at_least: float | None = None
    ) -> list[list[tuple[str, float]]]:
        _check_limit(limit)
        here = self._vectors_here()
        call = dense_search.request(
            self.backend, self._dense, queries, limit, MAX_LIMIT, self._rows, at_least, with_vectors=not here
        )
        answer = self._search_many(
            call.data, call.anns_field, flt, call.limit, "dense search", call.search_params, call.output_fields
        )
        return dense_search.hits(self.backend, answer, queries, limit, self._copied if here else self._sent, at_least)

    def similarities(self, query: Sequence[float] | np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """Cosine similarity of ``query`` with each of ``ids`` the index holds, for judging relevance: on Lite from
        the hub's copy of the vectors, without a query to Milvus for those it holds."""
        q = check_vector(query, self._dimension, "query")
        out = self._copies.similarities(q, ids)
        rest = [mid for mid in ids if mid not in out]
        if rest:
            fetched = self.vectors(rest)
            if self.backend.coded_dense and fetched:
                self._copies.put(list(fetched), np.vstack(list(fetched.values())))
            out.update({mid: float(np.dot(v, q)) for mid, v in fetched.items()})
        return out

    # -- the hub's copy of Lite's vectors (memhub/index/vector_copies.py) ---------------------------------------------

    def copy_vectors(self) -> int:
        """Lite: read every row's float16 vector into the hub's copy; from then on, while the copy stays whole, dense
        searches ask Lite for their candidates' ids only. Returns the rows read (0 elsewhere).

        Searches meanwhile ask for the vectors as before. Rows written or deleted while it reads are kept or dropped
        by the writes themselves; a row read here after its delete stays unused (Lite no longer proposes it).
        """
        if not self.backend.coded_dense:
            return 0
        with self._lock:
            generation = self._copies_generation
            collection = self._collection
        if self._rows != dense_search.ROWS_UNKNOWN and self._rows > self._copies.capacity:
            log.info(
                "the index holds about %d rows, more than the hub's copy of its vectors holds (%d): dense searches ask "
                "Milvus Lite for the vectors",
                self._rows,
                self._copies.capacity,
            )
            return 0
        read = 0
        with self._span("copy_vectors", {}) as span, self._call("copy vectors"):
            pages = self._client.query_iterator(
                collection, batch_size=_COPY_PAGE, filter="", output_fields=[schema.ID, schema.DENSE_F16], timeout=self._timeout
            )
            try:
                while (page := pages.next()) and not self._closed and not self._copies.pushed_out:
                    halves = dense_codes.unpack_halves([r[schema.DENSE_F16] for r in page], self._dimension)
                    self._copies.put([str(r[schema.ID]) for r in page], halves)
                    read += len(page)
            finally:
                pages.close()
            span.set_attribute("memhub.milvus.rows", read)
        with self._lock:
            # Whole only if nothing left to make room and the collection served is still the one read.
            if generation == self._copies_generation:
                self._copies_whole = not self._copies.pushed_out and not self._closed
        return read

    def start_copying_vectors(self) -> None:
        """``copy_vectors`` in a background thread (one at a time); a failure is logged and searches keep asking Lite
        for the vectors."""
        if not self.backend.coded_dense or not self._copies.capacity:
            return

        def run() -> None:
            started = time.monotonic()
            try:
                rows = self.copy_vectors()
            except Exception as exc:  # noqa: BLE001 - anything: the copy is an optimisation, searches do without it
                if not self._closed:
                    wait = self._copy_retry_wait
                    self._copy_retry_wait = min(2 * wait, _COPY_RETRY_MOST_S)
                    self._copy_retry_at = time.monotonic() + wait
                    log.warning(
                        "could not copy the index's vectors into the hub (%s); dense searches fetch them from Milvus Lite "
                        "until the copy is tried again, at the indexer's first catch-up after %.0f s",
                        exc,
                        wait,
                    )
                return
            self._copy_retry_wait = _COPY_RETRY_FIRST_S
            if self._vectors_here():  # not when the index was too large to copy (copy_vectors said so)
                log.info("copied %d vectors of the index into the hub in %.1f s", rows, time.monotonic() - started)

        with self._lock:
            if self._copying is not None and self._copying.is_alive():
                return
            self._copying = threading.Thread(target=run, name="vector-copy", daemon=True)
            self._copying.start()

    @property
    def vectors_copied(self) -> bool:
        """Whether dense searches now take their candidates' vectors from the hub's copy (Lite only)."""
        return self._vectors_here()

    def _vectors_here(self) -> bool:
        # A copy that may hold nothing (MEMHUB_LITE_VECTOR_COPY_MB=0) is never relied on, even over an empty index.
        return self._copies_whole and self._copies.capacity > 0 and not self._copies.pushed_out

    def _copies_changed(self) -> None:
        # The collection served changed (switched or recreated): its rows may differ, so the copy starts again.
        with self._lock:
            self._copies_generation += 1
            self._copies_whole = False
        self._copies.clear()

    def _keep_vectors(self, rows: Sequence[IndexedMemory]) -> None:
        if not (self.backend.coded_dense and rows):
            return
        was_here = self._vectors_here()
        # As the rows hold them: made unit length (rows.check_vector), then float16.
        vectors = np.vstack([check_vector(m.vector, self._dimension, f"memory {m.id!r}") for m in rows])
        self._copies.put([m.id for m in rows], vectors)
        if was_here and self._copies.pushed_out:
            log.warning(
                "the hub's copy of the index's vectors is full (%d rows, MEMHUB_LITE_VECTOR_COPY_MB): dense searches ask "
                "Milvus Lite for their candidates' vectors from now on, which costs it more CPU; raise the setting to keep them",
                self._copies.capacity,
            )

    def _sent(self, found: raw_search.Found) -> tuple[list[str], np.ndarray]:
        ids, halves = dense_search.sent_vectors(found, self._dimension)
        self._copies.put(ids, halves)
        return ids, halves

    def _copied(self, found: raw_search.Found) -> tuple[list[str], np.ndarray]:
        ids = list(found.ids)
        halves, missing = self._copies.rows(ids)
        if not missing:
            return ids, halves
        # Rows another process wrote (or this copy has not seen): read from Lite, then kept.
        fetched = self.vectors([ids[i] for i in missing])
        if fetched:
            self._copies.put(list(fetched), np.vstack(list(fetched.values())))
        gone = set()
        for i in missing:
            vector = fetched.get(ids[i])
            if vector is None:
                gone.add(i)  # deleted since the search: not a candidate any more
            else:
                halves[i] = vector
        if gone:
            keep = [i for i in range(len(ids)) if i not in gone]
            return [ids[i] for i in keep], halves[keep]
        return ids, halves

    @property
    def keyword_search_available(self) -> bool:
        """Whether ``search_keyword`` works here: Milvus before 2.5 has no BM25 (the hub's keywords then come from
        Postgres full-text search, memhub/search/channels.py)."""
        return self.backend.bm25

    def search_keyword(self, text: str, flt: IndexFilter, limit: int) -> list[tuple[str, float]]:
        """BM25 matches for ``text``, best first: ``[(id, score)]`` with higher = better.

        Empty or whitespace-only text returns no hits (and so does text made
        only of stop words).
        """
        if not text or not text.strip():
            return []
        if not self.backend.bm25:
            raise IndexBackendError(
                f"the Milvus at {self.uri} has no BM25 (Milvus {self.backend.version[0]}.{self.backend.version[1]}); "
                "keyword search is Postgres full-text search there"
            )
        with self._span("search_keyword", _search_attributes(flt, limit)) as span:
            hits = self._keyword_hits(text, flt, limit, span)
            span.set_attribute("memhub.milvus.hits", len(hits))
        return hits

    def _keyword_hits(self, text: str, flt: IndexFilter, limit: int, span: Any) -> list[tuple[str, float]]:
        _check_limit(limit)
        for attempt in range(_BM25_RACE_RETRIES + 1):
            try:
                # Lite: the hits' float16 copies come along (a few KB), kept for the similarities relevance asks
                # next (``similarities``); fetching them afterwards was an `id in [...]` query scanning the rows.
                # Not when the hub's copy holds every row's.
                asked = self.backend.coded_dense and not self._vectors_here()
                output = [schema.DENSE_F16] if asked else []
                answer = self._search_many([text], schema.SPARSE, flt, limit, "keyword search", None, output)[0]
                if asked and answer.ids:
                    self._copies.put(answer.ids, dense_codes.unpack_halves(answer.fields[schema.DENSE_F16], self._dimension))
                return list(zip(answer.ids, answer.scores, strict=True))
            except IndexBackendError as exc:
                # Milvus Lite cannot weigh BM25 terms before any row was ever written (its average
                # document length is 0, "Invalid sparse row: NaN or Inf value"): nothing to find.
                if "NaN or Inf" in str(exc) and self.count() == 0:
                    return []
                # Lite 2.5.1 can weigh a query term below zero while rows are written and sealed beside
                # the search ("Invalid sparse row: negative value"; seen under load in
                # test_concurrent_searches_while_upserting): the next try sees consistent statistics.
                if "Invalid sparse row: negative value" not in str(exc) or attempt == _BM25_RACE_RETRIES:
                    raise
                span.add_event("retry", {"memhub.milvus.reason": "bm25 statistics changing"})
                time.sleep(_BM25_RACE_PAUSE_S)
        raise AssertionError("unreachable: the last attempt returns or raises")

    # -- internals ----------------------------------------------------------------

    def _search_many(
        self,
        data: list[Any],
        field: str,
        flt: IndexFilter,
        limit: int,
        what: str,
        search_params: dict[str, Any] | None = None,
        output_fields: list[str] | None = None,
    ) -> list[raw_search.Found]:
        """Milvus's hits (ids, scores and the ``output_fields``), one ``Found`` per query in ``data``."""
        expr = build_filter(flt, tags_as_array=self.backend.tags_as_array, namespace_keys=self.backend.namespace_keys)
        with self._gate.search():
            return self._healing(
                what,
                lambda: raw_search.search(
                    self._client,
                    self._collection,
                    data=data,
                    anns_field=field,
                    expr=expr,
                    limit=limit,
                    # Keys only (and Lite's float16 copies to score): the rest is read from Postgres.
                    output_fields=output_fields or [],
                    search_params=search_params,
                    consistency_level=self._consistency_level,
                    timeout=self._search_timeout,
                ),
            )


def _chunks(contents: Sequence[str]) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of consecutive rows, at most _INSERT_BATCH of them and about _INSERT_BYTES of content each
    (UTF-8 takes at most 4 bytes a character; the fixed-size fields add ~1.2 KB a row at 384 dimensions)."""
    start, size = 0, 0
    for i, text in enumerate(contents):
        row = 4 * len(text) + 2048
        if i > start and (i - start >= _INSERT_BATCH or size + row > _INSERT_BYTES):
            yield start, i
            start, size = i, 0
        size += row
    if start < len(contents):
        yield start, len(contents)


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")


def _search_attributes(flt: IndexFilter, limit: int) -> dict[str, Any]:
    return {"memhub.milvus.limit": limit, "memhub.milvus.namespaces": len(flt.namespaces)}
