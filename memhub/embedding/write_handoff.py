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
  oldest are the next it needs), except that vectors nobody will take make room: those kept ``BEHIND_S`` or
  more before the newest vector this process's indexer took (another replica's indexer indexed them, or the
  write never reached the index: folded into a near duplicate, refused), and any older than ``max_age_s``;
- the indexer's own vectors are not kept: nothing reads them again.

The bound is in bytes (``budget_bytes``, 32 MiB: 21,845 vectors at 384 dimensions). Vectors are keyed by the
SHA-256 of their text (never the text: a 16k-character memory must not be held twice). A vector depends only on
the text and the model (the local model embeds one text per inference, memhub/embedding/onnx_minilm.py), so a
kept one is the one the indexer would compute; a miss is simply embedded.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .base import Embedder
from .passage_cache import KeptPassageVectors

DEFAULT_BUDGET_BYTES = 32 << 20
DEFAULT_MAX_AGE_S = 600.0
"""Ten minutes: at the hub's slowest measured indexing (about 180 memories/s at 100k rows on 2 cores) the
indexer gets through a backlog of 100,000 memories in that time."""
BEHIND_S = 60.0
"""Indexers claim the outbox in write order, a batch at a time: a vector kept a minute before one this process's
indexer has taken was indexed elsewhere (with several replicas or `serve --processes`, most of what a write
keeps here), or its write never reached the index. Without this, such vectors would fill the hand-off for
``max_age_s`` under a steady stream of writes and leave no room for the ones this indexer will take."""


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


class WriteVectorHandoff(KeptPassageVectors):
    """Keeps the vectors ``embed_passages_now`` (writes) made until ``embed_bulk`` (the indexer) asks for the same
    texts. ``embed`` (queries) passes through."""

    def __init__(
        self,
        inner: Embedder,
        budget_bytes: int = DEFAULT_BUDGET_BYTES,
        max_age_s: float = DEFAULT_MAX_AGE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if budget_bytes < 1 or max_age_s <= 0:
            raise ValueError(f"budget_bytes and max_age_s must be positive, got {budget_bytes} and {max_age_s}")
        super().__init__(inner)
        self.capacity = max(1, budget_bytes // (4 * inner.dimension))
        self._max_age_s = max_age_s
        self._clock = clock
        self._held: OrderedDict[bytes, tuple[float, np.ndarray]] = OrderedDict()  # oldest first
        self._not_kept = 0
        self._newest_taken = float("-inf")  # when the newest vector the indexer took was kept

    def stats(self) -> HandoffStats:
        with self._lock:
            return HandoffStats(self._hits, self._misses, self._not_kept, len(self._held))

    def _look_up(self, keys: list[bytes], bulk: bool) -> list[np.ndarray | None]:
        # The indexer (bulk) takes what it finds: the memory is indexed, nothing will ask for it again.
        found: dict[bytes, tuple[float, np.ndarray] | None] = {}
        for key in keys:
            if key not in found:  # a text twice in one batch: taken once, used for both
                found[key] = self._held.pop(key, None) if bulk else self._held.get(key)
        if bulk:
            taken = [held[0] for held in found.values() if held is not None]
            self._newest_taken = max([self._newest_taken, *taken])
        return [None if (held := found[key]) is None else held[1] for key in keys]

    def _keep(self, fresh: dict[bytes, np.ndarray], bulk: bool) -> None:
        if bulk:
            return  # the indexer's own vectors: nothing reads them again
        now = self._clock()
        for key, vector in fresh.items():
            if len(self._held) >= self.capacity:
                self._drop_expired(now)
            if len(self._held) >= self.capacity:
                self._not_kept += 1
                continue
            # A copy: a row of the model's batch would keep the whole batch alive, past the budget's count.
            self._held[key] = (now, vector.copy())

    def _drop_expired(self, now: float) -> None:
        """Drop, oldest first, the vectors no indexer here will take (``BEHIND_S``, ``max_age_s``)."""
        before = max(now - self._max_age_s, self._newest_taken - BEHIND_S)
        while self._held:
            key, (kept_at, _) = next(iter(self._held.items()))
            if kept_at > before:
                return
            del self._held[key]
