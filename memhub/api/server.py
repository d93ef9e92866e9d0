"""The gRPC server: MemoryService and AdminService plus health checking and reflection (v1 and v1alpha), on ``grpc.aio``.

Why asyncio: every open call of a thread-per-RPC server holds a worker
thread, so a handful of idle streams (server reflection today, change feeds
tomorrow) could occupy them all and freeze every other agent's calls. Here
one event loop holds all calls; only the blocking bodies of the memory and
admin methods use threads, from a bounded pool (``ServerConfig.max_workers``),
and only while they work. Health and reflection are the libraries' asyncio
servicers and use no thread at all.

The loop runs in a thread of its own, so the rest of the hub (and the tests)
stay plain blocking Python: ``HubServer.start()``/``stop()``.

Interceptors, outermost first: the RPC metrics (count and latency per method
and code, only when the hub serves metrics: memhub/api/rpc_metrics.py), then
OpenTelemetry (continues the caller's trace
from the `traceparent` metadata and opens the RPC's server span), then the
token check, so even UNAUTHENTICATED calls are traced, then the per-agent
limits (rate, call slots, open streams, idle streams: memhub/api/limits.py),
then the wire check (bytes that are not a request answer INVALID_ARGUMENT,
memhub/api/wire.py). Health checks are not
traced: probes would bury real traffic.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent import futures
from typing import Any

import grpc
from grpc_health.v1 import _async as health_aio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from opentelemetry.instrumentation.grpc import aio_server_interceptor

from memhub import grpc_keepalive, telemetry
from memhub.api import reflection
from memhub.api.admin_servicer import AdminServicer
from memhub.api.call_limits import CallLimiter
from memhub.api.feed_servicer import ChangeFeedServicer
from memhub.api.identity import AuthInterceptor
from memhub.api.limits import LimitsInterceptor
from memhub.api.rpc_metrics import RpcMetricsInterceptor
from memhub.api.search_slots import slots_for
from memhub.api.servicer import MemoryServicer
from memhub.api.session_servicer import SessionStateServicer
from memhub.api.wire import WireInterceptor
from memhub.app import Hub
from memhub.errors import StartupError
from memhub.v1 import admin_pb2, admin_pb2_grpc, changes_pb2, changes_pb2_grpc, session_pb2, session_pb2_grpc
from memhub.v1 import memory_pb2 as pb
from memhub.v1 import memory_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["MemoryService"].full_name
ADMIN_SERVICE_NAME = admin_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name
FEED_SERVICE_NAME = changes_pb2.DESCRIPTOR.services_by_name["ChangeFeedService"].full_name
SESSION_SERVICE_NAME = session_pb2.DESCRIPTOR.services_by_name["SessionStateService"].full_name
_UNTRACED_PREFIXES = ("/grpc.health.v1.Health/",)


def _traced(handler_call_details: grpc.HandlerCallDetails) -> bool:
    return not handler_call_details.method.startswith(_UNTRACED_PREFIXES)


class TracingInterceptor(grpc.aio.ServerInterceptor):
    """OpenTelemetry's server interceptor, stepped over while tracing is off.

    With no SDK provider its spans are no-ops, but reading the metadata and
    wrapping every handler still cost 7% of a busy hub's Python time. The
    audit log and provenance then take the trace id from the caller's
    ``traceparent`` directly (``identity.current_trace_id``).
    """

    def __init__(self) -> None:
        self._otel = aio_server_interceptor(filter_=_traced)

    async def intercept_service(self, continuation, handler_call_details):  # noqa: ANN001, ANN201 - grpc's signature
        if not telemetry.tracing_active():
            return await continuation(handler_call_details)
        return await self._otel.intercept_service(continuation, handler_call_details)


class HealthReporter:
    """Sets health statuses from any thread (the asyncio health servicer lives on the server's loop)."""

    def __init__(self, servicer: health_aio.HealthServicer, loop: asyncio.AbstractEventLoop) -> None:
        self._servicer = servicer
        self._loop = loop

    def set(self, service: str, status: Any) -> None:
        """Schedule the change; calls from one thread apply in order. A stopped server ignores it."""
        coroutine = self._servicer.set(service, status)
        try:
            asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        except RuntimeError:  # the loop is closed: the server has stopped
            coroutine.close()

    def enter_graceful_shutdown(self) -> None:
        """Every service answers NOT_SERVING from now on: load balancers stop routing before we stop answering."""
        asyncio.run_coroutine_threadsafe(self._servicer.enter_graceful_shutdown(), self._loop).result(10)


class HubServer:
    """A ``grpc.aio`` server on its own event-loop thread, driven from blocking code."""

    def __init__(self, hub: Hub, keepalive: grpc_keepalive.Keepalive = grpc_keepalive.DEFAULT) -> None:
        """Bind (not start) the server; ``keepalive`` is the ping contract with clients (tests shorten it)."""
        self._hub = hub
        self._keepalive = keepalive
        self._pool = futures.ThreadPoolExecutor(max_workers=hub.config.server.max_workers, thread_name_prefix="memhub-rpc")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="memhub-grpc-loop", daemon=True)
        self._thread.start()
        self._stopped = threading.Event()
        try:
            self._server, self.port, self._health = self._on_loop(self._build())
        except BaseException:
            self._shutdown_loop()
            raise
        self.health = HealthReporter(self._health, self._loop)

    def start(self) -> None:
        self._on_loop(self._server.start())

    def stop(self, grace: float | None) -> threading.Event:
        """Stop accepting calls, let running ones finish for up to ``grace`` seconds, then cancel them.

        Returns once stopped (an already-set Event, so ``stop(g).wait()`` reads as before).
        """
        if not self._stopped.is_set():
            if self._hub.feed is not None:
                # Change-feed streams never end by themselves: tell them to end now (UNAVAILABLE with their
                # cursor, to resume on another replica) instead of holding the stop for the whole grace.
                self._hub.feed.begin_shutdown()
            try:
                self._on_loop(self._server.stop(grace), timeout=(grace or 0) + 30)
            finally:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._shutdown_loop()
                self._stopped.set()
        return self._stopped

    # -- internals -------------------------------------------------------------

    def _on_loop(self, coroutine: Any, timeout: float = 60.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def _shutdown_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _build(self) -> tuple[grpc.aio.Server, int, health_aio.HealthServicer]:
        hub = self._hub
        config = hub.config.server
        limits = hub.config.limits
        self.limiter = CallLimiter(limits)
        server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", config.max_message_bytes),
                ("grpc.max_send_message_length", config.max_message_bytes),
                # One connection cannot open streams without end; per-agent caps bind first anyway.
                ("grpc.max_concurrent_streams", 256),
                # Connections with no call for 5 minutes are closed (clients reconnect when they need to).
                ("grpc.max_connection_idle_ms", 5 * 60 * 1000),
                # gRPC sets SO_REUSEPORT by default: a second hub (any data directory) started on this port then
                # listened beside the first and the kernel split new connections between the two, so a client
                # met one hub's memories or the other's. Off, the second is refused with "address in use"; on
                # only for the hub processes of one `memhub serve --processes N` (memhub/cli/serve_group.py).
                ("grpc.so_reuseport", 1 if config.share_port else 0),
                # Accept the pings memhub's clients send (memhub/grpc_keepalive.py), so none is answered
                # with GOAWAY too_many_pings.
                *self._keepalive.server_options(),
            ],
            interceptors=[
                # Outermost: a call's time includes the token check and the limits; refused calls count too.
                *([RpcMetricsInterceptor()] if hub.metrics is not None else []),
                TracingInterceptor(),
                AuthInterceptor(hub.verifier, hub.events),
                LimitsInterceptor(self.limiter, hub.events),
                WireInterceptor(),
            ],
            maximum_concurrent_rpcs=limits.max_concurrent_calls,
        )
        servicer = MemoryServicer(hub.service, self._pool, slots_for(config.search_slots, config.processes), hub.consolidator)
        pb_grpc.add_MemoryServiceServicer_to_server(servicer, server)
        admin_pb2_grpc.add_AdminServiceServicer_to_server(
            AdminServicer(hub.admin, self._pool, self.limiter, hub.events, tokens=hub.tokens, access=hub.access), server
        )
        if hub.feed is not None:
            changes_pb2_grpc.add_ChangeFeedServiceServicer_to_server(ChangeFeedServicer(hub.feed, hub.verifier), server)
        if hub.session_state is not None:
            session_servicer = SessionStateServicer(hub.session_state, self._pool)
            session_pb2_grpc.add_SessionStateServiceServicer_to_server(session_servicer, server)
        health_servicer = health_aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
        reflection.enable(
            (SERVICE_NAME, ADMIN_SERVICE_NAME, FEED_SERVICE_NAME, SESSION_SERVICE_NAME, health.SERVICE_NAME), server
        )
        address = f"{config.host}:{config.port}"
        try:
            port = server.add_insecure_port(address)
        except RuntimeError as exc:
            raise StartupError(
                f"cannot listen on {address}: the port is taken or the address is not this machine's ({exc}); stop "
                "what listens there, or pick another port with --port or MEMHUB_PORT"
            ) from None
        if port == 0:
            raise StartupError(f"cannot listen on {address} (in use?); pick another port with --port or MEMHUB_PORT")
        await health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
        return server, port, health_servicer


