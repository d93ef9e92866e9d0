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

from memhub.index.errors import IndexBackendError, IndexUnavailable

# Milvus's error code for "collection not loaded" (merr.ErrCollectionNotLoaded).
_COLLECTION_NOT_LOADED = 101

_UNREACHABLE_GRPC = {
    grpc.StatusCode.UNAVAILABLE,
    # pymilvus's connection manager answers a failed call by opening a new channel and closing the old one: a call
    # still on the old channel (its own retry, or another thread's) ends CANCELLED. Seen when an index server was
    # killed: one search in ~25 failed CANCELLED instead of UNAVAILABLE, and was not treated as the outage it is.
    grpc.StatusCode.CANCELLED,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
}


def is_embedded(uri: str) -> bool:
    """True for an embedded Milvus Lite data file (``<dir>/<name>.db``), which the hub serves itself."""
    return "://" not in uri and uri.endswith(".db")


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
            "check that the directory exists and is writable, and that no other process uses this "
            "data file (Milvus Lite allows one process per file; to share it between hubs, run "
            "`memhub index-server --data-dir DIR --port PORT` and point every hub at "
            "MEMHUB_MILVUS_URI=http://127.0.0.1:PORT)"
        )
    return (
        "check that the Milvus server is running and reachable at this address, that the port "
        "and scheme (http/https) are right, and that the token is valid"
    )


def timeout_advice(uri: str) -> str:
    """What to check when calls to ``uri`` run past their deadline: the index is too slow, or stopped answering."""
    where = "the milvus process beside the hub" if is_embedded(uri) else "the Milvus server (and the network to it)"
    return (
        f"it is overloaded, stuck or no longer reachable: check that {where} still runs and how busy its CPU is; if "
        "it is busy with searches, spread them over more hubs or move the index to a Milvus server "
        "(docs/operating/sizing.md)"
    )


def _rpc_code(exc: BaseException) -> grpc.StatusCode | None:
    """The status code of a gRPC call's error, None for anything else."""
    return exc.code() if isinstance(exc, grpc.RpcError) and hasattr(exc, "code") else None


def timed_out(exc: BaseException) -> bool:
    """True when ``exc`` (or what caused it) is a gRPC call that ran past its deadline."""
    return any(_rpc_code(cur) == grpc.StatusCode.DEADLINE_EXCEEDED for cur in _chain(exc))


def is_not_loaded(exc: BaseException) -> bool:
    """True when ``exc`` (or its cause) says the collection is not loaded: e.g. a Milvus server restarted and released it."""
    for cur in _chain(exc):
        if isinstance(cur, MilvusException):
            text = (cur.message or "").lower()
            if cur.code == _COLLECTION_NOT_LOADED or "not loaded" in text or "released" in text:
                return True
    return False


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def is_unreachable(exc: BaseException) -> bool:
    """True when ``exc`` (or what caused it) says Milvus cannot be reached or refuses our credentials."""
    for cur in _chain(exc):
        if isinstance(cur, ConnectionConfigException | ConnectError | MilvusUnavailableException):
            return True
        if isinstance(cur, MilvusException) and cur.code == Status.CONNECT_FAILED:
            return True
        if _rpc_code(cur) in _UNREACHABLE_GRPC:
            return True
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
        if timed_out(exc):
            raise IndexUnavailable(
                f"Milvus at {redact(uri)} did not answer in time during {what} (the call's deadline passed); "
                f"{timeout_advice(uri)}"
            ) from exc
        if is_unreachable(exc):
            raise IndexUnavailable(
                f"Milvus at {redact(uri)} is unavailable during {what}: {_reason(exc)}; {advice(uri)}"
            ) from exc
        # Anything else a pymilvus call raises (a refused request, an RPC error
        # of another code, a bug in the client) is still an index failure: the
        # caller answers UNAVAILABLE or falls back, never INTERNAL.
        raise IndexBackendError(f"Milvus at {redact(uri)} failed {what}: {_reason(exc)}") from exc


def _reason(exc: BaseException) -> str:
    if isinstance(exc, MilvusException):
        return exc.message or type(exc).__name__
    return str(exc) or type(exc).__name__
