"""Channels to a hub: the options every one gets, and OpenTelemetry client spans with W3C trace context.

Calls are traced with OpenTelemetry: each opens a client span and sends the
W3C trace context in the gRPC metadata, so the hub's spans join the caller's
trace (with tracing off in this process the spans are no-ops, and an active
context is still passed on). A `traceparent` the caller puts into the
metadata itself is honoured when no span is active.

Re-exported by memhub/client.py, where callers import them from.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol, TypeVar

import grpc
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.instrumentation.grpc import client_interceptor
from opentelemetry.instrumentation.grpc.grpcext import StreamClientInterceptor, UnaryClientInterceptor, intercept_channel

from memhub.client_channel_options import channel_options as channel_options  # re-exported, as before

_UNTRACED_PREFIXES = ("/grpc.health.v1.Health/",)

Metadata = Iterable[tuple[str, str | bytes]] | None
"""What grpcext hands an interceptor as a call's metadata."""
_Request = TypeVar("_Request")
_Result = TypeVar("_Result")


class _ClientInfo(Protocol):
    """What grpcext's UnaryClientInfo and StreamClientInfo carry (their classes declare no attributes)."""

    full_method: str


def _traced(client_info: _ClientInfo) -> bool:
    return not str(client_info.full_method).startswith(_UNTRACED_PREFIXES)


@contextlib.contextmanager
def _explicit_parent(metadata: Metadata) -> Iterator[None]:
    """With no active span, make a traceparent found in `metadata` the parent of the call's client span."""
    if not metadata or trace.get_current_span().get_span_context().is_valid:
        yield
        return
    carrier = {str(k).lower(): v for k, v in metadata if isinstance(v, str)}
    if "traceparent" not in carrier:
        yield
        return
    token = otel_context.attach(propagate.extract(carrier))
    try:
        yield
    finally:
        otel_context.detach(token)


class _ExplicitTraceparent(UnaryClientInterceptor, StreamClientInterceptor):
    """Runs before the OpenTelemetry interceptor, which would otherwise replace an explicit traceparent."""

    def intercept_unary(
        self,
        request: _Request,
        metadata: Metadata,
        client_info: _ClientInfo,
        invoker: Callable[[_Request, Metadata], _Result],
    ) -> _Result:
        with _explicit_parent(metadata):
            return invoker(request, metadata)

    def intercept_stream(
        self,
        request_or_iterator: _Request,
        metadata: Metadata,
        client_info: _ClientInfo,
        invoker: Callable[[_Request, Metadata], _Result],
    ) -> _Result:
        # (Response-streaming spans start lazily, when iterated: nothing to attach to here.)
        with _explicit_parent(metadata):
            return invoker(request_or_iterator, metadata)


def traced_channel(channel: grpc.Channel) -> grpc.Channel:
    """`channel` with OpenTelemetry client spans and W3C context injection (health checks untraced).

    Note: the instrumentation's interceptor is a `grpcext` one, so this uses
    its own intercept_channel; `grpc.intercept_channel` rejects it.
    """
    traced: grpc.Channel = intercept_channel(channel, client_interceptor(filter_=_traced), _ExplicitTraceparent())
    return traced
