"""The limits interceptor: one agent must not be able to hurt the others (issue 10 items 1 and 4).

Runs after the token check (it needs the verified caller) and before the
method. Unary calls pass the caller's rate buckets and call slots
(memhub/api/call_limits.py); streaming calls (server reflection) count against
the caller's stream cap instead of its call slots, and a stream whose
client sends nothing for ``stream_idle_timeout_s`` is closed. Unauthenticated
streams (health Watch) are capped per client address; health Check is
never limited (probes must always get through).

A refused call gets RESOURCE_EXHAUSTED with what to do and, for rate and
slot refusals, a `retry-after` trailing metadata entry in seconds. Refusals
are counted and audited in aggregate (memhub/audit/aggregate.py, action
"limit"), as are calls the memory service refused for a storage quota
(action "quota"; memhub/api/status.py tells it through ``quota_listener``
before the caller is answered, so the count is never behind the answer).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable

import grpc

from memhub.api.call_limits import CallLimiter, Refused, Ticket
from memhub.api.identity import current_caller, wrap_handler
from memhub.api.status import abort, quota_listener
from memhub.audit.aggregate import AggregatedEvents, EventKey
from memhub.auth.failures import source_host
from memhub.core.model import Caller
from memhub.core.quotas import quota_reason
from memhub.metrics import record

_PUBLIC_PREFIXES = ("/grpc.health.v1.Health/",)


class LimitsInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, limiter: CallLimiter, events: AggregatedEvents | None = None) -> None:
        self._limiter = limiter
        self._events = events
        self._idle_s = limiter.config.stream_idle_timeout_s

    async def intercept_service(self, continuation, handler_call_details):  # noqa: ANN001, ANN201 - grpc's signature
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        method = handler_call_details.method.lstrip("/")
        streaming = handler.request_streaming or handler.response_streaming
        public = handler_call_details.method.startswith(_PUBLIC_PREFIXES)
        if public and not streaming:
            return handler
        return wrap_handler(handler, lambda behavior: self._guarded(behavior, method, public, handler.request_streaming))

    # -- admission ----------------------------------------------------------------------

    async def _admit(self, context: grpc.aio.ServicerContext, method: str, public: bool, streaming: bool) -> Ticket:
        caller = None if public else current_caller()
        try:
            if public:
                return self._limiter.open_public_stream(source_host(context.peer() or ""))
            if streaming:
                return self._limiter.open_stream(caller)
            return await self._limiter.admit(caller)
        except Refused as refused:
            await self._refuse(context, method, caller, refused)
            raise AssertionError("unreachable: abort raises") from None

    async def _refuse(self, context: grpc.aio.ServicerContext, method: str, caller: Caller | None, refused: Refused) -> None:
        record.limit_refused(refused.reason)
        if self._events is not None:
            self._events.record(
                EventKey("limit", refused.reason, agent_id=caller.agent_id if caller else "", source=_source(context, caller)),
                rpc=method,
                groups=caller.groups if caller else (),
            )
        if refused.retry_after_s is not None:
            context.set_trailing_metadata((("retry-after", f"{refused.retry_after_s:g}"),))
        await abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, refused.message)

    def _quota_refused(self, caller: Caller, method: str, details: str) -> None:
        """Audit a storage or namespace quota refusal the method itself answered (called before the answer goes out)."""
        record.quota_refused(quota_reason(details))
        if self._events is not None:
            key = EventKey("quota", quota_reason(details), agent_id=caller.agent_id)
            self._events.record(key, rpc=method, groups=caller.groups)

    # -- wrapping -----------------------------------------------------------------------

    def _guarded(self, behavior: Callable, method: str, public: bool, request_streaming: bool) -> Callable:
        streaming = request_streaming or inspect.isasyncgenfunction(behavior) or public

        def requests(iterator, context):  # noqa: ANN001, ANN202
            return _idle_closed(iterator, context, self._idle_s) if request_streaming and self._idle_s > 0 else iterator

        if inspect.isasyncgenfunction(behavior):

            async def stream(request_or_iterator, context: grpc.aio.ServicerContext):  # noqa: ANN001, ANN202
                ticket = await self._admit(context, method, public, True)
                try:
                    async for response in behavior(requests(request_or_iterator, context), context):
                        yield response
                finally:
                    ticket.release()

            return stream

        async def call(request_or_iterator, context: grpc.aio.ServicerContext):  # noqa: ANN001, ANN202
            ticket = await self._admit(context, method, public, streaming)
            listening = None
            if not public:
                caller = current_caller()
                listening = quota_listener.set(lambda details: self._quota_refused(caller, method, details))
            try:
                return await behavior(requests(request_or_iterator, context), context)
            finally:
                if listening is not None:
                    quota_listener.reset(listening)
                ticket.release()

        return call


def _source(context: grpc.aio.ServicerContext, caller: Caller | None) -> str:
    return "" if caller is not None else source_host(context.peer() or "")


async def _idle_closed(iterator: AsyncIterator, context: grpc.aio.ServicerContext, idle_s: float) -> AsyncIterator:
    """The requests of a stream, ending it with DEADLINE_EXCEEDED when none arrives for ``idle_s`` seconds."""
    messages = iterator.__aiter__()
    while True:
        try:
            request = await asyncio.wait_for(messages.__anext__(), idle_s)
        except StopAsyncIteration:
            return
        except TimeoutError:
            await abort(
                context,
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"no message for {idle_s:g} s: idle streams are closed; open a new one when needed",
            )
        yield request
