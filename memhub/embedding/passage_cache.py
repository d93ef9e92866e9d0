"""Vectors of memories embedded on the write path, kept for the indexer so no memory is embedded twice.

A write embeds its memories once already, for the near-duplicate check (memhub/core/near_duplicates.py); a
moment later the indexer embeds the same text to index it. Measured before this cache
(bench/bench_write_curation.py), that second pass was most of what curation cost: batches of 50 went from
522 to 104 writes/s with the check on. The indexer now takes the vector the check made.

The cache is small and per process: the ``capacity`` most recent passages, keyed by the SHA-256 of their text
(never the text: a 16k-character memory must not be held twice), each vector 1.5 KB at 384 dimensions, so
4,096 entries hold about 6 MB. A vector depends only on the text and the model (the local model embeds one
text per inference, memhub/embedding/onnx_minilm.py), so a cached one is the one the indexer would compute.
A miss (another replica wrote it, or it was pushed out) is simply embedded again. Queries are not cached:
they go through ``embed`` unchanged.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .base import Embedder, check_texts, embed_bulk, embed_passages_now, empty

DEFAULT_CAPACITY = 4_096


@dataclass(frozen=True)
class CacheStats:
    hits: int
    misses: int


class PassageVectorCache:
    """An Embedder that remembers the passages (memories) it embedded. ``embed`` (queries) passes through."""

    def __init__(self, inner: Embedder, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.inner = inner
        self.model_id: str = inner.model_id
        self.dimension: int = inner.dimension
        self._capacity = capacity
        self._vectors: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Queries: the inner embedder's interactive lane, not cached."""
        return self.inner.embed(texts)

    def embed_passages_now(self, texts: Sequence[str]) -> np.ndarray:
        """Memories a write is waiting on (the near-duplicate check): the interactive lane, remembered."""
        return self._cached(texts, lambda missing: embed_passages_now(self.inner, missing))

    def embed_bulk(self, texts: Sequence[str]) -> np.ndarray:
        """Memories to index: what a write already embedded comes from the cache, the rest from the bulk lane."""
        return self._cached(texts, lambda missing: embed_bulk(self.inner, missing))

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(self._hits, self._misses)

    def close(self) -> None:
        self.inner.close()

    def _cached(self, texts: Sequence[str], compute) -> np.ndarray:  # noqa: ANN001 - list[str] -> ndarray
        items = check_texts(texts)
        if not items:
            return empty(self.dimension)
        keys = [hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest() for t in items]
        out: list[np.ndarray | None] = [None] * len(items)
        with self._lock:
            for i, key in enumerate(keys):
                vector = self._vectors.get(key)
                if vector is not None:
                    self._vectors.move_to_end(key)
                    out[i] = vector
            hits = sum(v is not None for v in out)
            self._hits += hits
            self._misses += len(items) - hits
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            # Each distinct missing text once: a batch that repeats a memory embeds it once.
            distinct: dict[bytes, str] = {}
            for i in missing:
                distinct.setdefault(keys[i], items[i])
            vectors = compute(list(distinct.values()))
            fresh = dict(zip(distinct, vectors, strict=True))
            with self._lock:
                for key, vector in fresh.items():
                    self._vectors[key] = vector
                    self._vectors.move_to_end(key)
                while len(self._vectors) > self._capacity:
                    self._vectors.popitem(last=False)
            for i in missing:
                out[i] = fresh[keys[i]]
        return np.vstack(out)
