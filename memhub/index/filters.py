"""Milvus filter expressions built safely from user values.

Every string that reaches an expression is either quoted by ``quote`` or is
a tag key from ``encode_tag`` (a closed alphabet without wildcards), so a
namespace, type or tag containing quotes, backslashes, ``%`` or ``_``
cannot change the meaning of a filter.

Why tags are a VARCHAR and not an ARRAY (measured on milvus-lite 3.2.2,
10k rows, 384-d, namespace filter, p50): ``ARRAY_CONTAINS_ANY`` on an ARRAY
field 205-300 ms and ``JSON_CONTAINS_ANY`` 250-420 ms, because milvus-lite
evaluates them row by row in Python; ``like "%|key|%"`` on one VARCHAR,
OR-ed per requested tag, 16-25 ms (vectorised by pyarrow), against 10-16 ms
for the namespace filter alone. Real Milvus evaluates infix LIKE in C++, so
one representation serves both backends.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from memhub.index import schema
from memhub.index.records import IndexFilter

# Characters a tag keeps as-is inside its key. Everything else (including the
# LIKE wildcards % and _, the separator |, quotes, backslash, ~, spaces and
# non-ASCII) becomes ~XX per UTF-8 byte. The mapping is injective, so two
# different tags never share a key, and keys need no escaping anywhere.
_TAG_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.:/")

# Escapes understood by both milvus-lite's tokenizer and Milvus's expression
# parser. Other control characters have no escape common to both, so they are
# refused rather than passed through raw.
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


# No backslash, quote or control character: quoted as it is.
_PLAIN = re.compile(r'[^\x00-\x1f\x7f\\"]*')


def quote(value: str) -> str:
    """Return ``value`` as a double-quoted Milvus string literal.

    Raises ValueError for non-strings and for control characters other than
    tab, newline and carriage return.
    """
    if not isinstance(value, str):
        raise ValueError(f"filter value must be a string, got {type(value).__name__}")
    if _PLAIN.fullmatch(value):  # most values (every namespace of a search): nothing to escape or refuse
        return '"' + value + '"'
    out = []
    for ch in value:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            raise ValueError(f"filter value {value!r} contains control character U+{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def encode_tag(tag: str) -> str:
    """Map a tag to its key: safe ASCII kept, every other byte written as ``~XX``."""
    if not isinstance(tag, str) or not tag:
        raise ValueError(f"tags must be non-empty strings, got {tag!r}")
    return "".join(ch if ch in _TAG_SAFE else "".join(f"~{b:02X}" for b in ch.encode("utf-8")) for ch in tag)


def tag_keys(tags: Iterable[str]) -> str:
    """Encode a row's tags for the ``tag_keys`` field: ``|k1|k2|`` (``|`` when there are none)."""
    keys = sorted({encode_tag(t) for t in tags})
    return "|" + "".join(k + "|" for k in keys)


def tag_key_list(tags: Iterable[str]) -> list[str]:
    """A row's tag keys as a list, for servers that keep them as an ARRAY (Milvus 2.3)."""
    return sorted({encode_tag(t) for t in tags})


def namespace_key(namespace: str) -> int:
    """The namespace's key in Lite's rows: 63 bits of its BLAKE2b hash (non-negative, an INT64 for Milvus).

    Searches there filter on the keys (``backend.Backend.namespace_keys`` says why). Two namespaces of one hub
    share a key with odds of about n^2 / 2^64; if they did, a search could be offered the other one's rows as
    candidates, which hydration drops (every hit is re-checked against the caller's namespaces in Postgres).
    """
    return int.from_bytes(hashlib.blake2b(namespace.encode("utf-8"), digest_size=8).digest(), "big") >> 1


def build_filter(flt: IndexFilter, *, tags_as_array: bool = False, namespace_keys: bool = False) -> str:
    """Translate an IndexFilter into one Milvus boolean expression on scalar fields.

    ``tags_as_array``: the tag keys are an ARRAY field (Milvus 2.3, ``backend.Backend.tags_as_array``);
    ``namespace_keys``: filter on the namespaces' integer keys (Lite, ``backend.Backend.namespace_keys``)."""
    for name in ("namespaces", "kinds", "types", "tags_any"):
        # A bare string would be read as a set of one-character values.
        if isinstance(getattr(flt, name), str):
            raise ValueError(f"IndexFilter.{name} must be a tuple of strings, not a string")
    if not flt.namespaces:
        raise ValueError("IndexFilter.namespaces must name at least one namespace")
    # Namespace first: real Milvus prunes partition-key buckets from it.
    if namespace_keys:
        _in(schema.NAMESPACE, flt.namespaces)  # the same refusals as the VARCHAR filter (an empty value, a control character)
        keys = sorted({namespace_key(ns) for ns in flt.namespaces})
        clauses = [f"{schema.NAMESPACE_KEY} in [{', '.join(map(str, keys))}]"]
    else:
        clauses = [_in(schema.NAMESPACE, flt.namespaces)]
    if flt.kinds:
        clauses.append(_in(schema.KIND, flt.kinds))
    if flt.types:
        clauses.append(_in(schema.TYPE, flt.types))
    if flt.tags_any:
        keys = sorted({encode_tag(t) for t in flt.tags_any})
        if tags_as_array:
            clauses.append(f"array_contains_any({schema.TAG_KEYS}, [" + ", ".join(quote(k) for k in keys) + "])")
        else:
            # Keys contain no %, _ or |, so the pattern matches exactly one whole key.
            likes = [f'{schema.TAG_KEYS} like "%|{k}|%"' for k in keys]
            clauses.append("(" + " or ".join(likes) + ")")
    if flt.occurred_from_ms is not None:
        clauses.append(f"{schema.OCCURRED_AT} >= {_int(flt.occurred_from_ms, 'occurred_from_ms')}")
    if flt.occurred_to_ms is not None:
        clauses.append(f"{schema.OCCURRED_AT} < {_int(flt.occurred_to_ms, 'occurred_to_ms')}")
    if flt.now_ms is not None:
        now = _int(flt.now_ms, "now_ms")
        clauses.append(f"({schema.EXPIRES_AT} == 0 or {schema.EXPIRES_AT} > {now})")
    return " and ".join(clauses)


def _in(field: str, values: Iterable[str]) -> str:
    """``field == "v"`` for one value, ``field in ["a", "b"]`` for several.

    ``in`` on a scalar VARCHAR works on both backends and costs the same as a
    chain of ``==`` on milvus-lite (10.4 vs 10.7 ms p50 at 10k rows); the
    milvus-lite problem with ``in`` is limited to JSON keys, which we never use.
    """
    unique = sorted(set(values))
    if any(not v for v in unique):
        raise ValueError(f"filter on {field}: values must be non-empty strings")
    if len(unique) == 1:
        return f"{field} == {quote(unique[0])}"
    return f"{field} in [" + ", ".join(quote(v) for v in unique) + "]"


def _int(value: object, name: str) -> int:
    # bool is an int subclass; True as a timestamp is a caller bug, not 1 ms.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"IndexFilter.{name} must be an int (epoch ms), got {value!r}")
    return value
