"""MilvusConnection: one client to Milvus, and how every call through it is made (traced, timed, translated, healed).

Works against Milvus Lite 2.5 (a data file ``<dir>/<name>.db`` served by a
child process this connection supervises, or a shared ``memhub index-server``
over TCP) and Milvus 2.5+ servers. Where they differ, ``backend.Backend``
decides.

Healing: a call that fails because the embedded server died restarts it;
a search that finds the collection released loads it and tries once more;
``MilvusIndex.probe()`` (run by the hub's health monitor) does both in the
background, so the index recovers from a Milvus restart without a hub restart.

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
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

from opentelemetry import trace
from pymilvus import MilvusClient

from memhub import grpc_keepalive, logs, telemetry
from memhub.index import backend as backends
from memhub.index import lite_server
from memhub.index.errors import IndexBackendError, IndexUnavailable
from memhub.index.failures import is_embedded, is_not_loaded, redact, translated
from memhub.metrics import record

logs.quiet_pymilvus()  # importing pymilvus re-installed its own log handler and level

log = logging.getLogger(__name__)
T = TypeVar("T")

_tracer = telemetry.tracer(__name__)


LOAD_TIMEOUT_S = 1800.0
"""Longest a collection load may take (at start, after a restart of the engine, a reindex's switch): Milvus Lite
reads every row back, and 85k-100k memories took over 10 s, the per-call timeout, on a busy 2-core machine, so
the hub refused to start; 1M memories took over 300 s there (load average ~9), so a hub holding them could not
start at all."""


class MilvusConnection:
    """The client, the embedded server behind it (if any), the backend it is, and the discipline of every call."""

    def __init__(
        self,
        uri: str,
        *,
        token: str | None,
        collection: str,
        db_name: str | None,
        timeout_s: float,
        server_dense: backends.DenseIndex,
        lite_candidates: int,
    ) -> None:
        """Connect (starting the embedded server for a ``.db`` path).

        Raises:
            IndexUnavailable: the URI is malformed, the server is unreachable,
                or the Milvus Lite data file is locked by another process.
        """
        self._uri = uri
        self._collection = collection
        self._timeout = timeout_s
        self._lock = threading.Lock()  # guards _closed here, and the subclasses' _pending and _dense
        self._recover_lock = threading.Lock()  # one reload/restart at a time
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
                    backends.Backend(lite=True, lite_candidates=lite_candidates)
                    if self._server
                    else backends.detect(self._client.get_server_version, server_dense, lite_candidates)
                )
        except BaseException:
            if self._server is not None:
                lite_server.release(self._server)
            raise
        self.lite_file: Path | None = self._server.db_file if self._server is not None else None
        """The Milvus Lite data file behind this connection, read back by the durability check: the embedded
        engine's, or the file a `memhub index-server` (or `memhub serve --processes`) serves, when named
        (MEMHUB_MILVUS_LITE_FILE); None for a Milvus server."""

    @property
    def uri(self) -> str:
        """The configured URI, without credentials."""
        return redact(self._uri)

    @property
    def collection(self) -> str:
        """The Milvus collection searched and written now (``memhub reindex`` may switch it; memhub/core/index_pointer.py)."""
        return self._collection

    def close(self) -> None:
        """Close the client and stop an embedded server nobody else uses. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._client.close()
        if self._server is not None:
            lite_server.release(self._server)

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

    def _load(self, name: str | None = None) -> None:
        # Loading reads every row back (85,000 LongMemEval turns took over 10 s in Lite on a loaded machine, and the
        # hub then refused to start): a load gets at least LOAD_TIMEOUT_S, other calls keep the configured timeout.
        with self._call("load_collection"):
            self._client.load_collection(name or self._collection, timeout=max(self._timeout, LOAD_TIMEOUT_S))
