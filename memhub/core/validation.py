"""Field checks for everything that arrives from outside.

Each function takes the value and the field path to name in the error
("memories[2].tags[0]"), and returns the value to use (with defaults
applied) or raises InvalidArgument. Limits are stated in the messages so a
caller can fix the request without reading the source.
"""

from __future__ import annotations

import math
import re
import unicodedata
import uuid
from collections.abc import Sequence
from datetime import datetime

from memhub.core.model import Kind, MemoryType
from memhub.errors import InvalidArgument

MAX_CONTENT_CHARS = 16_384
MAX_QUERY_CHARS = 4_096
MAX_TAGS = 32
MAX_ENTITIES = 32
MAX_ENTITY_CHARS = 128
MAX_BATCH = 100
MAX_WRITE_CONTENT_BYTES = 3 * 1024 * 1024
"""Content bytes (UTF-8) in one write request. The reply echoes every memory it wrote, so this keeps a
reply under 4 MiB, gRPC clients' default receive limit: 100 memories of 16,384 Chinese characters
(~4.7 MiB) would otherwise be committed and then be too big for the writer to receive."""
MAX_FORGET_IDS = 1_000
MAX_REASON_CHARS = 1_024
MAX_TOP_K = 100
DEFAULT_TOP_K = 10
MAX_PAGE_SIZE = 500
DEFAULT_PAGE_SIZE = 50
DEFAULT_IMPORTANCE = 3
MAX_SESSION_CHARS = 128
MAX_DERIVED_FROM = 100
"""Sources one memory may name (a consolidated memory names the episodes it came from)."""
MAX_DERIVED_FROM_PER_REQUEST = 1_000
"""Sources one write request may name in all: each is looked up and its read permission checked."""
MAX_ENUM_VALUES = 16
"""Entries in a repeated enum filter (kinds, types, statuses, channels): each has at most 8 distinct values."""
MAX_NAMESPACE_ROOTS = 64
"""Namespaces a search, list or forget may name."""
MAX_AGENT_ID_CHARS = 128

_SUBJECT_SEGMENT = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


def _control_character(value: str) -> str | None:
    """The first control character in ``value`` as U+XXXX, or None.

    Control characters (C0, DEL, C1, and the Unicode line and paragraph
    separators) in a field that is printed on one line let a stored value
    start a new line of its own in a reader's output: a session id holding
    "\\n2. [... by bob ...]" would pass for another entry.
    """
    for ch in value:
        code = ord(ch)
        if code < 0x20 or 0x7F <= code < 0xA0 or code in (0x2028, 0x2029):
            return f"U+{code:04X}"
    return None


def no_control_characters(value: str, field: str) -> str:
    """Refuse a one-line field (id, session id, subject key, tag, entity) holding a control character."""
    found = _control_character(value)
    if found is not None:
        raise InvalidArgument(
            field, f"contains the control character {found} (newlines, tabs and other control characters are not allowed here)"
        )
    return value


def _check_text(value: str, field: str, max_chars: int) -> str:
    if "\x00" in value:
        # Postgres text cannot hold NUL; refusing beats silently truncating.
        raise InvalidArgument(field, "contains a NUL character")
    if not value.strip():
        raise InvalidArgument(field, "is required and must not be blank")
    if len(value) > max_chars:
        raise InvalidArgument(field, f"is {len(value)} characters; the limit is {max_chars}")
    return value


def content(value: str, field: str) -> str:
    """Memory content: 1 to MAX_CONTENT_CHARS characters, not blank."""
    return _check_text(value, field, MAX_CONTENT_CHARS)


def query_text(value: str, field: str) -> str:
    return _check_text(value, field, MAX_QUERY_CHARS)


def reason(value: str, field: str) -> str:
    return _check_text(value, field, MAX_REASON_CHARS)


