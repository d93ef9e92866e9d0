"""Running servicer methods: blocking work off the event loop, the error catalog (memhub.errors) to gRPC status codes.

The gRPC server is ``grpc.aio``: one event loop holds every open call, so an
idle stream or a slow client costs no thread. The memory and admin services
are plain blocking Python (SQLAlchemy, pymilvus, the embedder), so each RPC
method body runs in a bounded thread pool; ``blocking_rpc`` makes a plain
method into an async handler that does that, with the caller's context
(the verified caller, the RPC's trace span) carried into the thread.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, Protocol, TypeVar

import grpc
import psycopg
from opentelemetry import trace
from sqlalchemy.exc import DBAPIError, OperationalError

from memhub import errors, outage_log
from memhub.core.quotas import QUOTA_SQLSTATES
from memhub.db import disk_full
from memhub.index import IndexBackendError

log = logging.getLogger(__name__)
# Store failures of calls: one line per outage, not one per failing call (memhub/outage_log.py).
_RPCS = outage_log.Site("RPCs", log, depends=())

_CODES: dict[type[errors.HubError], grpc.StatusCode] = {
    errors.InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    errors.NotFound: grpc.StatusCode.NOT_FOUND,
    errors.FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
    errors.PermissionDenied: grpc.StatusCode.PERMISSION_DENIED,
    errors.Unauthenticated: grpc.StatusCode.UNAUTHENTICATED,
    errors.Unavailable: grpc.StatusCode.UNAVAILABLE,
    errors.Aborted: grpc.StatusCode.ABORTED,
    errors.OutOfRange: grpc.StatusCode.OUT_OF_RANGE,
    errors.ResourceExhausted: grpc.StatusCode.RESOURCE_EXHAUSTED,
}

# Set by the limits interceptor for the call in progress: told of a quota refusal before the caller is answered.
quota_listener: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar(
    "memhub_quota_listener", default=None
)

Request = TypeVar("Request")
Response = TypeVar("Response")


class HasPool(Protocol):
    pool: Executor
    """Where the servicer's method bodies run."""


def code_for(exc: errors.HubError) -> grpc.StatusCode:
    for cls in type(exc).__mro__:
        if cls in _CODES:
            return _CODES[cls]
    return grpc.StatusCode.INTERNAL


def status_for(exc: BaseException, method: str) -> tuple[grpc.StatusCode, str]:
    """The status and message a caller gets for ``exc``; store outages are UNAVAILABLE, bugs INTERNAL (logged)."""
    if isinstance(exc, errors.HubError):
        return code_for(exc), str(exc)
    if isinstance(exc, IndexBackendError):
        # Any index failure is the store's, not the caller's: retrying later may work.
        _RPCS.failed(exc, method)
        return grpc.StatusCode.UNAVAILABLE, "the retrieval index is unavailable; retry shortly"
    if disk_full.is_disk_full(exc):
        # Wrapped by SQLAlchemy or raw from a COPY (the audit's): the hub's condition, not the caller's quota.
        _RPCS.failed(exc, method)  # one "disk full at <path>" line per outage (memhub/db/disk_full.py)
        full = errors.StorageFull()
        return code_for(full), str(full)
    quota = _quota_refusal(exc)
    if quota:
        return grpc.StatusCode.RESOURCE_EXHAUSTED, quota
    if isinstance(exc, OperationalError | psycopg.OperationalError):  # psycopg's own: raw from a COPY
        _RPCS.failed(exc, method)
        return grpc.StatusCode.UNAVAILABLE, "the database is unavailable; retry shortly"
    log.error("internal error in %s", method, exc_info=exc)
    return grpc.StatusCode.INTERNAL, "internal error; the hub log has the details"


def _quota_refusal(exc: BaseException) -> str:
    """The message of a storage or namespace quota the database refused a write for ("" if it is not one)."""
    orig = getattr(exc, "orig", None) if isinstance(exc, DBAPIError) else None
    if getattr(orig, "sqlstate", None) not in QUOTA_SQLSTATES:
        return ""
    return orig.diag.message_primary or "a storage quota refused the write"


def mark_span(code: grpc.StatusCode) -> None:
    """Mark the RPC's span an error for any non-OK code, client-caused ones too.

    opentelemetry-instrumentation-grpc follows the semantic conventions for
    server spans, which leave client-caused codes (PERMISSION_DENIED,
    UNAUTHENTICATED, INVALID_ARGUMENT, NOT_FOUND...) UNSET; memhub wants a
    denied call to stand out in a trace viewer. The code is in
    rpc.grpc.status_code (set by the instrumentation), error.type and the
    status description. Only the code: the details name agents and
    namespaces, which spans never carry (memhub/span_privacy.py); the caller
    gets them, and the span's memhub.request_id leads to the audit rows.
    """
    span = trace.get_current_span()
    span.set_attribute("error.type", code.name)
    span.set_status(trace.Status(trace.StatusCode.ERROR, code.name))


async def abort(context: grpc.aio.ServicerContext, code: grpc.StatusCode, details: str) -> None:
    """End the call with ``code``; always raises."""
    try:
        await context.abort(code, details)
    finally:
        # After abort: the instrumentation's own status update (which quotes the details) must not stay.
        mark_span(code)


def blocking_rpc(method: Callable[[Any, Request, Any], Response]) -> Callable[..., Any]:
    """Make a blocking servicer method an async gRPC handler that runs it in ``self.pool``.

    Errors become status codes (``status_for``); the method gets the
    request and ``None`` for the context (aio contexts belong to the loop).
    """
    name = method.__name__

    @functools.wraps(method)
    async def handler(self: HasPool, request: Request, context: grpc.aio.ServicerContext) -> Response:
        run = functools.partial(contextvars.copy_context().run, method, self, request, None)
        try:
            return await asyncio.get_running_loop().run_in_executor(self.pool, run)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a status
            code, details = status_for(exc, name)
            # Facts a program acts on without parsing the message (a version conflict's current version).
            trailing = exc.trailing_metadata if isinstance(exc, errors.VersionMismatch) else ()
        if trailing:
            context.set_trailing_metadata(trailing)
        listener = quota_listener.get()
        if code == grpc.StatusCode.RESOURCE_EXHAUSTED and listener is not None:
            listener(details)
        await abort(context, code, details)
        raise AssertionError("unreachable: abort raises")

    return handler
