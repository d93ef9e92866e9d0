"""Namespace paths: the unit of ownership and of permission.

Rules (checked before anything touches a store):
- segments separated by "/", 1 to 8 segments, whole path at most 255 chars;
- a segment is 1 to 64 chars of lower-case ASCII letters, digits, "-", "_"
  and "."; it starts with a letter or a digit (so "." and ".." can never be
  segments);
- upper case is rejected, not folded: folding would let "Team-A" and
  "team-a" silently meet, and policies must see exactly what was stored;
- no leading, trailing or doubled "/", no percent-encoding, no whitespace,
  no non-ASCII (which also rules out Unicode look-alikes).
"""

from __future__ import annotations

import re

from memhub.errors import InvalidArgument

MAX_PATH_CHARS = 255
MAX_SEGMENTS = 8
MAX_SEGMENT_CHARS = 64
_SEGMENT = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def validate_namespace(value: str, field: str = "namespace") -> str:
    """Return `value` if it is a well-formed namespace path, else raise InvalidArgument naming `field`."""
    if not value:
        raise InvalidArgument(field, "is required (a path such as 'acme/support')")
    if len(value) > MAX_PATH_CHARS:
        raise InvalidArgument(field, f"is {len(value)} characters; the limit is {MAX_PATH_CHARS}")
    segments = value.split("/")
    if len(segments) > MAX_SEGMENTS:
        raise InvalidArgument(field, f"has {len(segments)} segments; the limit is {MAX_SEGMENTS}")
    for seg in segments:
        if not seg:
            raise InvalidArgument(field, f"{value!r} has an empty segment (leading, trailing or doubled '/')")
        if seg in (".", ".."):
            raise InvalidArgument(field, f"{value!r} has a {seg!r} segment; relative segments are not allowed")
        if len(seg) > MAX_SEGMENT_CHARS:
            raise InvalidArgument(field, f"segment {seg[:16]!r}... is {len(seg)} characters; the limit is {MAX_SEGMENT_CHARS}")
        if _SEGMENT.fullmatch(seg) is None:
            raise InvalidArgument(field, f"segment {seg!r} {_describe_bad_segment(seg)}")
    return value


def _describe_bad_segment(seg: str) -> str:
    if not seg.isascii():
        return "has non-ASCII characters; use a-z, 0-9, '-', '_' and '.'"
    if any(not (c.isalnum() or c in "._-") for c in seg):
        return "may only contain a-z, 0-9, '-', '_' and '.'"
    if any(c.isupper() for c in seg):
        return "has upper-case letters; namespaces are lower-case"
    return "must start with a letter or a digit"


def is_within(namespace: str, root: str) -> bool:
    """True when `namespace` is `root` or one of its descendants (segment-wise, so 'ab' is not within 'a')."""
    return namespace == root or namespace.startswith(root + "/")


def minimal_roots(roots: list[str]) -> list[str]:
    """Drop roots covered by another root in the list ('a' covers 'a/b'); keep order of first appearance."""
    unique = list(dict.fromkeys(roots))
    return [r for r in unique if not any(o != r and is_within(r, o) for o in unique)]
