"""Maps the error catalog (hub.errors) to gRPC status codes."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TypeVar

import grpc

from hub import errors
from hub.index import IndexBackendError

log = logging.getLogger(__name__)

_CODES: dict[type[errors.HubError], grpc.StatusCode] = {
    errors.InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    errors.NotFound: grpc.StatusCode.NOT_FOUND,
    errors.FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
    errors.PermissionDenied: grpc.StatusCode.PERMISSION_DENIED,
    errors.Unauthenticated: grpc.StatusCode.UNAUTHENTICATED,
    errors.Unavailable: grpc.StatusCode.UNAVAILABLE,
    errors.Aborted: grpc.StatusCode.ABORTED,
}

F = TypeVar("F", bound=Callable)


def code_for(exc: errors.HubError) -> grpc.StatusCode:
    for cls in type(exc).__mro__:
        if cls in _CODES:
            return _CODES[cls]
    return grpc.StatusCode.INTERNAL


def translate_errors(method: F) -> F:
    """Decorate a servicer method: HubError -> its status code; store outages -> UNAVAILABLE; bugs -> INTERNAL (logged)."""

    @functools.wraps(method)
    def wrapper(self, request, context: grpc.ServicerContext):  # noqa: ANN001, ANN202
        try:
            return method(self, request, context)
        except errors.HubError as exc:
            context.abort(code_for(exc), str(exc))
        except IndexBackendError as exc:
            # Any index failure is the store's, not the caller's: retrying later may work.
            log.warning("retrieval index failure during %s: %s", method.__name__, exc)
            context.abort(grpc.StatusCode.UNAVAILABLE, "the retrieval index is unavailable; retry shortly")
        except Exception as exc:
            from sqlalchemy.exc import OperationalError

            if isinstance(exc, OperationalError):
                log.warning("Postgres unavailable during %s: %s", method.__name__, exc)
                context.abort(grpc.StatusCode.UNAVAILABLE, "the database is unavailable; retry shortly")
            log.exception("internal error in %s", method.__name__)
            context.abort(grpc.StatusCode.INTERNAL, "internal error; the hub log has the details")

    return wrapper  # type: ignore[return-value]