def build_server(hub: Hub, keepalive: grpc_keepalive.Keepalive = grpc_keepalive.DEFAULT) -> tuple[HubServer, int, HealthReporter]:
    """Create and bind (not start) the server; returns it with the bound port and its health reporter.

    Every RPC but health checks is traced, then passes the token check (AuthInterceptor).
    """
    server = HubServer(hub, keepalive)
    reporter = server.health
    hub.monitor.subscribe(lambda database_ok, index_ok: _report_health(reporter, database_ok, index_ok))
    return server, server.port, reporter


def _report_health(reporter: HealthReporter, database_ok: bool, index_ok: bool) -> None:
    """Per-service health for readiness probes; the overall status ("") stays SERVING: the process is alive.

    MemoryService needs both stores (while only the index is down, searches
    still answer from Postgres, marked degraded, but a load balancer should
    prefer a replica that answers fully); AdminService, SessionStateService and ChangeFeedService need Postgres
    only. ``database_ok`` is false while Postgres is down and, after a write failed for a full disk, until the
    monitor's probe finds room again.
    """
    serving, not_serving = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING
    reporter.set(SERVICE_NAME, serving if database_ok and index_ok else not_serving)
    reporter.set(ADMIN_SERVICE_NAME, serving if database_ok else not_serving)
    reporter.set(SESSION_SERVICE_NAME, serving if database_ok else not_serving)
    reporter.set(FEED_SERVICE_NAME, serving if database_ok else not_serving)  # its events live in Postgres
