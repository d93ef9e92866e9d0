"""The retrieval index: memories in Milvus (dense vectors + BM25), rebuildable from Postgres.

``MilvusIndex`` is the whole public surface; the other modules hold its
parts (schema, filter building, row validation, error mapping).
"""

from memhub.index.errors import IndexBackendError, IndexCollectionMissing, IndexModelMismatch, IndexUnavailable
from memhub.index.milvus_index import MilvusIndex
from memhub.index.records import IndexedMemory, IndexFilter

__all__ = [
    "IndexBackendError",
    "IndexCollectionMissing",
    "IndexFilter",
    "IndexModelMismatch",
    "IndexUnavailable",
    "IndexedMemory",
    "MilvusIndex",
]
