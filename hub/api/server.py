"""The gRPC server: MemoryService plus health checking and reflection.

Interceptors, outermost first: OpenTelemetry (continues the caller's trace
from the `traceparent` metadata and opens the RPC's server span), the span
status (marks that span an error for every non-OK code), then the token
check, so even UNAUTHENTICATED calls are traced. Health checks are not
traced: probes would bury real traffic.
"""

from __future__ import annotations

import logging
from concurrent import futures

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from memhub.v1 import admin_pb2, admin_pb2_grpc
from memhub.v1 import memory_pb2 as pb
from memhub.v1 import memory_pb2_grpc as pb_grpc
from opentelemetry import trace
from opentelemetry.instrumentation.grpc import server_interceptor

from hub.api.admin_servicer import AdminServicer
from hub.api.identity import AuthInterceptor, wrap_handler
from hub.api.servicer import MemoryServicer
from hub.app import Hub
from hub.errors import StartupError

log = logging.getLogger(__name__)

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["MemoryService"].full_name
ADMIN_SERVICE_NAME = admin_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name
_UNTRACED_PREFIXES = ("/grpc.health.v1.Health/",)


def _traced(handler_call_details: grpc.HandlerCallDetails) -> bool:
    return not handler_call_details.method.startswith(_UNTRACED_PREFIXES)


class SpanStatusInterceptor(grpc.ServerInterceptor):
    """Marks the current (RPC server) span as an error, with the gRPC code, when a call ends non-OK.

    opentelemetry-instrumentation-grpc follows the semantic conventions for
    server spans, which leave client-caused codes (PERMISSION_DENIED,
    UNAUTHENTICATED, INVALID_ARGUMENT, NOT_FOUND...) UNSET; memhub wants a
    denied call to stand out in a trace viewer. The code is in
    rpc.grpc.status_code (set by the instrumentation), error.type and the
    status description ("PERMISSION_DENIED: <details>").
    """

    def intercept_service(self, continuation, handler_call_details):  # noqa: ANN001, ANN201 - grpc's signature
        handler = continuation(handler_call_details)
        if handler is None or handler.response_streaming or not _traced(handler_call_details):
            return handler
        return wrap_handler(handler, _mark_status)


def _mark_status(behavior):  # noqa: ANN001, ANN202
    def run(request_or_iterator, context: grpc.ServicerContext):  # noqa: ANN001, ANN202
        try:
            return behavior(request_or_iterator, context)
        finally:
            code = context.code()
            if code is not None and code is not grpc.StatusCode.OK:
                details = context.details() or b""
                details = details.decode("utf-8", "replace") if isinstance(details, bytes) else str(details)
                span = trace.get_current_span()
                span.set_attribute("error.type", code.name)
                span.set_status(trace.Status(trace.StatusCode.ERROR, f"{code.name}: {details}"[:500]))

    return run


def build_server(hub: Hub) -> tuple[grpc.Server, int, health.HealthServicer]:
    """Create and bind (not start) the server; returns it with the bound port and its health servicer.

    Every RPC but health checks is traced, then passes the token check (AuthInterceptor).
    """
    config = hub.config.server
    options = [
        ("grpc.max_receive_message_length", config.max_message_bytes),
        ("grpc.max_send_message_length", config.max_message_bytes),
    ]
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=config.max_workers, thread_name_prefix="memhub-rpc"),
        options=options,
        interceptors=[server_interceptor(filter_=_traced), SpanStatusInterceptor(), AuthInterceptor(hub.verifier)],
    )
    pb_grpc.add_MemoryServiceServicer_to_server(MemoryServicer(hub.service), server)
    admin_pb2_grpc.add_AdminServiceServicer_to_server(AdminServicer(hub.admin), server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection((SERVICE_NAME, ADMIN_SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    address = f"{config.host}:{config.port}"
    try:
        port = server.add_insecure_port(address)
    except RuntimeError as exc:
        raise StartupError(f"cannot listen on {address}: {exc}; pick another port with --port or MEMHUB_PORT") from None
    if port == 0:
        raise StartupError(f"cannot listen on {address} (in use?); pick another port with --port or MEMHUB_PORT")
    health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    hub.monitor.subscribe(lambda database_ok, index_ok: _report_health(health_servicer, database_ok, index_ok))
    return server, port, health_servicer


def _report_health(servicer: health.HealthServicer, database_ok: bool, index_ok: bool) -> None:
    """Per-service health for readiness probes; the overall status ("") stays SERVING: the process is alive.

    MemoryService needs both stores (while only the index is down, searches
    still answer from Postgres, marked degraded, but a load balancer should
    prefer a replica that answers fully); AdminService needs Postgres only.
    """
    serving, not_serving = health_pb2.HealthCheckResponse.SERVING, health_pb2.HealthCheckResponse.NOT_SERVING
    servicer.set(SERVICE_NAME, serving if database_ok and index_ok else not_serving)
    servicer.set(ADMIN_SERVICE_NAME, serving if database_ok else not_serving)
