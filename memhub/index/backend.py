"""What differs between Milvus Lite and a Milvus server, decided in one place.

Everything else in ``memhub.index`` asks a ``Backend`` instead of testing for
Lite itself, so each difference has one reason written down, here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import grpc


@dataclass(frozen=True)
class DenseIndex:
    """A dense vector index: how it is built and how it is searched."""

    index_type: str
    build_params: dict[str, Any] = field(default_factory=dict)
    search_params: dict[str, Any] = field(default_factory=dict)


# Milvus Lite 2.5 builds FLAT, IVF_FLAT and AUTOINDEX only (HNSW is refused),
# and only FLAT is exact. Measured on 100,248 real vectors (bench_scale's
# LoCoMo-derived corpus, 384-d, 100 LoCoMo questions, recall@10 against
# exact numpy search; bench/bench_dense_index.py): FLAT 1.000; IVF_FLAT with
# nlist 256 or 1024 and nprobe 8, 32, 64, 128 or even 1024 (every list),
# and AUTOINDEX, all 0.729 at 3-6 ms. Lite answers every non-FLAT index from
# one fixed approximate index whatever its parameters say. A quarter of the
# true neighbours lost is too much to trade for speed silently, so the
# embedded index stays FLAT (exact; 40 ms a search over all of 100k rows,
# 12-15 ms over 3 of 17 namespaces) unless the operator opts in to the
# approximate one past a size (MEMHUB_LITE_APPROXIMATE_ROWS).
LITE_FLAT = DenseIndex("FLAT")
LITE_IVF = DenseIndex("IVF_FLAT", {"nlist": 1024}, {"nprobe": 32})
# A server picks and tunes its own graph index (HNSW on standalone Milvus).
SERVER_AUTO = DenseIndex("AUTOINDEX")


@dataclass(frozen=True)
class Backend:
    """The capabilities of the Milvus behind one URI."""

    lite: bool
    """Milvus Lite 2.5 (embedded, or served over TCP) rather than a Milvus server."""

    lite_approximate_rows: int | None = None
    """Lite only: past this many rows, use the approximate index (about 4x faster at 100k rows,
    recall@10 0.73); None keeps FLAT (exact) at every size."""

    @property
    def namespace_partition_key(self) -> bool:
        """Whether new collections make the namespace the partition key.

        A server prunes a search to the partition-key buckets of the filtered
        namespaces. Milvus Lite 2.5 cannot evaluate any filter on a
        partition-key field ("Invalid expr ... primary_key_offset == -1"), so
        there the namespace is a plain VARCHAR field. The filter expression is
        the same on both (``filters.py``).
        """
        return not self.lite

    def dense_index(self, rows: int) -> DenseIndex:
        """The dense index for a collection of about ``rows`` rows."""
        if not self.lite:
            return SERVER_AUTO
        if self.lite_approximate_rows is not None and rows >= self.lite_approximate_rows:
            return LITE_IVF
        return LITE_FLAT

    @property
    def flush_after_writes(self) -> bool:
        """Whether the indexer seals segments after catching up.

        Both engines search unsealed rows natively; sealing them after a
        burst bounds what a restart must replay from the write-ahead log.
        A server seals on its own schedule.
        """
        return self.lite


def detect(version_call: Any, lite_approximate_rows: int | None = None) -> Backend:
    """Classify a connected server by calling ``version_call()`` (``MilvusClient.get_server_version``).

    Milvus Lite 2.5 does not implement GetVersion (UNIMPLEMENTED); every
    Milvus server answers it.
    """
    try:
        version_call()
    except grpc.RpcError as exc:
        if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
            return Backend(lite=True, lite_approximate_rows=lite_approximate_rows)
        raise
    return Backend(lite=False)
