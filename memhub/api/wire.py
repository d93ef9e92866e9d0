"""Bytes that are not a request: INVALID_ARGUMENT and one log line, not INTERNAL and a traceback.

gRPC deserializes a request before any handler runs; when the bytes do not
parse, grpc.aio logs "Exception deserializing request!" with a traceback at
ERROR and answers INTERNAL, so anyone could fill the hub's log with
tracebacks and make a client bug look like a server fault. This interceptor
(the innermost) gives every method a deserializer that never raises: bytes
that do not parse become an ``Undecodable`` marker, and the method's
wrapper answers INVALID_ARGUMENT for it after authentication (so an
unauthenticated caller still only ever sees UNAUTHENTICATED). Streaming
requests are checked message by message.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import grpc

from memhub.api.identity import wrap_handler
from memhub.api.status import abort

log = logging.getLogger(__name__)

MESSAGE = "the request is not a valid protobuf message for this method; check the client's stubs match the hub's API"


@dataclass(frozen=True)
class Undecodable:
    """Stands in for a request whose bytes did not parse."""

    size: int


def _tolerant(deserialize: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    if deserialize is None:
        return None

    def parse(data: bytes) -> Any:
        try:
            return deserialize(data)
        except Exception:  # noqa: BLE001 - DecodeError, RuntimeWarning-as-error...: the bytes are the problem
            return Undecodable(len(data))

    return parse


async def _refuse(context: grpc.aio.ServicerContext, method: str, request: Undecodable) -> None:
    log.info("undecodable request (%d bytes) to %s; answered INVALID_ARGUMENT", request.size, method)
    await abort(context, grpc.StatusCode.INVALID_ARGUMENT, MESSAGE)


def _checked(behavior: Callable, method: str, streaming_request: bool) -> Callable:
    if streaming_request:

        async def requests(iterator: AsyncIterator, context: grpc.aio.ServicerContext) -> AsyncIterator:
            async for request in iterator:
                if isinstance(request, Undecodable):
                    await _refuse(context, method, request)
                yield request

        if inspect.isasyncgenfunction(behavior):

            async def stream_stream(iterator, context):  # noqa: ANN001, ANN202
                async for response in behavior(requests(iterator, context), context):
                    yield response

            return stream_stream

        async def stream_unary(iterator, context):  # noqa: ANN001, ANN202
            return await behavior(requests(iterator, context), context)

        return stream_unary

    if inspect.isasyncgenfunction(behavior):

        async def unary_stream(request, context):  # noqa: ANN001, ANN202
            if isinstance(request, Undecodable):
                await _refuse(context, method, request)
            async for response in behavior(request, context):
                yield response

        return unary_stream

    async def unary_unary(request, context):  # noqa: ANN001, ANN202
        if isinstance(request, Undecodable):
            await _refuse(context, method, request)
        return await behavior(request, context)

    return unary_unary


class WireInterceptor(grpc.aio.ServerInterceptor):
    """Tolerant deserializers and the INVALID_ARGUMENT answer for what they could not parse."""

    async def intercept_service(self, continuation, handler_call_details):  # noqa: ANN001, ANN201 - grpc's signature
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        method = handler_call_details.method.lstrip("/")
        streaming = bool(handler.request_streaming)
        return wrap_handler(
            handler, lambda behavior: _checked(behavior, method, streaming), _tolerant(handler.request_deserializer)
        )
