"""The vectors a write made, handed to the indexer so a memory is not embedded twice.

A write embeds some of its memories already, for the near-duplicate check (memhub/core/near_duplicates.py: the
semantic ones, among them every preference the write gate derives from a turn); a moment later the indexer embeds
the same text to index it. This keeps the write's vectors until the indexer takes them.

It used to be an LRU of 4,096 passages that the indexer's own vectors went into too. Under a burst of writes
(an import, a benchmark's ingest) the indexer runs behind the writes by far more than that, and the LRU dropped
exactly the oldest vectors, the ones the indexer needed next: over a 20k-memory ingest, 6,380 memories were
embedded for the check and 26,079 for the index, for 26,400 rows (the hub's embedding metrics,
memhub_embedding_batch_texts by lane), so almost every checked memory was embedded twice. Here:

- a vector is kept until the indexer takes it, then dropped (it is indexed; a holder re-indexed for its
  keyword context reads its vector back from the index, memhub/core/indexer.py);
- when full, the oldest vectors stay and a new one is not kept (the indexer works in write order, so the
  oldest are the next it needs), except that vectors older than ``max_age_s`` make room: those of writes
  that never reached the index (folded into a near duplicate, refused) would otherwise hold their places;
- the indexer's own vectors are not kept: nothing reads them again.

The bound is in bytes (``budget_bytes``, 32 MiB: 21,845 vectors at 384 dimensions). Vectors are keyed by the
SHA-256 of their text (never the text: a 16k-character memory must not be held twice). A vector depends only on
the text and the model (the local model embeds one text per inference, memhub/embedding/onnx_minilm.py), so a
kept one is the one the indexer would compute; a miss is simply embedded.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .base import Embedder, check_texts, embed_bulk, embed_passages_now, empty
from .passage_cache import text_key

DEFAULT_BUDGET_BYTES = 32 << 20
DEFAULT_MAX_AGE_S = 600.0
"""Ten minutes: at the hub's slowest measured indexing (about 180 memories/s at 100k rows on 2 cores) the
indexer gets through a backlog of 100,000 memories in that time."""


@dataclass(frozen=True)
class HandoffStats:
    hits: int
    """Texts whose vector came from here (a write's check, or the indexer taking a write's vector)."""
    misses: int
    """Texts embedded by the model."""
    not_kept: int
    """Vectors of writes that found no room."""
    held: int
    """Vectors waiting for the indexer now."""


class WriteVectorHandoff:
    """An Embedder that keeps the vectors ``embed_passages_now`` (writes) made until ``embed_bulk`` (the indexer)
    asks for the same texts. ``embed`` (queries) passes through."""

    def __init__(
        self,
        inner: Embedder,
        budget_bytes: int = DEFAULT_BUDGET_BYTES,
        max_age_s: float = DEFAULT_MAX_AGE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if budget_bytes < 1 or max_age_s <= 0:
            raise ValueError(f"budget_bytes and max_age_s must be positive, got {budget_bytes} and {max_age_s}")
        self.inner = inner
        self.model_id: str = inner.model_id
        self.dimension: int = inner.dimension
        self.capacity = max(1, budget_bytes // (4 * inner.dimension))
        self._max_age_s = max_age_s
        self._clock = clock
        self._held: OrderedDict[bytes, tuple[float, np.ndarray]] = OrderedDict()  # oldest first
        self._lock = threading.Lock()
        self._hits = self._misses = self._not_kept = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Queries: the inner embedder's interactive lane, not kept."""
        return self.inner.embed(texts)

    def embed_passages_now(self, texts: Sequence[str]) -> np.ndarray:
        """Memories a write is waiting on (the near-duplicate check): the interactive lane; kept for the indexer."""
        return self._vectors(texts, lambda missing: embed_passages_now(self.inner, missing), taking=False)

    def embed_bulk(self, texts: Sequence[str]) -> np.ndarray:
        """Memories to index: a write's vectors are taken (and dropped from here), the rest embedded on the bulk lane."""
        return self._vectors(texts, lambda missing: embed_bulk(self.inner, missing), taking=True)

    def stats(self) -> HandoffStats:
        with self._lock:
            return HandoffStats(self._hits, self._misses, self._not_kept, len(self._held))

    def close(self) -> None:
        self.inner.close()

    def _vectors(self, texts: Sequence[str], compute: Callable[[list[str]], np.ndarray], *, taking: bool) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return empty(self.dimension)
        keys = [text_key(t) for t in items]
        out: list[np.ndarray | None] = [None] * len(items)
        with self._lock:
            for i, key in enumerate(keys):
                held = self._held.get(key)
                if held is not None:
                    out[i] = held[1]
            if taking:
                for key in keys:
                    self._held.pop(key, None)
            hits = sum(v is not None for v in out)
            self._hits += hits
            self._misses += len(items) - hits
        missing = [i for i, v in enumerate(out) if v is None]
        if missing:
            # Each distinct missing text once: a batch that repeats a memory embeds it once.
            distinct: dict[bytes, str] = {}
            for i in missing:
                distinct.setdefault(keys[i], items[i])
            fresh = dict(zip(distinct, compute(list(distinct.values())), strict=True))
            if not taking:
                self._keep(fresh)
            for i in missing:
                out[i] = fresh[keys[i]]
        return np.vstack(out)

    def _keep(self, fresh: dict[bytes, np.ndarray]) -> None:
        now = self._clock()
        with self._lock:
            for key, vector in fresh.items():
                if len(self._held) >= self.capacity:
                    self._drop_expired(now)
                if len(self._held) >= self.capacity:
                    self._not_kept += 1
                    continue
                self._held[key] = (now, vector)

    def _drop_expired(self, now: float) -> None:
        while self._held:
            key, (kept_at, _) = next(iter(self._held.items()))
            if now - kept_at < self._max_age_s:
                return
            del self._held[key]