MAX_TAG_CHARS = 64
_TAG_PUNCTUATION = frozenset("._:/@+-")
TAG_RULE = (
    "1 to 64 characters of letters (any script), digits and . _ : / @ + -, starting with a letter or digit, "
    "no spaces (e.g. billing, ticket:4312, v2.7, café, 中文)"
)
"""The tag rule in words, for error messages ("... is not a valid tag: <TAG_RULE>") and schema descriptions."""

# Everything but ASCII, C1 controls, the no-break space and the other Unicode spaces and line separators.
_NON_ASCII = r"[^\x00-\xA0\u1680\u2000-\u200B\u2028\u2029\u202F\u205F\u3000\uFEFF]"
TAG_PATTERN = rf"^(?:[A-Za-z0-9]|{_NON_ASCII})(?:[A-Za-z0-9._:/@+\-]|{_NON_ASCII}){{0,63}}$"
"""The tag rule as a JSON Schema "pattern" (ECMA-262, no flags; also valid for Python's re).

ECMA-262 without the "u" flag has no "Unicode letter" class, so this is
exact for ASCII and admits every non-ASCII character except spaces and
controls; ``tag`` below is the authority (a '×' or '。' passes the pattern
and is refused by the hub). Without the "u" flag a character outside the
BMP counts twice towards the 64.
"""


def _tag_char_ok(ch: str, first: bool) -> bool:
    """A letter of any script or a decimal digit; after the first character also a combining mark
    (Devanagari, Thai and others write words with them) or one of . _ : / @ + -."""
    category = unicodedata.category(ch)
    if category[0] == "L" or category == "Nd":
        return True
    return not first and (category[0] == "M" or ch in _TAG_PUNCTUATION)


def tag(value: str, field: str) -> str:
    """One tag, NFC-normalised (so 'café' typed with a combining accent is the same tag as the precomposed one)."""
    no_control_characters(value, field)
    normal = unicodedata.normalize("NFC", value)
    if not 1 <= len(normal) <= MAX_TAG_CHARS or not all(_tag_char_ok(ch, i == 0) for i, ch in enumerate(normal)):
        raise InvalidArgument(field, f"{value[:80]!r} is not a valid tag: {TAG_RULE}")
    return normal


def tags(values: Sequence[str], field: str) -> tuple[str, ...]:
    """Up to MAX_TAGS tags (see TAG_RULE), each NFC-normalised; duplicates dropped, order kept."""
    if len(values) > MAX_TAGS:
        raise InvalidArgument(field, f"has {len(values)} tags; the limit is {MAX_TAGS}")
    return tuple(dict.fromkeys(tag(t, f"{field}[{i}]") for i, t in enumerate(values)))


def entities(values: Sequence[str], field: str) -> tuple[str, ...]:
    """Up to MAX_ENTITIES names (people, products, ids), each 1 to MAX_ENTITY_CHARS characters."""
    if len(values) > MAX_ENTITIES:
        raise InvalidArgument(field, f"has {len(values)} entries; the limit is {MAX_ENTITIES}")
    for i, name in enumerate(values):
        no_control_characters(name, f"{field}[{i}]")
        _check_text(name, f"{field}[{i}]", MAX_ENTITY_CHARS)
    return tuple(dict.fromkeys(values))


def bounded(count: int, field: str, limit: int, what: str) -> None:
    """Refuse a repeated field with more than ``limit`` entries, before any entry is looked at."""
    if count > limit:
        raise InvalidArgument(field, f"has {count} {what}; the limit is {limit}")


def derived_from(values: Sequence[str], field: str) -> tuple[str, ...]:
    """Up to MAX_DERIVED_FROM memory ids; duplicates dropped, order kept."""
    bounded(len(values), field, MAX_DERIVED_FROM, "ids")
    return tuple(dict.fromkeys(memory_id(x, f"{field}[{i}]") for i, x in enumerate(values)))


MAX_VERSION = 2**53
"""Largest expected version a request may name (exact in a JSON number, far above any memory's version)."""


