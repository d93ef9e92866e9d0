"""The Milvus collection layout: field names, limits, analyzer, indexes, recorded properties.

Bump ``LAYOUT_VERSION`` whenever a change here needs existing collections to
be rebuilt; ``MilvusIndex.ensure_collection`` then asks for ``memhub reindex``.
"""

from __future__ import annotations

import json
from typing import Any

from pymilvus import CollectionSchema, DataType, Function, FunctionType, MilvusClient
from pymilvus.milvus_client.index import IndexParams

LAYOUT_VERSION = "1"

# Field names (filters.py and rows.py use these, never literals).
ID = "id"
NAMESPACE = "namespace"
KIND = "kind"
TYPE = "type"
CONTENT = "content"
TAG_KEYS = "tag_keys"
OCCURRED_AT = "occurred_at_ms"
CREATED_AT = "created_at_ms"
EXPIRES_AT = "expires_at_ms"
DENSE = "dense"
SPARSE = "sparse"

# Character limits the hub promises; Milvus counts VARCHAR max_length in bytes,
# so the declared byte limits allow 4 UTF-8 bytes per character.
MAX_ID_CHARS = 64
MAX_NAMESPACE_CHARS = 255
MAX_KIND_CHARS = 16
MAX_TYPE_CHARS = 32
# 65535 bytes is the largest VARCHAR Milvus accepts. 16384 characters fit unless
# every one of them needs 4 bytes; rows.py then cuts at a character boundary.
MAX_VARCHAR_BYTES = 65535

# Lucene's English stop list, the list behind Milvus's "_english_". It is
# spelled out because milvus-lite reads only explicit lists (it would treat
# "_english_" as a literal word).
ENGLISH_STOP_WORDS: tuple[str, ...] = (
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
    "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
    "these", "they", "this", "to", "was", "will", "with",
)  # fmt: skip

# Milvus's built-in "english" analyzer spelled as a custom one, because
# milvus-lite refuses {"type": "english"} ("unknown tokenizer type"). Real
# Milvus applies all three filters. milvus-lite always lowercases, applies the
# stop list and ignores the stemmer (it has none), so stemming only happens on
# a real server. The stop list still pays on milvus-lite: BM25 p50 fell from
# 44 ms to 12 ms at 10k rows, because "the"/"of" no longer walk huge postings.
DEFAULT_ANALYZER: dict[str, Any] = {
    "tokenizer": "standard",
    "filter": [
        "lowercase",
        {"type": "stemmer", "language": "english"},
        {"type": "stop", "stop_words": list(ENGLISH_STOP_WORDS)},
    ],
}

# Collection properties. Properties (not the description) carry the record:
# milvus-lite drops the description but persists properties across reopen,
# and Milvus 2.5+ stores arbitrary property keys set at creation.
PROP_MODEL = "memhub.embedding_model_id"
PROP_DIMENSION = "memhub.embedding_dimension"
PROP_LAYOUT = "memhub.index_layout"
PROP_ANALYZER = "memhub.bm25_analyzer"


def canonical_analyzer(analyzer: dict[str, Any]) -> str:
    """Stable JSON for an analyzer config, so recorded and configured ones compare equal."""
    return json.dumps(analyzer, sort_keys=True, separators=(",", ":"))


def properties(model_id: str, dimension: int, analyzer: dict[str, Any]) -> dict[str, str]:
    """The properties recorded on a new collection (Milvus property values are strings)."""
    return {
        PROP_MODEL: model_id,
        PROP_DIMENSION: str(dimension),
        PROP_LAYOUT: LAYOUT_VERSION,
        PROP_ANALYZER: canonical_analyzer(analyzer),
    }


def build_schema(model_id: str, dimension: int, analyzer: dict[str, Any]) -> CollectionSchema:
    """Fields, the BM25 function and a human-readable description (real Milvus keeps it)."""
    s = MilvusClient.create_schema(
        auto_id=False,
        enable_dynamic_field=False,
        description=f"memhub memories; embedding model {model_id}, dimension {dimension}",
    )
    s.add_field(ID, DataType.VARCHAR, is_primary=True, max_length=MAX_ID_CHARS)
    # Partition key: real Milvus prunes to the buckets of the filtered namespaces.
    s.add_field(NAMESPACE, DataType.VARCHAR, max_length=4 * MAX_NAMESPACE_CHARS, is_partition_key=True)
    s.add_field(KIND, DataType.VARCHAR, max_length=4 * MAX_KIND_CHARS)
    s.add_field(TYPE, DataType.VARCHAR, max_length=4 * MAX_TYPE_CHARS)
    s.add_field(
        CONTENT,
        DataType.VARCHAR,
        max_length=MAX_VARCHAR_BYTES,
        enable_analyzer=True,
        analyzer_params=analyzer,
    )
    s.add_field(TAG_KEYS, DataType.VARCHAR, max_length=MAX_VARCHAR_BYTES)
    s.add_field(OCCURRED_AT, DataType.INT64)
    s.add_field(CREATED_AT, DataType.INT64)
    s.add_field(EXPIRES_AT, DataType.INT64)
    s.add_field(DENSE, DataType.FLOAT_VECTOR, dim=dimension)
    s.add_field(SPARSE, DataType.SPARSE_FLOAT_VECTOR)
    s.add_function(
        Function(
            name="content_bm25",
            function_type=FunctionType.BM25,
            input_field_names=[CONTENT],
            output_field_names=[SPARSE],
        )
    )
    return s


def build_index_params(dense_index_type: str, fields: set[str] | None = None) -> IndexParams:
    """COSINE on the dense field (robust if a vector is not exactly unit length), BM25 on the sparse one.

    ``fields`` limits the result to some of the two (default both).
    """
    params = MilvusClient.prepare_index_params()
    if fields is None or DENSE in fields:
        params.add_index(field_name=DENSE, index_type=dense_index_type, metric_type="COSINE")
    if fields is None or SPARSE in fields:
        params.add_index(field_name=SPARSE, index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    return params
