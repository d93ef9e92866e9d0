"""Map pymilvus and gRPC failures to the index's own errors, with advice.

pymilvus raises ``MilvusException(code=2)`` ("Fail connecting to server")
both when a server is down at connect time and when it dies later (it
reconnects on the next call and fails fast); bad URIs and locked
milvus-lite directories arrive as ``ConnectionConfigException``; a hung
server ends in DEADLINE_EXCEEDED once the per-call timeout passes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import grpc
from pymilvus.client.types import Status
from pymilvus.exceptions import (
    ConnectError,
    ConnectionConfigException,
    MilvusException,
    MilvusUnavailableException,
)

from hub.index.errors import IndexBackendError, IndexUnavailable

_UNREACHABLE_GRPC = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
}


def is_embedded(uri: str) -> bool:
    """True for a milvus-lite data directory URI (pymilvus treats ``*.db`` as one)."""
    return uri.endswith(".db")


def redact(uri: str) -> str:
    """The URI without user:password, safe for messages and logs."""
    if "://" not in uri:
        return uri
    parts = urlsplit(uri)
    if parts.username is None and parts.password is None:
        return uri
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def advice(uri: str) -> str:
    """What to check when ``uri`` cannot be used."""
    if is_embedded(uri):
        return (
            "check that the parent directory exists and is writable, and that no other process "
            "uses this data directory (milvus-lite allows one process per directory; to share it, "
            "run `milvus-lite server --data-dir DIR --port PORT` and point the hub at "
            "http://127.0.0.1:PORT)"
        )
    return (
        "check that the Milvus server is running and reachable at this address, that the port "
        "and scheme (http/https) are right, and that the token is valid"
    )


def is_unreachable(exc: BaseException) -> bool:
    """True when ``exc`` (or what caused it) says Milvus cannot be reached or refuses our credentials."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, ConnectionConfigException | ConnectError | MilvusUnavailableException):
            return True
        if isinstance(cur, MilvusException) and cur.code == Status.CONNECT_FAILED:
            return True
        if isinstance(cur, grpc.RpcError) and hasattr(cur, "code") and cur.code() in _UNREACHABLE_GRPC:
            return True
        cur = cur.__cause__ or cur.__context__
    return False


@contextlib.contextmanager
def translated(uri: str, what: str) -> Iterator[None]:
    """Run a pymilvus call; re-raise its failure as IndexUnavailable or IndexBackendError.

    ``what`` names the operation and collection for the message.
    """
    try:
        yield
    except IndexBackendError:
        raise
    except Exception as exc:
        if is_unreachable(exc):
            raise IndexUnavailable(
                f"Milvus at {redact(uri)} is unavailable during {what}: {_reason(exc)}; {advice(uri)}"
            ) from exc
        if isinstance(exc, MilvusException):
            raise IndexBackendError(f"Milvus at {redact(uri)} failed {what}: {_reason(exc)}") from exc
        raise


def _reason(exc: BaseException) -> str:
    if isinstance(exc, MilvusException):
        return exc.message or type(exc).__name__
    return str(exc) or type(exc).__name__