def version(value: int, field: str, *, minimum: int) -> int:
    """An expected version: ``minimum`` (0 for "expect none", else 1) to MAX_VERSION."""
    if not minimum <= value <= MAX_VERSION:
        raise InvalidArgument(field, f"is {value}; use {minimum} to {MAX_VERSION} (a version Memory.version showed)")
    return value


def importance(value: int, field: str) -> int:
    if value == 0:
        return DEFAULT_IMPORTANCE
    if not 1 <= value <= 5:
        raise InvalidArgument(field, f"is {value}; use 1 (trivia) to 5 (critical), or 0 for the default 3")
    return value


def confidence(value: float | None, field: str) -> float:
    if value is None:
        return 1.0
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise InvalidArgument(field, f"is {value}; use a number from 0 to 1")
    return float(value)


KINDS_OF_TYPE: dict[MemoryType, tuple[Kind, ...]] = {
    MemoryType.EVENT: (Kind.EPISODIC,),
    MemoryType.OUTCOME: (Kind.EPISODIC,),
    MemoryType.NOTE: (Kind.EPISODIC, Kind.SEMANTIC, Kind.PROCEDURAL),
    MemoryType.FACT: (Kind.SEMANTIC,),
    MemoryType.PREFERENCE: (Kind.SEMANTIC,),
    MemoryType.CORRECTION: (Kind.SEMANTIC, Kind.PROCEDURAL),
    MemoryType.RULE: (Kind.SEMANTIC, Kind.PROCEDURAL),
    MemoryType.LESSON: (Kind.PROCEDURAL, Kind.SEMANTIC),
}
"""The kinds each type may have; the first is the kind a write that names only the type gets.

One rule for every caller (gRPC, CLI, MCP bridge, import). From the kinds'
meanings: an event or outcome happened (episodic); a fact or preference is
true (semantic; get_preferences asks for semantic preferences, so an
episodic one would never be found); a rule, correction or lesson may be
something true or how to do something; a note is any of the three.
"""
KIND_OF_TYPE: dict[MemoryType, Kind] = {t: kinds[0] for t, kinds in KINDS_OF_TYPE.items()}
"""The kind a memory gets when the writer names only its type."""


def _one_of(kinds: Sequence[Kind]) -> str:
    return " or ".join(k.value for k in kinds)


def kind_for_type(kind: Kind | None, type_: MemoryType, field: str) -> Kind:
    """The memory's kind: ``kind`` when it fits ``type_``, the type's own kind when ``kind`` is None.

    The message speaks the words a person types (``--kind semantic``), not enum names.
    """
    allowed = KINDS_OF_TYPE[type_]
    if kind is None:
        return allowed[0]
    if kind in allowed:
        return kind
    article = "an" if allowed[0] is Kind.EPISODIC else "a"
    unset = "leave kind unset" if len(allowed) == 1 else f"leave kind unset ({allowed[0].value})"
    raise InvalidArgument(
        field,
        f"is {kind.value}, but type {type_.value!r} is {article} {_one_of(allowed)} memory; "
        f"{unset} or set {' or '.join(f'--kind {k.value}' for k in allowed)}",
    )


def subject_key_fits(subject: str | None, kind: Kind, type_: MemoryType, kind_named: bool, field: str) -> None:
    """A subject key says what a semantic memory is about; refuse it on any other kind, saying what to change."""
    if subject is None or kind is Kind.SEMANTIC:
        return
    source = f"this one is {kind.value}" if kind_named else f"type {type_.value!r} makes this one {kind.value}"
    if Kind.SEMANTIC in KINDS_OF_TYPE[type_]:
        fix = "leave subject_key out, or set --kind semantic"
    else:
        semantic_types = [t.value for t, kinds in KINDS_OF_TYPE.items() if kinds[0] is Kind.SEMANTIC]
        fix = f"leave subject_key out, or use a semantic type ({', '.join(semantic_types)})"
    raise InvalidArgument(field, f"is only for semantic memories, and {source}; {fix}")


