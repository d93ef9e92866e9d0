"""Field checks of the session-state requests: ids, keys, JSON values, TTLs, versions.

Like memhub/core/validation.py, each function takes the value and the field
path to name in the error, and returns the value to use or raises
InvalidArgument saying what would be accepted.
"""

from __future__ import annotations

import json
import re
from typing import Any

from memhub.core.validation import no_control_characters
from memhub.errors import InvalidArgument
from memhub.session_state.config import MAX_JSON_DEPTH

MAX_ID_CHARS = 128
SESSION_ID_RULE = "1 to 128 characters of letters, digits and . _ : - starting with a letter or digit (e.g. task-4312)"
KEY_RULE = "1 to 128 characters of letters, digits and . _ : / - starting with a letter or digit (e.g. plan or step/3/result)"
# The same alphabet as request ids (memhub/core/validation.py): ASCII only, so no look-alikes, and nothing a
# terminal or a log line would interpret. Keys may also hold '/', for hierarchies such as step/3/result.
SESSION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
KEY_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$"
_SESSION_ID = re.compile(SESSION_ID_PATTERN.strip("^$"))
_KEY = re.compile(KEY_PATTERN.strip("^$"))
_KEY_PREFIX = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._:/-]{0,127})?")


def session_id(value: str, field: str) -> str:
    """Required: SESSION_ID_RULE."""
    if not value:
        raise InvalidArgument(field, f"is required: {SESSION_ID_RULE}")
    no_control_characters(value, field)
    if _SESSION_ID.fullmatch(value) is None:
        raise InvalidArgument(field, f"{value[:64]!r} is not a session id: {SESSION_ID_RULE}")
    return value


def key(value: str, field: str) -> str:
    """Required: KEY_RULE."""
    if not value:
        raise InvalidArgument(field, f"is required: {KEY_RULE}")
    no_control_characters(value, field)
    if _KEY.fullmatch(value) is None:
        raise InvalidArgument(field, f"{value[:64]!r} is not a key: {KEY_RULE}")
    return value


def key_prefix(value: str, field: str) -> str:
    """Optional ('' lists every key): the start of a key, so the key rule's characters and length."""
    no_control_characters(value, field)
    if _KEY_PREFIX.fullmatch(value) is None:
        raise InvalidArgument(field, f"{value[:64]!r} cannot start a key: keys are {KEY_RULE}")
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (RFC 8259 has no NaN or Infinity; send null or a string)")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                # Readers disagree about which of two equal keys wins; refusing beats guessing.
                raise ValueError(f"the object key {name[:64]!r} appears twice")
            seen.add(name)
    return obj


def _depth(value: Any) -> int:
    """Arrays and objects nested in one another at the deepest point (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def value_json(text: str, field: str, max_bytes: int) -> int:
    """Check that ``text`` is one JSON text within the limits; returns its UTF-8 size in bytes.

    The size is checked before parsing, so an oversized value costs no parse.
    """
    if not text:
        raise InvalidArgument(field, 'is required: one JSON value, such as {"step": 3} or "draft" or 42')
    size = len(text.encode("utf-8"))
    if size > max_bytes:
        raise InvalidArgument(field, f"is {size:,} bytes of UTF-8; the limit is {max_bytes:,}")
    try:
        parsed = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_no_duplicates)
    except RecursionError:
        raise InvalidArgument(field, f"is nested too deeply; the limit is {MAX_JSON_DEPTH} arrays or objects") from None
    except ValueError as exc:  # json.JSONDecodeError is a ValueError, as are the hooks' refusals
        raise InvalidArgument(field, f"is not valid JSON: {exc}") from None
    depth = _depth(parsed)
    if depth > MAX_JSON_DEPTH:
        raise InvalidArgument(field, f"is nested {depth} deep; the limit is {MAX_JSON_DEPTH} arrays or objects")
    return size


def ttl_seconds(seconds: int, nanos: int, present: bool, field: str, default_s: int, max_s: int) -> float:
    """The entry's lifetime in seconds: the default when unset, else 1 second to ``max_s``."""
    if not present:
        return float(default_s)
    # A Duration's nanos lie within one second and share the seconds' sign; anything else is no duration at all.
    if not -1_000_000_000 < nanos < 1_000_000_000 or (seconds > 0 and nanos < 0) or (seconds < 0 and nanos > 0):
        raise InvalidArgument(field, f"has nanos {nanos}, not a valid duration; use 1 to {max_s:,} seconds")
    total = seconds + nanos / 1e9
    if not 1.0 <= total <= max_s:
        raise InvalidArgument(field, f"is {total:g} seconds; use 1 to {max_s:,} seconds, or leave it unset for {default_s:,}")
    return total


def expected_version(value: int | None, field: str, *, allow_zero: bool = True) -> int | None:
    """None (unconditional), 0 (must not exist; only where ``allow_zero``) or a version."""
    if value is None:
        return None
    low = 0 if allow_zero else 1
    if value < low:
        meaning = "0 (the key must not be set) or a version" if allow_zero else "a version (1 or more)"
        raise InvalidArgument(field, f"is {value}; use {meaning}, or leave it unset")
    return value
