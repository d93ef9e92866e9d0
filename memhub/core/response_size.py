"""Keeping responses under the message limit, whatever the stored memories hold.

A response over the gRPC send limit fails for the caller ("Sent message
larger than max"), and if a stored memory is what makes it big, it fails
for every reader of that namespace, every time. So list pages and search
results are cut to a byte budget before they are sent: a list page ends
early (with a next_page_token), a search drops its lowest-ranked hits (and
says so). Sizes are conservative estimates of the protobuf encoding (every
string counted with room for its tag and length), cheap enough to compute
for every record.

Lists a memory carries are shown up to the write limits (``SHOWN_LINKS``):
memories stored before those limits existed may hold more, and one of them
alone could exceed any budget.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memhub.core.model import MemoryRecord, SearchHit
from memhub.core.validation import MAX_DERIVED_FROM

SHOWN_LINKS = MAX_DERIVED_FROM
"""derived_from and supersedes ids shown per memory."""

_FIXED = 512
"""Numbers, enums, seven timestamps, nested-message headers and the fixed-size hash of one memory, rounded up."""
_PER_STRING = 6
"""Tag and length prefix of one string (at most 1 + 5 bytes)."""
_PER_HIT = 256
"""A hit's score, relevance, channel ranks (at most 5) and headers."""

ENVELOPE_BYTES = 4096
"""Room kept for a response's own fields (degraded_reason, next_page_token)."""


def _text(value: str | None) -> int:
    return len(value.encode("utf-8")) + _PER_STRING if value else 0


def _texts(values: Iterable[str]) -> int:
    return sum(_text(v) for v in values)


def memory_bytes(record: MemoryRecord) -> int:
    """An upper bound of ``record``'s encoded size as the API sends it (links capped at SHOWN_LINKS)."""
    return (
        _FIXED
        + _text(record.id)
        + _text(record.namespace)
        + _text(record.content)
        + _texts(record.tags)
        + _texts(record.entities)
        + _text(record.source_agent)
        + _text(record.source_session)
        + _text(record.source_trace)
        + _text(record.subject_key)
        + _text(record.embedding_model)
        + _text(record.superseded_by)
        + _text(record.forgotten_by)
        + _text(record.forget_reason)
        + (len(record.supersedes[:SHOWN_LINKS]) + len(record.derived_from[:SHOWN_LINKS])) * (36 + _PER_STRING)
    )


def hit_bytes(hit: SearchHit) -> int:
    """An upper bound of one search hit's encoded size, with its context turns."""
    return _PER_HIT + memory_bytes(hit.memory) + sum(memory_bytes(m) + _PER_STRING for m in (*hit.before, *hit.after))


def fitting(sizes: Sequence[int], budget: int) -> int:
    """How many of the leading items fit in ``budget`` bytes; at least one (a single item always goes out:
    its size is bounded by the write limits, far under any sane budget)."""
    total = 0
    for i, size in enumerate(sizes):
        total += size + _PER_STRING
        if total > budget and i > 0:
            return i
    return len(sizes)
