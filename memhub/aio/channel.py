"""grpc.aio channels to a hub: the same options as the synchronous client's, and OpenTelemetry client spans.

Unary calls are traced (a client span each, W3C trace context in the metadata, so the hub's spans join the
caller's trace); streams are not, like the synchronous client's feed: one span for a stream that lives for
hours says nothing, and health checks are left out as they are there.
"""

from __future__ import annotations

from typing import Any

import grpc
import grpc.aio
from opentelemetry.instrumentation.grpc import aio_client_interceptors

from memhub.client_channel import channel_options

_UNTRACED_PREFIXES = ("/grpc.health.v1.Health/",)


def _traced(details: Any) -> bool:
    """The aio interceptors filter on grpc.aio.ClientCallDetails, whose method is bytes."""
    method = details.method.decode() if isinstance(details.method, bytes) else str(details.method)
    return not method.startswith(_UNTRACED_PREFIXES)


def traced_aio_channel(address: str) -> grpc.aio.Channel:
    """A plaintext grpc.aio channel to ``address`` whose unary calls open OpenTelemetry client spans."""
    interceptors = [i for i in aio_client_interceptors(filter_=_traced) if isinstance(i, grpc.aio.UnaryUnaryClientInterceptor)]
    return grpc.aio.insecure_channel(address, options=channel_options(), interceptors=interceptors)
