"""The vectors Lite's dense searches just scored, kept a little while so relevance needs no second round trip.

A search scores a few hundred candidates from their float16 copies (memhub/index/dense_codes.py) and returns the
best few; judging relevance then wants the similarity of the other channels' hits, which are often among those
candidates. Keeping the candidates' vectors (bounded, least recently used first out) answers most of them without
a query to Milvus. Only similarities come from here, never the index's contents: ``MilvusReads.vectors`` still
reads Milvus. A vector never changes while its memory is servable; writes and deletes drop their ids anyway.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np

DEFAULT_CAPACITY = 16_384
"""Vectors kept: 12 MiB of 384-d float16 copies, the candidates of the last 40 or so searches."""


class RecentVectors:
    """A bounded, thread-safe id -> vector map, least recently used first out."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity}")
        self._capacity = capacity
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def remember(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Keep ``vectors[i]`` (float16 rows as the index stores them, or float32 ones) as ``ids[i]``'s."""
        if not self._capacity:
            return
        halves = vectors if vectors.dtype == np.float16 else vectors.astype(np.float16)
        # A copy of each row: a row of the search's matrix would keep all of that search's candidates alive for as
        # long as it stays here, so the bound above would not hold (one row of each of 16,384 searches: 5 GB).
        rows = [row.copy() for row in halves]
        with self._lock:
            for mid, row in zip(ids, rows, strict=True):
                self._vectors[mid] = row
                self._vectors.move_to_end(mid)
            while len(self._vectors) > self._capacity:
                self._vectors.popitem(last=False)

    def forget(self, ids: Iterable[str]) -> None:
        with self._lock:
            for mid in ids:
                self._vectors.pop(mid, None)

    def similarities(self, query: np.ndarray, ids: Iterable[str]) -> dict[str, float]:
        """The inner product of ``query`` with each of ``ids`` kept here (the others are left out)."""
        with self._lock:
            found = {mid: self._vectors[mid] for mid in ids if mid in self._vectors}
        if not found:
            return {}
        matrix = np.vstack(list(found.values())).astype(np.float32)
        return dict(zip(found, (matrix @ query).tolist(), strict=True))
