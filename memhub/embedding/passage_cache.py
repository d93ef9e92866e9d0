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
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .base import Embedder, check_texts, embed_bulk, embed_passages_now, empty

DEFAULT_CAPACITY = 4_096


def text_key(text: str) -> bytes:
    """What a passage's vector is kept under: the SHA-256 of its text."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class KeptPassageVectors:
    """An Embedder in front of ``inner`` that keeps some passage vectors by text: ``embed`` (queries) passes
    through; ``embed_passages_now`` (a waiting caller) and ``embed_bulk`` (background work) look their texts up
    first and send only the others to the model, each distinct text once (a batch that repeats a memory embeds it
    once). What is kept, and for how long, is the subclass's: ``_look_up`` and ``_keep``, both under ``_lock``."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.model_id: str = inner.model_id
        self.dimension: int = inner.dimension
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Queries: the inner embedder's interactive lane, not kept."""
        return self.inner.embed(texts)

    def embed_passages_now(self, texts: Sequence[str]) -> np.ndarray:
        """Passages a caller waits on: the interactive lane."""
        return self._vectors(texts, lambda missing: embed_passages_now(self.inner, missing), bulk=False)

    def embed_bulk(self, texts: Sequence[str]) -> np.ndarray:
        """Background passages: the bulk lane, behind queries."""
        return self._vectors(texts, lambda missing: embed_bulk(self.inner, missing), bulk=True)

    def close(self) -> None:
        self.inner.close()

    def _look_up(self, keys: list[bytes], bulk: bool) -> list[np.ndarray | None]:
        raise NotImplementedError

    def _keep(self, fresh: dict[bytes, np.ndarray], bulk: bool) -> None:
        raise NotImplementedError

    def _vectors(self, texts: Sequence[str], compute: Callable[[list[str]], np.ndarray], *, bulk: bool) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return empty(self.dimension)
        keys = [text_key(t) for t in items]
        with self._lock:
            out = self._look_up(keys, bulk)
            hits = sum(v is not None for v in out)
            self._hits += hits
            self._misses += len(items) - hits
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            distinct: dict[bytes, str] = {}
            for i in missing:
                distinct.setdefault(keys[i], items[i])
            fresh = dict(zip(distinct, compute(list(distinct.values())), strict=True))
            with self._lock:
                self._keep(fresh, bulk)
            for i in missing:
                out[i] = fresh[keys[i]]
        return np.vstack(out)


@dataclass(frozen=True)
class CacheStats:
    hits: int
    misses: int


class PassageVectorCache(KeptPassageVectors):
    """Keeps the ``capacity`` passages embedded most recently, on either lane (least recently used first out)."""

    def __init__(self, inner: Embedder, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        super().__init__(inner)
        self._capacity = capacity
        self._kept: OrderedDict[bytes, np.ndarray] = OrderedDict()

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(self._hits, self._misses)

    def _look_up(self, keys: list[bytes], bulk: bool) -> list[np.ndarray | None]:
        out: list[np.ndarray | None] = []
        for key in keys:
            vector = self._kept.get(key)
            if vector is not None:
                self._kept.move_to_end(key)
            out.append(vector)
        return out

    def _keep(self, fresh: dict[bytes, np.ndarray], bulk: bool) -> None:
        for key, vector in fresh.items():
            self._kept[key] = vector
            self._kept.move_to_end(key)
        while len(self._kept) > self._capacity:
            self._kept.popitem(last=False)
