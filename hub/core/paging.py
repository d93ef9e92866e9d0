"""Opaque page tokens for list calls.

A token carries the keyset position (created_at, id) of the last item served
and a fingerprint of the filters it was issued for: AIP-158 says a token is
only valid with the same request, so a token replayed with other filters is
refused instead of silently skipping or repeating items. Tokens grant
nothing: filters and permissions are applied again on every page.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from datetime import datetime

from hub.errors import InvalidArgument

_FIELD = "page_token"
_NOT_OURS = "is not a page token issued by this hub; start again without page_token"
_OTHER_FILTERS = "was issued for different filters; repeat the original filters or start again without page_token"


def fingerprint(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _encode(payload: dict[str, str], filter_fingerprint: str) -> str:
    raw = json.dumps(payload | {"f": filter_fingerprint}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode(token: str, filter_fingerprint: str) -> dict:
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        fp = str(data["f"])
    except (ValueError, KeyError, TypeError, UnicodeError, binascii.Error):
        raise InvalidArgument(_FIELD, _NOT_OURS) from None
    if fp != filter_fingerprint:
        raise InvalidArgument(_FIELD, _OTHER_FILTERS)
    return data


def encode(created_at: datetime, memory_id: str, filter_fingerprint: str) -> str:
    """A token for the (created_at, id) keyset of memory lists."""
    return _encode({"c": created_at.isoformat(), "i": memory_id}, filter_fingerprint)


def decode(token: str, filter_fingerprint: str) -> tuple[datetime, str] | None:
    """The keyset position in `token`, None for an empty token; InvalidArgument if it is not ours or for other filters."""
    if not token:
        return None
    data = _decode(token, filter_fingerprint)
    try:
        return datetime.fromisoformat(data["c"]), str(data["i"])
    except (ValueError, KeyError, TypeError):
        raise InvalidArgument(_FIELD, _NOT_OURS) from None


def encode_key(key: str, filter_fingerprint: str) -> str:
    """A token for a single-column keyset (namespace name, audit id)."""
    return _encode({"k": key}, filter_fingerprint)


def decode_key(token: str, filter_fingerprint: str) -> str | None:
    if not token:
        return None
    data = _decode(token, filter_fingerprint)
    if not isinstance(data.get("k"), str):
        raise InvalidArgument(_FIELD, _NOT_OURS)
    return data["k"]
