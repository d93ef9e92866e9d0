"""What the index stores per memory, and what a search may filter on."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class IndexedMemory:
    """One memory as the retrieval index holds it (a projection of the Postgres row)."""

    id: str
    """UUID string; the collection's primary key."""
    namespace: str
    """Concrete namespace path (up to 255 characters); the partition key."""
    kind: str
    """``episodic`` | ``semantic`` | ``procedural``."""
    type: str
    """Memory type such as ``fact`` or ``preference`` (up to 32 characters)."""
    content: str
    """Text analysed for BM25: the memory's content, for episodic memories followed by the turns
    before it (memhub/db/context.py); cut to 65535 UTF-8 bytes if longer, context first."""
    tags: tuple[str, ...]
    """Exact-match tags; any string is allowed (they are encoded before they reach Milvus)."""
    occurred_at_ms: int
    """Event time, epoch milliseconds."""
    created_at_ms: int
    """Record time, epoch milliseconds."""
    expires_at_ms: int
    """Expiry, epoch milliseconds; 0 means never."""
    vector: Sequence[float]
    """Dense embedding: ``dimension`` finite floats, L2-normalised."""


@dataclass(frozen=True)
class IndexFilter:
    """Restrictions applied inside Milvus, before ranking.

    Empty tuples and ``None`` mean "no restriction". Every value is user
    data: it is validated and quoted by ``memhub.index.filters``, never pasted.
    """

    namespaces: tuple[str, ...]
    """Concrete namespaces to search; required and non-empty (the caller already checked read rights)."""
    kinds: tuple[str, ...] = ()
    """Keep only these kinds."""
    types: tuple[str, ...] = ()
    """Keep only these types."""
    tags_any: tuple[str, ...] = ()
    """Keep rows carrying at least one of these tags."""
    occurred_from_ms: int | None = None
    """Keep rows with ``occurred_at_ms >= occurred_from_ms``."""
    occurred_to_ms: int | None = None
    """Keep rows with ``occurred_at_ms < occurred_to_ms``."""
    now_ms: int | None = None
    """If set, drop rows that have expired: ``0 < expires_at_ms <= now_ms``."""
