"""The /metrics HTTP endpoint: prometheus_client's WSGI exposition on a small server of its own.

Its own port and thread, apart from the gRPC server and any other HTTP port
of the hub (the web console): nothing is shared but the process. The
exposition is prometheus_client's (text format, OpenMetrics when asked,
gzip when accepted); this module only bounds the server, since the
endpoint has no authentication:
- only GET /metrics answers (404 elsewhere, 405 for other methods);
- at most MAX_CONNECTIONS connections are served at once, at most
  MAX_SCRAPES of them build a scrape at a time (others get 503 with
  Retry-After), and a client that sends nothing for SOCKET_TIMEOUT_S is
  dropped;
- a connection must send its whole request line and headers within
  HEADER_TIMEOUT_S of being accepted, and while it has not, it is the first
  to go: a new connection at the bound closes the oldest one still sending
  its headers. Idle or trickling clients (20 held open by a local user
  stopped every scrape, issue 22) therefore never keep a scraper out; only
  connections already being answered count against the bound for good;
- a scrape reads memory only (memhub/metrics/state.py): no SQL, no index call.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.registry import Collector

from memhub.errors import StartupError
from memhub.metrics import record
from memhub.metrics.instruments import REGISTRY

log = logging.getLogger(__name__)

PATH = "/metrics"
MAX_CONNECTIONS = 16
MAX_SCRAPES = 4
SOCKET_TIMEOUT_S = 10.0
HEADER_TIMEOUT_S = 5.0


class _Quiet(WSGIRequestHandler):
    """No access log on stderr (Prometheus scrapes every few seconds), and a socket timeout against idle clients."""

    timeout = SOCKET_TIMEOUT_S

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass

    def parse_request(self) -> bool:
        parsed = super().parse_request()  # reads the headers
        self.server.answering(self.connection)  # type: ignore[attr-defined]
        return parsed


class _Connections:
    """The connections being served, and since when each one has been sending its request (None: answered)."""

    def __init__(self, bound: int, header_timeout_s: float) -> None:
        self._bound = bound
        self._header_timeout_s = header_timeout_s
        self._lock = threading.Lock()
        self._open: dict[socket.socket, float | None] = {}  # insertion order: oldest first

    def admit(self, conn: socket.socket) -> bool:
        """Count ``conn`` in, closing the oldest connection still sending its headers if at the bound."""
        with self._lock:
            self._drop_slow(time.monotonic())
            if len(self._open) >= self._bound:
                oldest = next((c for c, since in self._open.items() if since is not None), None)
                if oldest is None:
                    return False  # every place is a request being answered: those end on their own
                self._close(oldest)
            self._open[conn] = time.monotonic()
            return True

    def answering(self, conn: socket.socket) -> None:
        with self._lock:
            if conn in self._open:
                self._open[conn] = None

    def done(self, conn: socket.socket) -> None:
        with self._lock:
            self._open.pop(conn, None)

    def sweep(self) -> None:
        with self._lock:
            self._drop_slow(time.monotonic())

    def _drop_slow(self, now: float) -> None:
        for conn in [c for c, since in self._open.items() if since is not None and now - since > self._header_timeout_s]:
            self._close(conn)

    def _close(self, conn: socket.socket) -> None:
        # Its thread, blocked reading, sees the end of the stream and finishes; its place is free from now on.
        del self._open[conn]
        try:
            conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already gone


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True
    header_timeout_s = HEADER_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._connections = _Connections(MAX_CONNECTIONS, self.header_timeout_s)
        super().__init__(*args, **kwargs)

    def process_request(self, request: socket.socket, client_address: Any) -> None:
        if not self._connections.admit(request):
            self.shutdown_request(request)  # over the bound with nothing to evict: close at once, queue no thread
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: socket.socket, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._connections.done(request)

    def answering(self, conn: socket.socket) -> None:
        self._connections.answering(conn)

    def service_actions(self) -> None:
        # serve_forever calls this every poll (half a second): slow senders go even when no one else connects.
        self._connections.sweep()


class _Collectors(Collector):
    """The process's instruments followed by one hub's state gauges, as one registry's worth of metrics."""

    def __init__(self, state: Collector) -> None:
        self._state = state

    def collect(self) -> Iterable:
        yield from REGISTRY.collect()
        yield from self._state.collect()


def _bounded(app: Callable) -> Callable:
    scrapes = threading.BoundedSemaphore(MAX_SCRAPES)

    def metrics_app(environ: dict[str, Any], start_response: Callable) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != PATH:
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [f"memhub serves metrics at {PATH} only\n".encode()]
        if not scrapes.acquire(blocking=False):
            start_response("503 Service Unavailable", [("Content-Type", "text/plain; charset=utf-8"), ("Retry-After", "1")])
            return [b"too many scrapes at once; retry in a second\n"]
        try:
            return app(environ, start_response)  # prometheus_client builds the whole body before returning
        finally:
            scrapes.release()

    return metrics_app


class MetricsEndpoint:
    """Binds at construction (a taken port fails the hub's start); serves from ``start()`` until ``stop()``."""

    def __init__(self, host: str, port: int, state: Collector, header_timeout_s: float = HEADER_TIMEOUT_S) -> None:
        # Collected whole at every scrape (the state families come and go); ?name[]= filters still apply.
        registry = CollectorRegistry(support_collectors_without_names=True)
        registry.register(_Collectors(state))
        server_class = type("_BoundServer", (_Server,), {"address_family": _family(host), "header_timeout_s": header_timeout_s})
        try:
            self._httpd = make_server(host, port, _bounded(make_wsgi_app(registry)), server_class, handler_class=_Quiet)
        except OSError as exc:
            raise StartupError(
                f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}; pick another port with --metrics-port "
                "or MEMHUB_METRICS_PORT (or another interface with MEMHUB_METRICS_HOST)"
            ) from None
        self.host = host
        self.port: int = self._httpd.server_address[1]
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{PATH}"

    def start(self) -> None:
        """Serve on a daemon thread, and switch recording on for the process."""
        record.activate()
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="memhub-metrics-http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(10)
            self._thread = None
            record.deactivate()
        self._httpd.server_close()


def _family(host: str) -> socket.AddressFamily:
    try:
        return socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)[0][0]
    except socket.gaierror as exc:
        raise StartupError(f"cannot serve metrics on {host!r}: {exc}; check MEMHUB_METRICS_HOST") from None
