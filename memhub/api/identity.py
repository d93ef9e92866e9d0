"""Authentication of every RPC: a server interceptor that verifies the bearer JWT.

The interceptor runs the check on the server's event loop before the
handler, and hands the verified caller over in a context variable, which
travels with the handler into the thread that runs its body; servicers read
it with `current_caller()`. Health checks are the only unauthenticated calls
(load balancers and probes carry no tokens).

The OpenTelemetry server interceptor runs before this one (memhub/api/server.py),
so the RPC's span is current here: the caller's trace id, which the audit log
and the memories' provenance record, is that span's trace id. Beside it they
record the hub's own id of the call and whether the trace id was the
caller's choice (memhub/api/provenance.py).

A call with more than one `authorization` header is refused: which one a
proxy, the hub and a log reader each take would differ. Every failure is
counted per client address and reason and audited in aggregate
(memhub/audit/aggregate.py): an attacker must not be able to turn forged
tokens into one audit row each.
"""

from __future__ import annotations

import contextvars
import inspect
import logging
import re
from collections.abc import Callable
from typing import Any

import grpc
from opentelemetry import trace

from memhub.api.provenance import new_hub_request_id, trace_id_from_caller
from memhub.api.status import abort
from memhub.audit.aggregate import AggregatedEvents, EventKey
from memhub.auth import TokenVerifier, bearer_token
from memhub.auth.failures import DUPLICATE_AUTHORIZATION, reason_of, source_host
from memhub.core.model import Caller, Trust
from memhub.errors import Unauthenticated
from memhub.metrics import record

log = logging.getLogger(__name__)

_PUBLIC_PREFIXES = ("/grpc.health.v1.Health/",)
_TRACEPARENT = re.compile(r"[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}")

_current: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("memhub_caller", default=None)


def current_caller() -> Caller:
    caller = _current.get()
    if caller is None:  # a servicer reached without the interceptor: refuse rather than run open
        raise Unauthenticated("no verified caller for this call")
    return caller


def trace_id_from(metadata: dict[str, Any]) -> str:
    """The trace id of a W3C traceparent header in `metadata` ("" if none or malformed)."""
    match = _TRACEPARENT.fullmatch(str(metadata.get("traceparent", "")))
    return match.group(1) if match and match.group(1) != "0" * 32 else ""


def current_trace_id(metadata: dict[str, Any]) -> str:
    """The current span's trace id; the traceparent header's only when no span is active (tracing not wired)."""
    ctx = trace.get_current_span().get_span_context()
    if ctx.is_valid:
        return format(ctx.trace_id, "032x")
    return trace_id_from(metadata)


class AuthInterceptor(grpc.aio.ServerInterceptor):
    """Verifies the bearer token of every call but health checks, on the event loop, before the handler runs."""

    def __init__(self, verifier: TokenVerifier, events: AggregatedEvents | None = None) -> None:
        self._verifier = verifier
        self._events = events

    async def intercept_service(self, continuation, handler_call_details):  # noqa: ANN001, ANN201 - grpc's signature
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or method.startswith(_PUBLIC_PREFIXES):
            return handler
        return wrap_handler(handler, lambda behavior: self._authenticated(behavior, method))

    def _caller(self, context: grpc.aio.ServicerContext, method: str) -> Caller:
        """The verified caller; raises Unauthenticated."""
        pairs = tuple(context.invocation_metadata() or ())
        if sum(1 for key, _ in pairs if key == "authorization") > 1:
            raise Unauthenticated(DUPLICATE_AUTHORIZATION)
        metadata = dict(pairs)
        identity = self._verifier.verify(bearer_token(metadata.get("authorization")))
        trace_id = current_trace_id(metadata)
        return Caller(
            agent_id=identity.agent_id,
            groups=identity.groups,
            trust=Trust(identity.trust),
            trace_id=trace_id,
            rpc=method.lstrip("/"),
            hub_request_id=new_hub_request_id(),
            trace_id_from_caller=trace_id_from_caller(trace_id_from(metadata), trace_id),
        )

    async def _enter(self, context: grpc.aio.ServicerContext, method: str) -> contextvars.Token:
        """Verify the caller and make it current; aborts the call with UNAUTHENTICATED otherwise."""
        try:
            caller = self._caller(context, method)
        except Unauthenticated as exc:
            self._failed(context, method, str(exc))
            await abort(context, grpc.StatusCode.UNAUTHENTICATED, str(exc))
        # Joins the trace to the audit rows and memories of this call (which hold the identities spans omit).
        trace.get_current_span().set_attribute("memhub.request_id", caller.hub_request_id)
        return _current.set(caller)

    def _failed(self, context: grpc.aio.ServicerContext, method: str, message: str) -> None:
        reason, source = reason_of(message), source_host(context.peer() or "")
        record.auth_failure(reason)
        log.debug("authentication failed: %s", reason, extra={"source": source, "rpc": method.lstrip("/")})
        if self._events is not None:
            self._events.record(EventKey("authenticate", reason, source=source), rpc=method.lstrip("/"))

    def _authenticated(self, behavior: Callable, method: str) -> Callable:
        if inspect.isasyncgenfunction(behavior):  # a streaming response (server reflection)

            async def stream(request_or_iterator, context: grpc.aio.ServicerContext):  # noqa: ANN001, ANN202
                token = await self._enter(context, method)
                try:
                    async for response in behavior(request_or_iterator, context):
                        yield response
                finally:
                    try:
                        _current.reset(token)
                    except ValueError:
                        # A stream the client cancelled is closed by asyncio's generator finaliser, in another
                        # context than the one it ran in; that context, and the variable's value in it, is gone.
                        pass

            return stream

        async def unary(request_or_iterator, context: grpc.aio.ServicerContext):  # noqa: ANN001, ANN202
            token = await self._enter(context, method)
            try:
                return await behavior(request_or_iterator, context)
            finally:
                _current.reset(token)

        return unary


def wrap_handler(
    handler: grpc.RpcMethodHandler,
    wrap: Callable[[Callable], Callable],
    request_deserializer: Callable[[bytes], Any] | None = None,
) -> grpc.RpcMethodHandler:
    """Rebuild a method handler with its behavior wrapped (and optionally another deserializer), whatever its shape."""
    kwargs = {
        "request_deserializer": request_deserializer or handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.unary_unary:
        return grpc.unary_unary_rpc_method_handler(wrap(handler.unary_unary), **kwargs)
    if handler.unary_stream:
        return grpc.unary_stream_rpc_method_handler(wrap(handler.unary_stream), **kwargs)
    if handler.stream_unary:
        return grpc.stream_unary_rpc_method_handler(wrap(handler.stream_unary), **kwargs)
    return grpc.stream_stream_rpc_method_handler(wrap(handler.stream_stream), **kwargs)
