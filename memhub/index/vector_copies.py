"""The hub's own copy of Lite's float16 vectors, so that a dense search asks Lite for its candidates' ids only.

Lite proposes a dense search's candidates by their thermometer codes, and the hub scores them exactly from their
float16 copies (memhub/index/dense_codes.py). Sent along with the candidates they are ~400 KB of base64 text a
search at 100k rows (400 candidates); without them, a search at 100k cost the hub and Lite about 1.5 ms of CPU less
(7%; in-process, docs/benchmarks.md, seventeenth round), nothing measurable at 10k. Here the hub keeps the
vectors it has seen in one float16 matrix: those its indexer wrote, those read back from Lite at start
(``MilvusIndex.copy_vectors``), and those a search received. A search whose candidates are all here asks Lite for
nothing else (memhub/index/milvus_index.py decides when to rely on it).

A kept vector is right for as long as Lite returns its id: a row's vector follows from its memory's content, which
never changes while the memory is servable, and ids are not reused. A deleted row's vector may stay here, unused
(Lite no longer proposes its id), until it is dropped or pushed out.

The copy is bounded in bytes; when full, the vectors kept longest make room (first in, first out, not least
recently used: a look-up then changes nothing, so readers only read).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

import numpy as np

DEFAULT_BUDGET_BYTES = 256 << 20
"""349,525 vectors of 384 dimensions (768 bytes each); MEMHUB_LITE_VECTOR_COPY_MB sets it for a hub."""
_FIRST_ROWS = 1024


class VectorCopies:
    """A bounded, thread-safe id -> float16 vector map in one matrix, oldest first out."""

    def __init__(self, dimension: int, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        if dimension < 1:
            raise ValueError(f"dimension must be >= 1, got {dimension}")
        if budget_bytes < 0:
            raise ValueError(f"budget_bytes must be >= 0, got {budget_bytes}")
        self._dimension = dimension
        self._capacity = budget_bytes // (2 * dimension)
        self._matrix = np.empty((0, dimension), dtype=np.float16)
        self._slots: OrderedDict[str, int] = OrderedDict()  # id -> row of the matrix, oldest first
        self._free: list[int] = []
        self._pushed_out = 0
        self._lock = threading.Lock()

    @property
    def capacity(self) -> int:
        """Vectors the budget holds."""
        return self._capacity

    @property
    def pushed_out(self) -> int:
        """Vectors that left to make room since the copy was made or cleared: while it is 0, every vector put and not
        forgotten is here."""
        return self._pushed_out

    def __len__(self) -> int:
        return len(self._slots)

    def put(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Keep ``vectors[i]`` (float16 rows as the index stores them, or float32 ones) as ``ids[i]``'s."""
        if len(ids) != len(vectors):
            raise ValueError(f"{len(ids)} ids for {len(vectors)} vectors")
        if not self._capacity or not len(ids):
            return
        halves = np.asarray(vectors, dtype=np.float16).reshape(len(ids), self._dimension)
        # The newest last, so with more than the budget holds, the last ones given are kept.
        given = dict(zip(ids, range(len(ids)), strict=True))
        if len(given) > self._capacity:
            given = dict(list(given.items())[-self._capacity :])
        with self._lock:
            slots = []
            for mid in given:
                slot = self._slots.pop(mid, None)
                if slot is None:
                    slot = self._free_slot()
                self._slots[mid] = slot
                slots.append(slot)
            self._matrix[slots] = halves[list(given.values())]

    def _free_slot(self) -> int:
        # Called with the lock held.
        if self._free:
            return self._free.pop()
        used = len(self._slots) + len(self._free)
        if used < len(self._matrix):
            return used
        if len(self._matrix) < self._capacity:
            grown = np.empty((min(self._capacity, max(_FIRST_ROWS, 2 * len(self._matrix))), self._dimension), np.float16)
            grown[: len(self._matrix)] = self._matrix
            self._matrix = grown
            return used
        _, oldest = self._slots.popitem(last=False)
        self._pushed_out += 1
        return oldest

    def forget(self, ids: Iterable[str]) -> None:
        with self._lock:
            for mid in ids:
                slot = self._slots.pop(mid, None)
                if slot is not None:
                    self._free.append(slot)

    def clear(self) -> None:
        with self._lock:
            self._matrix = np.empty((0, self._dimension), dtype=np.float16)
            self._slots.clear()
            self._free.clear()
            self._pushed_out = 0

    def rows(self, ids: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        """The float16 vectors of ``ids`` (a new matrix, one row per id, in order; rows of missing ids are zero) and
        the positions in ``ids`` of those not kept here."""
        out = np.zeros((len(ids), self._dimension), dtype=np.float16)
        with self._lock:
            slots = [self._slots.get(mid) for mid in ids]
            found = [i for i, slot in enumerate(slots) if slot is not None]
            if found:
                out[found] = self._matrix[[slots[i] for i in found]]
        missing = [i for i, slot in enumerate(slots) if slot is None]
        return out, missing

    def similarities(self, query: np.ndarray, ids: Iterable[str]) -> dict[str, float]:
        """The inner product of ``query`` with each of ``ids`` kept here (the others are left out)."""
        wanted = list(dict.fromkeys(ids))
        matrix, missing = self.rows(wanted)
        if len(missing) == len(wanted):
            return {}
        scores = (matrix.astype(np.float32) @ np.asarray(query, dtype=np.float32)).tolist()
        absent = set(missing)
        return {mid: scores[i] for i, mid in enumerate(wanted) if i not in absent}
