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


def fingerprint(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def encode(created_at: datetime, memory_id: str, filter_fingerprint: str) -> str:
    raw = json.dumps({"c": created_at.isoformat(), "i": memory_id, "f": filter_fingerprint}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode(token: str, filter_fingerprint: str) -> tuple[datetime, str] | None:
    """The keyset position in `token`, None for an empty token; InvalidArgument if it is not ours or for other filters."""
    if not token:
        return None
    try:
        padded = token + "=" * (-len(token) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        created, memory_id, fp = datetime.fromisoformat(data["c"]), str(data["i"]), str(data["f"])
    except (ValueError, KeyError, TypeError, UnicodeError, binascii.Error):
        raise InvalidArgument(_FIELD, "is not a page token issued by this hub; start again without page_token") from None
    if fp != filter_fingerprint:
        raise InvalidArgument(_FIELD, "was issued for different filters; repeat the original filters or start again without page_token")
    return created, memory_id
