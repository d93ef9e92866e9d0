"""Names from a framework (LangGraph labels, ADK app and user ids) as memhub namespace segments.

A name already in memhub's segment alphabet (lower-case letters, digits, "-" and "_") is used as it is; any
other is written "x.<base32 of its UTF-8>", which no plain name can look like because "." never appears in one.
The mapping is one-to-one, so two names never share a namespace.
"""

from __future__ import annotations

import base64
import re

MAX_SEGMENT_CHARS = 64
_PLAIN = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


def is_plain(text: str) -> bool:
    return _PLAIN.fullmatch(text) is not None


def segment(text: str, what: str = "name") -> str:
    """``text`` as one memhub namespace segment; ValueError when even its encoding is too long."""
    encoded = text if is_plain(text) else "x." + base64.b32encode(text.encode()).decode().rstrip("=").lower()
    if len(encoded) > MAX_SEGMENT_CHARS:
        raise ValueError(
            f"{what} {text[:40]!r} is too long for memhub: names of lower-case letters, digits, '-' and '_' may have "
            f"64 characters, others about 38 bytes of UTF-8"
        )
    return encoded
