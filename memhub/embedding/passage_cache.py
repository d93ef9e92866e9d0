"""A small LRU of passage vectors: a text embedded as a passage again while it stays here is not embedded again.

The multilingual second opinion (memhub/search/multilingual.py) keeps the candidates and questions it embedded
in one, so a memory, or a repeated question, is embedded once per hub while it stays in the cache. (The hub's
write path hands its vectors to the indexer through memhub/embedding/write_handoff.py, whose vectors leave
when the indexer takes them; an LRU dropped the ones the indexer needed next when it ran behind.)

It holds the ``capacity`` most recent passages, keyed by the SHA-256 of their text (never the text: a
16k-character memory must not be held twice), each vector 1.5 KB at 384 dimensions, so 4,096 entries hold
about 6 MB. A vector depends only on the text and the model, so a cached one is the one the model would
compute again. Queries are not cached: they go through ``embed`` unchanged.
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


def text_key(text: str) -> bytes:
    """What a passage's vector is kept under: the SHA-256 of its text."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


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
        """Passages a caller waits on: the interactive lane, remembered."""
        return self._cached(texts, lambda missing: embed_passages_now(self.inner, missing))

    def embed_bulk(self, texts: Sequence[str]) -> np.ndarray:
        """Background passages: those held here come from the cache, the rest from the bulk lane, remembered."""
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
        keys = [text_key(t) for t in items]
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
