"""The RPC metrics interceptor: every call's count and latency per service, method and status code.

Outermost of the server's interceptors (memhub/api/server.py), so the time is
what a caller waits for once its call arrived: the token check, the limits
(and waiting for a call slot) and the method. Calls refused there count too,
with their code (UNAUTHENTICATED, RESOURCE_EXHAUSTED).

Only methods the server has a handler for are labelled: a call to an unknown
method gets UNIMPLEMENTED from gRPC and is not counted, because its name is
whatever the caller sent (an attacker could mint a series per call).
Installed only when the hub serves metrics (MEMHUB_METRICS_PORT).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable

import grpc

from memhub.api.identity import wrap_handler
from memhub.metrics import record


def _status_name(context: grpc.aio.ServicerContext, default: str) -> str:
    """The code the call ends with: what the handler set or aborted with, else ``default``."""
    code = context.code()
    return code.name if isinstance(code, grpc.StatusCode) else default


class RpcMetricsInterceptor(grpc.aio.ServerInterceptor):
    async def intercept_service(self, continuation, handler_call_details):  # noqa: ANN001, ANN201 - grpc's signature
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        service, _, method = handler_call_details.method.lstrip("/").rpartition("/")
        return wrap_handler(handler, lambda behavior: _timed(behavior, service, method))


def _timed(behavior: Callable, service: str, method: str) -> Callable:
    if inspect.isasyncgenfunction(behavior):  # a streaming response (health Watch, reflection, the change feed)

        async def stream(request_or_iterator, context: grpc.aio.ServicerContext):  # noqa: ANN001, ANN202
            started = time.perf_counter()
            code = "UNKNOWN"
            try:
                async for response in behavior(request_or_iterator, context):
                    yield response
                code = _status_name(context, "OK")
            except (asyncio.CancelledError, GeneratorExit):
                code = "CANCELLED"
                raise
            except BaseException:
                code = _status_name(context, "UNKNOWN")
                raise
            finally:
                record.rpc(service, method, code, time.perf_counter() - started)

        return stream

    async def unary(request_or_iterator, context: grpc.aio.ServicerContext):  # noqa: ANN001, ANN202
        started = time.perf_counter()
        code = "UNKNOWN"
        try:
            response = await behavior(request_or_iterator, context)
            code = _status_name(context, "OK")
            return response
        except asyncio.CancelledError:
            code = "CANCELLED"
            raise
        except BaseException:
            code = _status_name(context, "UNKNOWN")
            raise
        finally:
            record.rpc(service, method, code, time.perf_counter() - started)

    return unary
