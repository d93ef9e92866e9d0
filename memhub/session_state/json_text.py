"""Stored JSON shown to readers: a terminal (the CLI) or a model's context (the MCP bridge).

A value is another agent's text. JSON lets a string hold raw DEL, C1 control characters (U+0080 to
U+009F, which some terminals obey) and the Unicode line separators; written as \\uXXXX escapes they
are the same JSON and nothing a reader acts on or sees as a new line.
"""

from __future__ import annotations

import json


def _unsafe(code: int, keep_whitespace: bool) -> bool:
    if code < 0x20:
        return not (keep_whitespace and code in (0x09, 0x0A, 0x0D))
    return 0x7F <= code < 0xA0 or code in (0x2028, 0x2029)


def safe_json_text(value: str, *, keep_whitespace: bool = True) -> str:
    """``value`` (JSON text) with control characters written as \\uXXXX escapes: equal JSON.

    Raw control characters can only stand inside strings (between tokens JSON allows space, tab,
    newline and carriage return, kept unless ``keep_whitespace`` is false).
    """
    return "".join(f"\\u{ord(ch):04x}" if _unsafe(ord(ch), keep_whitespace) else ch for ch in value)


def one_line(value_json: str) -> str:
    """The value on one line, non-ASCII text as it is, nothing that could start a line of its own."""
    compact = json.dumps(json.loads(value_json), ensure_ascii=False, separators=(",", ":"))
    return safe_json_text(compact, keep_whitespace=False)
