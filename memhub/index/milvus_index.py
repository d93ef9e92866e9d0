"""MilvusIndex: the derived retrieval index (dense + BM25) over one Milvus collection.

Postgres is the source of truth; this collection can always be rebuilt from
it (``memhub reindex``, or by itself when the collection is found missing).
Hits are ids and scores only: the caller hydrates and re-checks them in
Postgres.

Works against Milvus Lite 2.5 (a data file ``<dir>/<name>.db`` served by a
child process this index supervises, or a shared ``memhub index-server``
over TCP) and Milvus 2.5+ servers. Where they differ, ``backend.Backend``
decides.

Healing: a call that fails because the embedded server died restarts it;
a search that finds the collection released loads it and tries once more;
``probe()`` (run by the hub's health monitor) does both in the background,
so the index recovers from a Milvus restart without a hub restart.

Thread safety: one ``MilvusClient`` (a gRPC channel, safe for concurrent
calls) is shared by every thread; state of our own sits behind locks.

Tracing: searches, upserts, deletes and flushes each make a CLIENT span
("milvus.<operation>") with db.system=milvus, the collection and row/hit
counts; never the query text, vectors or filter values. The same operations
are timed for ``memhub_milvus_call_duration_seconds`` (memhub/metrics/).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from opentelemetry import trace
from pymilvus import MilvusClient
from pymilvus.client.types import LoadState

from memhub import grpc_keepalive, logs, telemetry
from memhub.index import backend as backends
from memhub.index import lite_durability, lite_server, schema
from memhub.index.errors import IndexBackendError, IndexCollectionMissing, IndexModelMismatch, IndexUnavailable
from memhub.index.failures import is_embedded, is_not_loaded, redact, translated
from memhub.index.filters import build_filter, quote
from memhub.index.records import IndexedMemory, IndexFilter
from memhub.index.rows import check_vector, to_row
from memhub.metrics import record

logs.quiet_pymilvus()  # importing pymilvus re-installed its own log handler and level

__all__ = [
    "IndexBackendError",
    "IndexFilter",
    "IndexModelMismatch",
    "IndexUnavailable",
    "IndexedMemory",
    "MilvusIndex",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

# Milvus's maximum topk.
MAX_LIMIT = 16384
# Rows per upsert call: bounds a request at ~512 x (65 KB text + 1.5 KB vector)
# worst case, under Milvus's default 64 MB gRPC message limit; typical
# memories are a few hundred bytes, so this is one call per indexer batch.
_UPSERT_BATCH = 512
# Ids per delete expression (~40 KB of filter text).
_DELETE_BATCH = 1000
# Ids per page when listing them (a few hundred KB per reply).
_ID_PAGE = 8192

_tracer = telemetry.tracer(__name__)


class MilvusIndex:
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
        lite_approximate_rows: int | None = None,
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

        Raises:
            IndexUnavailable: the URI is malformed, the server is unreachable,
                or the Milvus Lite data file is locked by another process.
        """
        if dimension <= 0:
            raise ValueError(f"dimension must be positive, got {dimension}")
        if not model_id:
            raise ValueError("model_id must be non-empty")
        self._uri = uri
        self._collection = collection
        self._base = collection
        self._model_id = model_id
        self._dimension = dimension
        self._analyzer = analyzer if analyzer is not None else schema.DEFAULT_ANALYZER
        self._consistency_level = consistency_level
        self._timeout = timeout_s
        self._search_timeout = search_timeout_s
        self._lock = threading.Lock()  # guards _pending, _closed and _dense
        self._flush_lock = threading.Lock()  # one flush at a time
        self._recover_lock = threading.Lock()  # one reload/restart at a time
        self._pending = 0
        self._closed = False
        self._server: lite_server.LiteServer | None = None
        # pymilvus's own keepalive (a ping every 10 s, idle or not) is refused by Milvus Lite with GOAWAY
        # too_many_pings after ~40 s of quiet; these settings suit Lite and Milvus servers (memhub/grpc_keepalive.py).
        kwargs: dict[str, Any] = {"timeout": timeout_s, "grpc_options": grpc_keepalive.milvus_client_options()}
        if token:
            kwargs["token"] = token
        if db_name:
            kwargs["db_name"] = db_name
        connect_uri = uri
        if is_embedded(uri):
            self._server = lite_server.acquire(Path(uri))
            connect_uri = self._server.uri
        try:
            with self._call("connect"):
                self._client = MilvusClient(connect_uri, **kwargs)
                self.backend = (
                    backends.Backend(lite=True, lite_approximate_rows=lite_approximate_rows)
                    if self._server
                    else backends.detect(self._client.get_server_version, lite_approximate_rows)
                )
        except BaseException:
            if self._server is not None:
                lite_server.release(self._server)
            raise
        self._dense = self.backend.dense_index(0)

    @property
    def uri(self) -> str:
        """The configured URI, without credentials."""
        return redact(self._uri)

    @property
    def dense_index_type(self) -> str:
        return self._dense.index_type

    @property
    def base_name(self) -> str:
        """The configured collection name; ``collection`` is the one serving it (the same until a reindex switches)."""
        return self._base

    @property
    def collection(self) -> str:
        """The Milvus collection searched and written now (``memhub reindex`` may switch it; memhub/core/index_pointer.py)."""
        return self._collection

    def use_collection(self, name: str) -> None:
        """Serve from collection ``name`` from now on: checked (model, layout) and loaded first, then switched in one
        assignment, so a search runs wholly on the old collection or wholly on the new one.

        Raises:
            IndexCollectionMissing: there is no such collection.
            IndexModelMismatch: it was built for another model, dimension, analyzer or layout.
        """
        if name == self._collection:
            return
        if not self._has_collection(name):
            raise IndexCollectionMissing(f"collection {name!r} does not exist at {self.uri}")
        self._verify(name)
        self._load(name)
        dense = self._dense_of(name)
        with self._lock:
            self._collection = name
            if dense is not None:
                self._dense = dense
        log.info("the retrieval index now serves from Milvus collection %r", name)

    def drop_collection(self, name: str) -> None:
        """Drop another collection of this Milvus (the one a reindex replaced); never the one in use."""
        if name == self._collection:
            raise ValueError(f"collection {name!r} is in use")
        with self._call(f"drop_collection {name!r}"):
            if self._client.has_collection(name, timeout=self._timeout):
                self._client.drop_collection(name, timeout=self._timeout)

    # -- lifecycle ----------------------------------------------------------------

    def ensure_collection(self, expected_rows: int = 0) -> bool:
        """Create the collection if missing (True), else check what it records; then load it.

        ``expected_rows``: how many memories the new collection will hold
        soon (the servable ones in Postgres), to pick its dense index.

        Raises:
            IndexModelMismatch: the collection was built for another model,
                dimension, BM25 analyzer or index layout (or by something other than memhub).
            IndexUnavailable: Milvus cannot be reached.
        """
        created = False
        if not self._has_collection():
            try:
                self._create(expected_rows)
                created = True
            except IndexBackendError:
                # Another hub replica may have created it between our check and create.
                if not self._has_collection():
                    raise
        self._verify()
        self._ensure_indexes()
        self._load()
        return created

    def recreate(self, expected_rows: int = 0) -> None:
        """Drop the collection (if any) and create it empty for this model; used by ``memhub reindex``."""
        with self._call("drop_collection"):
            if self._client.has_collection(self._collection, timeout=self._timeout):
                self._client.drop_collection(self._collection, timeout=self._timeout)
        with self._lock:
            self._pending = 0
        self._create(expected_rows)
        self._load()

    def probe(self) -> None:
        """Check that the index answers, healing what can be healed; raise IndexUnavailable if it cannot.

        Restarts a dead embedded server and loads a released collection. A
        missing collection raises IndexCollectionMissing (the hub then rebuilds it).
        """
        self._restart_dead_server()
        with self._call("get_load_state"):
            state = self._client.get_load_state(self._collection, timeout=self._timeout)
        if state.get("state") == LoadState.NotExist:
            raise IndexCollectionMissing(f"collection {self._collection!r} does not exist at {self.uri}")
        if state.get("state") != LoadState.Loaded:
            log.warning("Milvus collection %r is %s; loading it", self._collection, state.get("state"))
            self._load()

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
        with self._lock:
            self._closed = True
        self._client.close()
        if self._server is not None:
            lite_server.release(self._server)

    # -- writes -------------------------------------------------------------------

    def upsert(self, rows: Sequence[IndexedMemory]) -> None:
        """Insert or replace memories by id. Raises ValueError (naming the memory) for invalid rows."""
        if not rows:
            return
        # Last write wins within a batch: Milvus may refuse duplicate keys in one upsert.
        by_id = {m.id: to_row(m, self._dimension) for m in rows}
        data = list(by_id.values())
        with self._span("upsert", {"memhub.milvus.rows": len(data)}):
            for start in range(0, len(data), _UPSERT_BATCH):
                chunk = data[start : start + _UPSERT_BATCH]
                self._healing("upsert", lambda c=chunk: self._client.upsert(self._collection, c, timeout=self._timeout))
            with self._lock:
                self._pending += len(data)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove memories by id; unknown ids are ignored."""
        unique = sorted(set(ids))
        if not unique:
            return
        with self._span("delete", {"memhub.milvus.rows": len(unique)}):
            for start in range(0, len(unique), _DELETE_BATCH):
                # Not delete(ids=...): pymilvus wraps string keys in quotes without
                # escaping them, so an id containing ' could widen the delete.
                expr = f"{schema.ID} in [" + ", ".join(quote(i) for i in unique[start : start + _DELETE_BATCH]) + "]"
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
        """Called by the indexer when the outbox is empty: flush if this backend wants it, and grow the dense index."""
        with self._lock:
            pending = self._pending
        if not pending:
            return
        if self.backend.flush_after_writes:
            self.flush()
        self.fit_dense_index()

    def fit_dense_index(self) -> bool:
        """On Lite, rebuild the dense index if its size (or the settings) call for another one; True if it did.
        At start: an index built approximate by an earlier setting goes back to exact, and vice versa."""
        return self.backend.lite and self.upgrade_dense_index(self.count())

    def upgrade_dense_index(self, rows: int) -> bool:
        """Rebuild the dense index if the backend wants another one at ``rows`` rows; True if it did.

        Milvus allows one index per field and changes it only on a released
        collection, so searches fail for the seconds the rebuild takes (the
        hub answers them from Postgres, marked degraded). It happens once,
        when an embedded index first grows past the threshold.
        """
        wanted = self.backend.dense_index(rows)
        if wanted.index_type == self._dense.index_type:
            return False
        log.info(
            "rebuilding the dense index of %r as %s (%d rows; was %s)",
            self._collection,
            wanted.index_type,
            rows,
            self._dense.index_type,
        )
        with self._span("rebuild_dense_index", {"memhub.milvus.rows": rows}), self._recover_lock:
            with self._call("release_collection"):
                self._client.release_collection(self._collection, timeout=self._timeout)
            try:
                with self._call("drop_index"):
                    self._client.drop_index(self._collection, schema.DENSE, timeout=self._timeout)
                self._create_indexes({schema.DENSE}, wanted)
            finally:
                self._load()
        with self._lock:
            self._dense = wanted
        return True

    # -- reads --------------------------------------------------------------------

    def search_dense(self, vector: Sequence[float], flt: IndexFilter, limit: int) -> list[tuple[str, float]]:
        """Nearest memories by cosine similarity (inner product of unit vectors), best first: ``[(id, similarity)]``."""
        query = check_vector(vector, self._dimension, "query")
        with self._span("search_dense", _search_attributes(flt, limit)) as span:
            hits = self._search([query], schema.DENSE, flt, limit, "dense search")
            span.set_attribute("memhub.milvus.hits", len(hits))
        return hits

    def search_dense_many(
        self, vectors: Sequence[Sequence[float]], flt: IndexFilter, limit: int
    ) -> list[list[tuple[str, float]]]:
        """`search_dense` for several vectors under one filter, in one call: one result list per vector."""
        queries = [check_vector(v, self._dimension, "query") for v in vectors]
        if not queries:
            return []
        with self._span("search_dense", {**_search_attributes(flt, limit), "memhub.milvus.queries": len(queries)}):
            return self._search_many(queries, schema.DENSE, flt, limit, "dense search")

    def search_keyword(self, text: str, flt: IndexFilter, limit: int) -> list[tuple[str, float]]:
        """BM25 matches for ``text``, best first: ``[(id, score)]`` with higher = better.

        Empty or whitespace-only text returns no hits (and so does text made
        only of stop words).
        """
        if not text or not text.strip():
            return []
        with self._span("search_keyword", _search_attributes(flt, limit)) as span:
            try:
                hits = self._search([text], schema.SPARSE, flt, limit, "keyword search")
            except IndexBackendError as exc:
                # Milvus Lite cannot weigh BM25 terms before any row was ever written (its average
                # document length is 0, "Invalid sparse row: NaN or Inf value"): nothing to find.
                if "NaN or Inf" not in str(exc) or self.count() > 0:
                    raise
                hits = []
            span.set_attribute("memhub.milvus.hits", len(hits))
        return hits

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored dense vectors of those ``ids`` the index holds (to re-upsert a row without embedding it again)."""
        unique = sorted(set(ids))
        out: dict[str, np.ndarray] = {}
        with self._span("get_vectors", {"memhub.milvus.rows": len(unique)}):
            for start in range(0, len(unique), _DELETE_BATCH):
                expr = f"{schema.ID} in [" + ", ".join(quote(i) for i in unique[start : start + _DELETE_BATCH]) + "]"
                rows = self._healing(
                    "get vectors",
                    lambda e=expr: self._client.query(
                        self._collection, filter=e, output_fields=[schema.ID, schema.DENSE], timeout=self._timeout
                    ),
                )
                out.update({str(r[schema.ID]): np.asarray(r[schema.DENSE], dtype=np.float32) for r in rows})
        return out

    def count(self) -> int:
        """Rows currently in the collection."""
        res = self._healing(
            "count",
            lambda: self._client.query(self._collection, filter="", output_fields=["count(*)"], timeout=self._timeout),
        )
        return int(res[0]["count(*)"]) if res else 0

    def ids_in_range(self, after: str | None, upto: str | None) -> set[str]:
        """Ids held with ``after < id <= upto`` (None: unbounded on that side), read in pages; for the reconciliation."""
        parts = [f"{schema.ID} > {quote(after)}"] if after is not None else []
        if upto is not None:
            parts.append(f"{schema.ID} <= {quote(upto)}")
        expr = " and ".join(parts)
        out: set[str] = set()
        with self._span("list_ids", {}) as span:
            with self._call("list ids"):
                it = self._client.query_iterator(
                    self._collection, batch_size=_ID_PAGE, filter=expr, output_fields=[schema.ID], timeout=self._timeout
                )
                try:
                    while page := it.next():
                        out.update(str(r[schema.ID]) for r in page)
                finally:
                    it.close()
            span.set_attribute("memhub.milvus.rows", len(out))
        return out

    def unpersisted(self) -> tuple[list[str], int] | None:
        """Embedded Lite only: ids the engine serves but its data file lacks (lost at the next start), and the free
        bytes on the file's disk; None when there is nothing to check or the file cannot tell.

        Counts first (two cheap queries); the id lists are compared only when the counts differ.
        """
        if self._server is None:
            return None
        db_file = self._server.db_file
        before = lite_durability.persisted(db_file, self._collection)
        if before is None:
            return None
        live = self.count()
        if before.rows >= live:
            return [], before.free_bytes
        missing = lite_durability.missing_ids(db_file, self._collection, self.ids_in_range(None, None))
        if missing is None:
            return None
        return missing, lite_durability.free_bytes(db_file)

    def recorded_model(self) -> tuple[str, int] | None:
        """(model id, dimension) the collection records, or None if it is missing or records none."""
        if not self._has_collection():
            return None
        return _recorded(self._record())

    # -- internals ----------------------------------------------------------------

    @contextmanager
    def _span(self, operation: str, attributes: dict[str, Any]) -> Iterator[trace.Span]:
        """A CLIENT span for one index operation, timed for the metrics; on failure it records the error's type, not its
        message."""
        with _tracer.start_as_current_span(
            f"milvus.{operation}",
            kind=trace.SpanKind.CLIENT,
            attributes={
                "db.system": "milvus",
                "db.operation": operation,
                "db.collection.name": self._collection,
                **attributes,
            },
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            started = time.perf_counter()
            try:
                yield span
            except BaseException as exc:
                record.milvus_call(operation, time.perf_counter() - started, ok=False)
                span.set_attribute("error.type", type(exc).__name__)
                span.set_status(trace.StatusCode.ERROR, type(exc).__name__)
                raise
            record.milvus_call(operation, time.perf_counter() - started, ok=True)

    def _call(self, what: str) -> AbstractContextManager[None]:
        """Translate failures of the pymilvus call(s) in the with-block; refuse work once closed."""
        if self._closed:
            raise IndexUnavailable(f"the index for {self.uri} is closed")
        return translated(self._uri, f"{what} on collection {self._collection!r}")

    def _healing(self, what: str, call: Callable[[], T]) -> T:
        """Run ``call``; after a failure healing can fix (dead embedded server, released collection), heal and retry once."""
        try:
            with self._call(what):
                return call()
        except IndexBackendError as exc:
            if not self._heal(exc):
                raise
        # A restarted engine takes a moment before the client's channel reconnects.
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                with self._call(what):
                    return call()
            except IndexUnavailable:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.1)

    def _heal(self, exc: IndexBackendError) -> bool:
        """Try to fix the cause of ``exc``; True if something was fixed and a retry may succeed."""
        if isinstance(exc, IndexUnavailable):
            return self._restart_dead_server()
        if is_not_loaded(exc):
            log.warning("Milvus collection %r is not loaded (the server restarted?); loading it", self._collection)
            self._load()
            return True
        return False

    def _restart_dead_server(self) -> bool:
        if self._server is None:
            return False
        with self._recover_lock:
            return self._server.ensure_running()

    def _search(self, data: list[Any], field: str, flt: IndexFilter, limit: int, what: str) -> list[tuple[str, float]]:
        return self._search_many(data, field, flt, limit, what)[0]

    def _search_many(self, data: list[Any], field: str, flt: IndexFilter, limit: int, what: str) -> list[list[tuple[str, float]]]:
        if not 1 <= limit <= MAX_LIMIT:
            raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
        expr = build_filter(flt)
        params = {"params": self._dense.search_params} if field == schema.DENSE and self._dense.search_params else None
        res = self._healing(
            what,
            lambda: self._client.search(
                self._collection,
                data=data,
                anns_field=field,
                filter=expr,
                limit=limit,
                # No output fields: hits carry their key only; the rest is read from Postgres.
                search_params=params,
                consistency_level=self._consistency_level,
                timeout=self._search_timeout,
            ),
        )
        # Dense: cosine similarity; BM25: score. Both "higher is better". One list per query.
        lists = list(res) if res else []
        lists += [[]] * (len(data) - len(lists))
        return [[(str(h["id"]), float(h["distance"])) for h in hits] for hits in lists]

    def _has_collection(self, name: str | None = None) -> bool:
        with self._call("has_collection"):
            return bool(self._client.has_collection(name or self._collection, timeout=self._timeout))

    def _record(self, name: str | None = None) -> dict[str, str]:
        with self._call("describe_collection"):
            desc = self._client.describe_collection(name or self._collection, timeout=self._timeout)
        return schema.parse_description(str(desc.get("description") or ""))

    def _dense_of(self, name: str) -> backends.DenseIndex | None:
        with self._call("describe_index"):
            info = self._client.describe_index(name, schema.DENSE, timeout=self._timeout) or {}
        found = str(info.get("index_type") or "")
        if found == backends.LITE_IVF.index_type:
            return backends.LITE_IVF
        return backends.DenseIndex(found) if found else None

    def _create(self, expected_rows: int) -> None:
        dense = self.backend.dense_index(expected_rows)
        rec = schema.record(self._model_id, self._dimension, self._analyzer)
        with self._call("create_collection"):
            self._client.create_collection(
                self._collection,
                schema=schema.build_schema(
                    self._dimension, self._analyzer, rec, namespace_partition_key=self.backend.namespace_partition_key
                ),
                consistency_level=self._consistency_level,
                timeout=self._timeout,
            )
        self._create_indexes({schema.DENSE, schema.SPARSE}, dense)
        with self._lock:
            self._dense = dense
        log.info(
            "created Milvus collection %r at %s (model %s, dimension %d, dense index %s, %s)",
            self._collection,
            self.uri,
            self._model_id,
            self._dimension,
            dense.index_type,
            "Milvus Lite" if self.backend.lite else "Milvus server",
        )

    def _ensure_indexes(self) -> None:
        """Add indexes a half-finished create left out (created collection, then failed); learn the dense one."""
        with self._call("list_indexes"):
            present = {
                field
                for field in (schema.DENSE, schema.SPARSE)
                if self._client.list_indexes(self._collection, field_name=field, timeout=self._timeout)
            }
        missing = {schema.DENSE, schema.SPARSE} - present
        if missing:
            log.warning("collection %r lacks indexes on %s; creating them", self._collection, sorted(missing))
            self._create_indexes(missing, self._dense)
        if schema.DENSE in present:
            with self._call("describe_index"):
                info = self._client.describe_index(self._collection, schema.DENSE, timeout=self._timeout) or {}
            found = str(info.get("index_type") or "")
            with self._lock:
                if found == backends.LITE_IVF.index_type:
                    self._dense = backends.LITE_IVF
                elif found:
                    self._dense = backends.DenseIndex(found)

    def _create_indexes(self, fields: set[str], dense: backends.DenseIndex) -> None:
        params = schema.build_index_params(dense.index_type, dense.build_params, fields)
        with self._call("create_index"):
            # pymilvus polls index state with a 0.5 s sleep before the first
            # check, per index; Milvus Lite builds index specs synchronously.
            self._client.create_index(self._collection, params, timeout=self._timeout, sync=not self.backend.lite)

    def _load(self, name: str | None = None) -> None:
        with self._call("load_collection"):
            self._client.load_collection(name or self._collection, timeout=self._timeout)

    def _verify(self, name: str | None = None) -> None:
        rec = self._record(name)
        expected = (self._model_id, self._dimension)
        recorded = _recorded(rec)
        where = f"Milvus collection {name or self._collection!r} at {self.uri}"
        fix = "Run `memhub reindex` to rebuild the index from Postgres with the current settings."
        if recorded is None:
            raise IndexModelMismatch(
                f"{where} records no embedding model (it was not created by memhub, or by an older "
                f"version); this hub runs {self._model_id!r} (dimension {self._dimension}). {fix}",
                recorded=None,
                expected=expected,
            )
        if recorded != expected:
            raise IndexModelMismatch(
                f"{where} was built with embedding model {recorded[0]!r} (dimension {recorded[1]}); "
                f"this hub runs {self._model_id!r} (dimension {self._dimension}). Vectors from "
                f"different models cannot be compared. {fix} Or configure the hub with "
                f"{recorded[0]!r} again.",
                recorded=recorded,
                expected=expected,
            )
        layout = rec.get(schema.RECORD_LAYOUT)
        if layout != schema.LAYOUT_VERSION:
            raise IndexModelMismatch(
                f"{where} has index layout {layout!r}; this hub expects layout {schema.LAYOUT_VERSION!r}. {fix}",
                recorded=recorded,
                expected=expected,
            )
        analyzer = rec.get(schema.RECORD_ANALYZER)
        if analyzer != schema.canonical_analyzer(self._analyzer):
            raise IndexModelMismatch(
                f"{where} was built with BM25 analyzer {analyzer}; this hub is configured with "
                f"{schema.canonical_analyzer(self._analyzer)}. Keyword scores would mix both. {fix}",
                recorded=recorded,
                expected=expected,
            )


def _search_attributes(flt: IndexFilter, limit: int) -> dict[str, Any]:
    return {"memhub.milvus.limit": limit, "memhub.milvus.namespaces": len(flt.namespaces)}


def _recorded(rec: dict[str, str]) -> tuple[str, int] | None:
    model, dim = rec.get(schema.RECORD_MODEL), rec.get(schema.RECORD_DIMENSION)
    if not model or not dim:
        return None
    try:
        return model, int(dim)
    except ValueError:
        return None
