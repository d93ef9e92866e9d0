"""How a memory row of Postgres becomes a row of the retrieval index: shared by the outbox indexer
(memhub/core/indexer.py) and ``memhub reindex`` (memhub/core/index_rebuild.py), so both write the same rows."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memhub.db import context
from memhub.index import IndexedMemory, MilvusIndex


def epoch_ms(value) -> int:  # noqa: ANN001 - datetime or None
    """A timestamp as epoch milliseconds; None (never) as 0."""
    return int(value.timestamp() * 1000) if value is not None else 0


def is_servable(row, now_ms: int) -> bool:  # noqa: ANN001 - a row mapping
    """Does this memory row belong in the index at ``now_ms`` (active and not expired)?"""
    return row["status"] == "active" and not (0 < epoch_ms(row["expires_at"]) <= now_ms)


def apply_rows(
    index: MilvusIndex,
    upsert: Sequence,
    vectors: dict[str, np.ndarray],
    contexts: dict[str, list[str]],
    gone: Sequence[str],
    *,
    skip_unchanged: bool = False,
    exclusive: bool = False,
) -> int:
    """Upsert memory rows (``memories`` mappings, with their vectors and keyword contexts) and delete ``gone``;
    shared by the outbox loop and ``memhub reindex`` (memhub/core/index_rebuild.py). Returns the rows upserted
    (``skip_unchanged``: rows the index holds as they are are not written again; ``exclusive``: the caller holds
    these memories' rows locked, so ``MilvusIndex.upsert`` may insert the rows it does not hold)."""
    written = 0
    if upsert:
        written = index.upsert(indexed_memories(upsert, vectors, contexts), skip_unchanged=skip_unchanged, exclusive=exclusive)
    if gone:
        index.delete(list(gone))
    return written


def indexed_memories(rows: Sequence, vectors: dict[str, np.ndarray], contexts: dict[str, list[str]]) -> list[IndexedMemory]:
    """Memory rows (``memories`` mappings) as the index holds them, with their vectors and keyword contexts."""
    return [
        IndexedMemory(
            id=str(m["id"]),
            namespace=m["namespace"],
            kind=m["kind"],
            type=m["type"],
            content=context.keyword_text(m["content"], contexts.get(str(m["id"]), ())),
            tags=tuple(m["tags"]),
            occurred_at_ms=epoch_ms(m["occurred_at"]),
            created_at_ms=epoch_ms(m["created_at"]),
            expires_at_ms=epoch_ms(m["expires_at"]),
            vector=vectors[str(m["id"])],
        )
        for m in rows
    ]
