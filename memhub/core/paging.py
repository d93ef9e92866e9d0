"""Opaque page tokens for list calls.

A token carries the keyset position (created_at, id) of the last item served
and a fingerprint of the filters it was issued for: AIP-158 says a token is
only valid with the same request, so a token replayed with other filters is
refused instead of silently skipping or repeating items. Tokens grant
nothing: filters and permissions are applied again on every page.

Tokens are not signed, so every field is checked before it reaches a query:
a token a client edited (a non-UUID id, a timestamp without a zone, a key
that is not a namespace, an audit id past bigint) is INVALID_ARGUMENT, the
same answer as for any other token this hub did not issue.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from memhub.errors import InvalidArgument

T = TypeVar("T")

MAX_TOKEN_CHARS = 1024
"""Longer tokens are refused before decoding; the hub's own are under 200 characters."""

_FIELD = "page_token"
_NOT_OURS = "is not a page token issued by this hub; start again without page_token"
_OTHER_FILTERS = "was issued for different filters; repeat the original filters or start again without page_token"
_BIGINT_MAX = 2**63 - 1


def fingerprint(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _encode(payload: dict[str, str], filter_fingerprint: str) -> str:
    raw = json.dumps(payload | {"f": filter_fingerprint}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _not_ours() -> InvalidArgument:
    return InvalidArgument(_FIELD, _NOT_OURS)


def _decode(token: str, filter_fingerprint: str, keys: frozenset[str]) -> dict[str, str]:
    """The token's fields: exactly ``keys`` plus "f", every value a string; the fingerprint must match."""
    if len(token) > MAX_TOKEN_CHARS:
        raise _not_ours()
    try:
        padded = token + "=" * (-len(token) % 4)
        # validate: without it, characters outside the alphabet are skipped, not refused.
        data = json.loads(base64.b64decode(padded.encode("ascii"), altchars=b"-_", validate=True))
    except (ValueError, UnicodeError, binascii.Error):
        raise _not_ours() from None
    if not isinstance(data, dict) or set(data) != keys | {"f"} or not all(isinstance(v, str) for v in data.values()):
        raise _not_ours()
    if data["f"] != filter_fingerprint:
        raise InvalidArgument(_FIELD, _OTHER_FILTERS)
    return data


def encode(created_at: datetime, memory_id: str, filter_fingerprint: str) -> str:
    """A token for the (created_at, id) keyset of memory lists."""
    return _encode({"c": created_at.isoformat(), "i": memory_id}, filter_fingerprint)


def decode(token: str, filter_fingerprint: str) -> tuple[datetime, str] | None:
    """The keyset position in `token`, None for an empty token; InvalidArgument if it is not ours or for other filters."""
    if not token:
        return None
    data = _decode(token, filter_fingerprint, frozenset({"c", "i"}))
    try:
        created_at = datetime.fromisoformat(data["c"])
        memory_id = uuid.UUID(data["i"])
    except ValueError:
        raise _not_ours() from None
    # The hub writes aware timestamps; comparing a naive one with timestamptz would be the server's local time.
    if created_at.tzinfo is None or str(memory_id) != data["i"]:
        raise _not_ours()
    return created_at, data["i"]


def encode_key(key: str, filter_fingerprint: str) -> str:
    """A token for a single-column keyset (namespace name, audit id)."""
    return _encode({"k": key}, filter_fingerprint)


def decode_key(token: str, filter_fingerprint: str, parse: Callable[[str], T]) -> T | None:
    """The key in `token` as ``parse`` reads it (None for an empty token); ``parse`` raises ValueError or
    InvalidArgument for a key this hub would not have issued."""
    if not token:
        return None
    key = _decode(token, filter_fingerprint, frozenset({"k"}))["k"]
    try:
        return parse(key)
    except (ValueError, InvalidArgument):
        raise _not_ours() from None


def audit_id(key: str) -> int:
    """An audit-log id as a token carries it: decimal digits, within bigint."""
    if not key.isascii() or not key.isdigit() or int(key) > _BIGINT_MAX:
        raise ValueError(key)
    return int(key)