def subject_key(value: str, field: str) -> str | None:
    """Optional 'user/reply-language'-style key: lower-case segments joined by '/', at most 128 characters."""
    if not value:
        return None
    no_control_characters(value, field)
    if len(value) > 128:
        raise InvalidArgument(field, f"is {len(value)} characters; the limit is 128")
    for seg in value.split("/"):
        if _SUBJECT_SEGMENT.fullmatch(seg) is None:
            raise InvalidArgument(
                field, f"{value!r} is not a valid subject key: lower-case segments of a-z, 0-9, '-', '_', '.' joined by '/'"
            )
    return value


def memory_id(value: str, field: str) -> str:
    """A memory id is a UUID in its canonical text form."""
    if not value:
        raise InvalidArgument(field, "is required")
    no_control_characters(value, field)
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        raise InvalidArgument(
            field, f"{value[:64]!r} is not a memory id (a UUID such as '1b4e28ba-2fa1-11d2-883f-0016d3cca427')"
        ) from None
    return str(parsed)


def request_id(value: str, field: str) -> str | None:
    if not value:
        return None
    no_control_characters(value, field)
    if _REQUEST_ID.fullmatch(value) is None:
        raise InvalidArgument(field, "must be 1 to 128 characters of letters, digits and . _ : -")
    return value


SESSION_ID_RULE = (
    f"1 to {MAX_SESSION_CHARS} characters of ASCII letters, digits and . _ : / @ + -, starting with a letter or digit "
    "(e.g. chat-4312 or conv-26/session_1), or empty for none"
)
"""The memory session id rule in words. A session id is printed in every memory's header (CLI, bridge), so it
holds no spaces, quotes, <, > or look-alike letters; the session-state ids (memhub/session_state/validation.py)
are the same alphabet without / @ +."""
_SESSION_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._:/@+-]{{0,{MAX_SESSION_CHARS - 1}}}")


def session_id(value: str, field: str) -> str:
    """Optional: SESSION_ID_RULE. Rows stored before the rule keep their ids; renderings escape them anyway."""
    no_control_characters(value, field)
    if len(value) > MAX_SESSION_CHARS:
        raise InvalidArgument(field, f"is {len(value)} characters; the limit is {MAX_SESSION_CHARS}")
    if value and _SESSION_ID.fullmatch(value) is None:
        raise InvalidArgument(field, f"{value[:64]!r} is not a session id: {SESSION_ID_RULE}")
    return value


def top_k(value: int, field: str) -> int:
    if value == 0:
        return DEFAULT_TOP_K
    if not 1 <= value <= MAX_TOP_K:
        raise InvalidArgument(field, f"is {value}; use 1 to {MAX_TOP_K} (0 means {DEFAULT_TOP_K})")
    return value


def page_size(value: int, field: str) -> int:
    if value == 0:
        return DEFAULT_PAGE_SIZE
    if not 1 <= value <= MAX_PAGE_SIZE:
        raise InvalidArgument(field, f"is {value}; use 1 to {MAX_PAGE_SIZE} (0 means {DEFAULT_PAGE_SIZE})")
    return value


def max_tokens(value: int, field: str) -> int:
    if value < 0:
        raise InvalidArgument(field, f"is {value}; use 0 (no cap) or a positive number")
    return value


MAX_CONTEXT_WINDOW = 5


def context_window(value: int, field: str) -> int:
    if not 0 <= value <= MAX_CONTEXT_WINDOW:
        raise InvalidArgument(field, f"is {value}; use 0 (none) to {MAX_CONTEXT_WINDOW} turns")
    return value


def min_relevance(value: float, field: str) -> float:
    if not 0.0 <= value <= 1.0:  # also refuses NaN
        raise InvalidArgument(field, f"is {value}; use 0 (keep every hit) to 1")
    return float(value)


def time_window(start: datetime | None, end: datetime | None, field: str) -> None:
    if start is not None and end is not None and end <= start:
        raise InvalidArgument(field, f"end ({end.isoformat()}) must be after start ({start.isoformat()})")
