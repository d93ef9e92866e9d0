"""MilvusIndex: the derived retrieval index (dense + BM25) over one Milvus collection.

Postgres is the source of truth; this collection can always be rebuilt from
it (``memhub reindex``). Hits are ids and scores only: the caller hydrates
and re-checks them in Postgres.

Works against milvus-lite (``<dir>.db`` in-process, or a ``milvus-lite
server`` over http) and Milvus 2.5+. Where the two differ, the difference is
handled here (see ``_lite`` and the measurements in the comments).

Thread safety: one ``MilvusClient`` (a gRPC channel, safe for concurrent
calls) is shared by every thread. Measured with 8 search threads plus one
upserting thread on milvus-lite, without errors; the only state of our own
(the pending-write counter) sits behind a lock.

Tracing: searches, upserts, deletes and flushes each make a CLIENT span
("milvus.<operation>") with db.system=milvus, the collection and row/hit
counts; never the query text, vectors or filter values.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from opentelemetry import trace
from pymilvus import MilvusClient

from hub import telemetry
from hub.index import embedded, schema
from hub.index.errors import IndexBackendError, IndexModelMismatch, IndexUnavailable
from hub.index.failures import redact, translated
from hub.index.filters import build_filter, quote
from hub.index.records import IndexedMemory, IndexFilter
from hub.index.rows import check_vector, to_row

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
# Rows per upsert call: bounds a request at ~256 x (65 KB text + 1.5 KB vector),
# well under Milvus's default 64 MB gRPC message limit.
_UPSERT_BATCH = 256
# Ids per delete expression (~40 KB of filter text).
_DELETE_BATCH = 1000

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
        dense_index_type: str | None = None,
        consistency_level: str = "Strong",
        lite_flush_rows: int = 256,
        timeout_s: float = 10.0,
    ) -> None:
        """Connect to Milvus; nothing is created until ``ensure_collection``.

        Args:
            uri: ``<dir>.db`` for embedded milvus-lite, or ``http(s)://host:port``.
            token: Milvus token (``user:password`` or an API key); never logged.
            collection: collection name.
            model_id: embedding model id recorded with (and checked against) the collection.
            dimension: embedding dimension, likewise.
            db_name: Milvus database; None uses the server default.
            analyzer: BM25 ``analyzer_params`` for new collections; default
                ``schema.DEFAULT_ANALYZER`` (English: standard tokenizer,
                lowercase, stemmer, stop words).
            dense_index_type: dense index for new collections. None picks FLAT
                on milvus-lite (exact; its filtered HNSW lost recall: 0.80
                recall@10 when 18 of 10k rows pass the filter, while FLAT was
                also faster under filters) and AUTOINDEX on a real server.
            consistency_level: used by every search (and as the default of new
                collections). Strong, because a write that waited for
                `wait_indexed` promises read-your-writes, also when another
                replica did the upsert; Milvus's default, Bounded, may hide a
                fresh upsert for seconds on a real server (and, rarely, on
                Milvus Lite too: a test saw a BM25 search miss a row just upserted).
            lite_flush_rows: on milvus-lite, flush after this many unflushed
                writes. Unflushed rows are searched by brute force with
                row-by-row Python filtering (at 10k rows: dense 390-610 ms and
                BM25 0.9-1.4 s before a flush, 10-20 ms after); every 100
                unflushed rows add ~6 ms (dense) to ~16 ms (BM25 + tag filter)
                per search, while a small flush costs ~100 ms of the writer's
                time. Ignored on a real server, which searches growing
                segments natively.
            timeout_s: per-call timeout, so a hung server fails a request
                instead of holding its thread.

        Raises:
            IndexUnavailable: the URI is malformed, the server is unreachable,
                or the milvus-lite directory is locked by another process.
        """
        if dimension <= 0:
            raise ValueError(f"dimension must be positive, got {dimension}")
        if not model_id:
            raise ValueError("model_id must be non-empty")
        self._uri = uri
        self._collection = collection
        self._model_id = model_id
        self._dimension = dimension
        self._analyzer = analyzer if analyzer is not None else schema.DEFAULT_ANALYZER
        self._consistency_level = consistency_level
        self._flush_rows = max(1, lite_flush_rows)
        self._timeout = timeout_s
        self._lock = threading.Lock()  # guards _pending, _closing and _closed
        self._flush_lock = threading.Lock()  # one flush at a time
        self._pending = 0
        self._closing = False
        self._closed = False
        kwargs: dict[str, Any] = {"timeout": timeout_s}
        if token:
            kwargs["token"] = token
        if db_name:
            kwargs["db_name"] = db_name
        self._embedded_key = embedded.acquire(uri)
        try:
            with self._call("connect"):
                self._client = MilvusClient(uri, **kwargs)
                # milvus-lite answers "milvus_lite-<version>" whether embedded or served over http.
                self._lite = str(self._client.get_server_version()).startswith("milvus_lite")
        except BaseException:
            embedded.release(self._embedded_key)
            raise
        self._dense_index_type = dense_index_type or ("FLAT" if self._lite else "AUTOINDEX")

    # -- lifecycle ----------------------------------------------------------------

    def ensure_collection(self) -> None:
        """Create the collection if missing; otherwise check what it records, then load it.

        Raises:
            IndexModelMismatch: the collection was built for another model,
                dimension, BM25 analyzer or index layout (or by something other than memhub).
            IndexUnavailable: Milvus cannot be reached.
        """
        if not self._has_collection():
            try:
                self._create()
            except IndexBackendError:
                # Another hub replica may have created it between our check and create.
                if not self._has_collection():
                    raise
        self._verify()
        self._ensure_indexes()
        self._load()

    def recreate(self) -> None:
        """Drop the collection (if any) and create it empty for this model; used by ``memhub reindex``."""
        with self._call("drop_collection"):
            if self._client.has_collection(self._collection, timeout=self._timeout):
                self._client.drop_collection(self._collection, timeout=self._timeout)
        with self._lock:
            self._pending = 0
        self._create()
        self._load()

    def close(self) -> None:
        """Flush pending milvus-lite writes, close the client and free an embedded directory. Idempotent."""
        with self._lock:
            if self._closing:
                return
            self._closing = True  # a second, concurrent close returns here
            pending = self._pending
        if self._lite and pending:
            try:
                # A reopened milvus-lite replays unflushed writes into its slow
                # in-memory table; flushing now keeps the next start fast.
                self.flush()
            except IndexBackendError as exc:
                log.warning("flush on close failed: %s", exc)
        with self._lock:
            self._closed = True
        self._client.close()
        # The last index on an embedded directory stops its in-process server,
        # so another process (e.g. `memhub reindex`) can open the directory.
        embedded.release(self._embedded_key)

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
                with self._call("upsert"):
                    self._client.upsert(self._collection, data[start : start + _UPSERT_BATCH], timeout=self._timeout)
            self._after_write(len(data))

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
                with self._call("delete"):
                    self._client.delete(self._collection, filter=expr, timeout=self._timeout)
            self._after_write(len(unique))

    def flush(self) -> None:
        """Seal pending writes into segments (on milvus-lite this is what makes them fast to search)."""
        with self._span("flush", {}) as span, self._flush_lock:
            with self._lock:
                flushed = self._pending
            span.set_attribute("memhub.milvus.rows", flushed)
            with self._call("flush"):
                self._client.flush(self._collection, timeout=self._timeout)
            with self._lock:
                self._pending = max(0, self._pending - flushed)

    # -- reads --------------------------------------------------------------------

    def search_dense(self, vector: Sequence[float], flt: IndexFilter, limit: int) -> list[tuple[str, float]]:
        """Nearest memories by cosine similarity, best first: ``[(id, similarity)]``."""
        query = check_vector(vector, self._dimension, "query")
        with self._span("search_dense", _search_attributes(flt, limit)) as span:
            hits = self._search([query], schema.DENSE, flt, limit, "dense search")
            span.set_attribute("memhub.milvus.hits", len(hits))
        return hits

    def search_keyword(self, text: str, flt: IndexFilter, limit: int) -> list[tuple[str, float]]:
        """BM25 matches for ``text``, best first: ``[(id, score)]`` with higher = better.

        Empty or whitespace-only text returns no hits (and so does text made
        only of stop words).
        """
        if not text or not text.strip():
            return []
        with self._span("search_keyword", _search_attributes(flt, limit)) as span:
            hits = self._search([text], schema.SPARSE, flt, limit, "keyword search")
            span.set_attribute("memhub.milvus.hits", len(hits))
        return hits

    def count(self) -> int:
        """Rows currently in the collection."""
        with self._call("count"):
            res = self._client.query(self._collection, filter="", output_fields=["count(*)"], timeout=self._timeout)
        return int(res[0]["count(*)"]) if res else 0

    def recorded_model(self) -> tuple[str, int] | None:
        """(model id, dimension) the collection records, or None if it is missing or records none."""
        if not self._has_collection():
            return None
        return _recorded(self._properties())

    # -- internals ----------------------------------------------------------------

    @contextmanager
    def _span(self, operation: str, attributes: dict[str, Any]) -> Iterator[trace.Span]:
        """A CLIENT span for one index operation; on failure it records the error's type, not its message."""
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
            try:
                yield span
            except BaseException as exc:
                span.set_attribute("error.type", type(exc).__name__)
                span.set_status(trace.StatusCode.ERROR, type(exc).__name__)
                raise

    def _call(self, what: str) -> AbstractContextManager[None]:
        """Translate failures of the pymilvus call(s) in the with-block; refuse work once closed."""
        if self._closed:
            raise IndexUnavailable(f"the index for {redact(self._uri)} is closed")
        return translated(self._uri, f"{what} on collection {self._collection!r}")

    def _search(self, data: list[Any], field: str, flt: IndexFilter, limit: int, what: str) -> list[tuple[str, float]]:
        if not 1 <= limit <= MAX_LIMIT:
            raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {limit}")
        expr = build_filter(flt)
        with self._call(what):
            res = self._client.search(
                self._collection,
                data=data,
                anns_field=field,
                filter=expr,
                limit=limit,
                # Ask for the key only: milvus-lite returns every field,
                # vectors included, when output_fields is empty.
                output_fields=[schema.ID],
                consistency_level=self._consistency_level,
                timeout=self._timeout,
            )
        hits = res[0] if res else []
        if field == schema.SPARSE:
            # milvus-lite reports BM25 scores negated (its order is still
            # right); abs() gives "higher is better" on both backends.
            return [(str(h["id"]), abs(float(h["distance"]))) for h in hits]
        return [(str(h["id"]), float(h["distance"])) for h in hits]  # cosine similarity

    def _after_write(self, n: int) -> None:
        if not self._lite:
            return
        with self._lock:
            self._pending += n
            due = self._pending >= self._flush_rows
        if due:
            self.flush()

    def _has_collection(self) -> bool:
        with self._call("has_collection"):
            return bool(self._client.has_collection(self._collection, timeout=self._timeout))

    def _properties(self) -> dict[str, str]:
        with self._call("describe_collection"):
            desc = self._client.describe_collection(self._collection, timeout=self._timeout)
        return {str(k): str(v) for k, v in (desc.get("properties") or {}).items()}

    def _create(self) -> None:
        with self._call("create_collection"):
            self._client.create_collection(
                self._collection,
                schema=schema.build_schema(self._model_id, self._dimension, self._analyzer),
                consistency_level=self._consistency_level,
                properties=schema.properties(self._model_id, self._dimension, self._analyzer),
                timeout=self._timeout,
            )
        self._create_indexes({schema.DENSE, schema.SPARSE})
        log.info(
            "created Milvus collection %r at %s (model %s, dimension %d, dense index %s)",
            self._collection,
            redact(self._uri),
            self._model_id,
            self._dimension,
            self._dense_index_type,
        )

    def _ensure_indexes(self) -> None:
        """Add indexes a half-finished create left out (created collection, then failed)."""
        with self._call("list_indexes"):
            present = {
                field
                for field in (schema.DENSE, schema.SPARSE)
                if self._client.list_indexes(self._collection, field_name=field, timeout=self._timeout)
            }
        missing = {schema.DENSE, schema.SPARSE} - present
        if missing:
            log.warning("collection %r lacks indexes on %s; creating them", self._collection, sorted(missing))
            self._create_indexes(missing)

    def _create_indexes(self, fields: set[str]) -> None:
        params = schema.build_index_params(self._dense_index_type, fields)
        with self._call("create_index"):
            # pymilvus polls index state with a 0.5 s sleep before the first
            # check, per index (1 s per new collection). milvus-lite builds
            # index specs synchronously, so skip the wait there.
            self._client.create_index(self._collection, params, timeout=self._timeout, sync=not self._lite)

    def _load(self) -> None:
        with self._call("load_collection"):
            self._client.load_collection(self._collection, timeout=self._timeout)
        if self._lite:
            # milvus-lite replays unflushed writes of an earlier run into its
            # in-memory table, where every search scans them in Python.
            self.flush()

    def _verify(self) -> None:
        props = self._properties()
        expected = (self._model_id, self._dimension)
        recorded = _recorded(props)
        where = f"Milvus collection {self._collection!r} at {redact(self._uri)}"
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
        layout = props.get(schema.PROP_LAYOUT)
        if layout != schema.LAYOUT_VERSION:
            raise IndexModelMismatch(
                f"{where} has index layout {layout!r}; this hub expects layout {schema.LAYOUT_VERSION!r}. {fix}",
                recorded=recorded,
                expected=expected,
            )
        analyzer = props.get(schema.PROP_ANALYZER)
        if analyzer != schema.canonical_analyzer(self._analyzer):
            raise IndexModelMismatch(
                f"{where} was built with BM25 analyzer {analyzer}; this hub is configured with "
                f"{schema.canonical_analyzer(self._analyzer)}. Keyword scores would mix both. {fix}",
                recorded=recorded,
                expected=expected,
            )


def _search_attributes(flt: IndexFilter, limit: int) -> dict[str, Any]:
    return {"memhub.milvus.limit": limit, "memhub.milvus.namespaces": len(flt.namespaces)}


def _recorded(props: dict[str, str]) -> tuple[str, int] | None:
    model, dim = props.get(schema.PROP_MODEL), props.get(schema.PROP_DIMENSION)
    if not model or not dim:
        return None
    try:
        return model, int(dim)
    except ValueError:
        return None
