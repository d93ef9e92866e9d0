"""What differs between Milvus Lite and a Milvus server, decided in one place.

Everything else in ``hub.index`` asks a ``Backend`` instead of testing for
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


# Milvus Lite 2.5 builds FLAT, IVF_FLAT and AUTOINDEX only (HNSW is refused).
# FLAT is exact and, up to a few tens of thousands of rows in the searched
# namespaces, fast enough. IVF_FLAT trades a little recall for speed at scale.
# Measured on 100k LoCoMo-derived memories, 384-d, filter on 3 of 17
# namespaces (bench/README.md): see IVF_NLIST/IVF_NPROBE below.
LITE_FLAT = DenseIndex("FLAT")
IVF_NLIST = 1024
IVF_NPROBE = 32
LITE_IVF = DenseIndex("IVF_FLAT", {"nlist": IVF_NLIST}, {"nprobe": IVF_NPROBE})
# Past this many rows an embedded index is rebuilt as IVF_FLAT (once).
LITE_IVF_THRESHOLD_ROWS = 50_000
# A server picks and tunes its own graph index (HNSW on standalone Milvus).
SERVER_AUTO = DenseIndex("AUTOINDEX")


@dataclass(frozen=True)
class Backend:
    """The capabilities of the Milvus behind one URI."""

    lite: bool
    """Milvus Lite 2.5 (embedded, or served over TCP) rather than a Milvus server."""

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
        return LITE_IVF if rows >= LITE_IVF_THRESHOLD_ROWS else LITE_FLAT

    @property
    def flush_after_writes(self) -> bool:
        """Whether the indexer seals segments after catching up.

        Both engines search unsealed rows natively; sealing them after a
        burst bounds what a restart must replay from the write-ahead log.
        A server seals on its own schedule.
        """
        return self.lite


def detect(version_call: Any) -> Backend:
    """Classify a connected server by calling ``version_call()`` (``MilvusClient.get_server_version``).

    Milvus Lite 2.5 does not implement GetVersion (UNIMPLEMENTED); every
    Milvus server answers it.
    """
    try:
        version_call()
    except grpc.RpcError as exc:
        if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
            return Backend(lite=True)
        raise
    return Backend(lite=False)
