"""What the hub's errors carry beyond their status code, read from an RpcError's trailing metadata or details.

Re-exported by memhub/client.py, where callers import them from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

import grpc

from memhub.feed.metadata import RESUME_CURSOR_KEY


def _trailing(error: grpc.RpcError) -> list[tuple[str, str | bytes]]:
    """An error's trailing metadata as (key, value) pairs, from the sync channel's errors (grpc.Call) and
    grpc.aio's (AioRpcError, whose trailing_metadata() is a grpc.aio.Metadata) alike."""
    read = getattr(error, "trailing_metadata", None)
    # Entries are (key, value) pairs at run time (namedtuples, or tuples in grpc.aio); the stubs declare the
    # sync ones as objects with key and value attributes only.
    pairs = cast("Iterable[tuple[str, str | bytes]] | None", read() if callable(read) else None)
    return list(pairs or ())


def resume_cursor(error: grpc.RpcError) -> str:
    """The cursor an ended SubscribeChanges stream says to resume from ("" when it named none)."""
    return next((str(v) for k, v in _trailing(error) if k == RESUME_CURSOR_KEY), "")


@dataclass(frozen=True)
class VersionConflict:
    """What an ABORTED answer to an expected version says (memory.proto, "Versions")."""

    field: str
    """The expectation that failed, e.g. "memories[0].expected_version" or "expected_versions[<id>]"."""
    current_version: int
    """The version now; 0 when no active memory holds the subject any more."""
    current_id: str
    """The memory that holds it now ("" when none)."""


def version_conflict(error: grpc.RpcError) -> VersionConflict | None:
    """The version conflict an error reports, from its trailing metadata; None for any other error (including
    transient ABORTED conflicts, which are safe to retry as they are)."""
    code = getattr(error, "code", None)  # a bare RpcError raised by other code has none
    if not callable(code) or code() != grpc.StatusCode.ABORTED:
        return None
    trailing = {key: value for key, value in _trailing(error) if isinstance(value, str)}
    if "memhub-current-version" not in trailing:
        return None
    try:
        current = int(trailing["memhub-current-version"])
    except ValueError:
        return None
    return VersionConflict(trailing.get("memhub-conflict-field", ""), current, trailing.get("memhub-current-id", ""))


_CURRENT_VERSION = re.compile(r"current version (\d+)")


def conflict_version(error: grpc.RpcError) -> int | None:
    """The current version an ABORTED session-state put or delete reports (0: the key is not set); None for
    any other error."""
    if error.code() != grpc.StatusCode.ABORTED:
        return None
    match = _CURRENT_VERSION.search(error.details() or "")
    return int(match.group(1)) if match else None
