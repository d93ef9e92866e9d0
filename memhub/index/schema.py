"""The Milvus collection layout: field names, limits, analyzer, indexes, and what a collection records.

Two layouts, one per kind of backend (``backend.Backend.coded_dense``): on a
Milvus server the dense vector is a FLOAT_VECTOR under a graph index; on
Milvus Lite it is a thermometer code (BINARY_VECTOR) for candidates plus a
float16 copy for scoring them (memhub/index/dense_codes.py). Bump the
layout's version whenever a change here needs existing collections to be
rebuilt; ``MilvusIndex.ensure_collection`` then asks for ``memhub reindex``.
"""

from __future__ import annotations

import json
from typing import Any

from pymilvus import CollectionSchema, DataType, Function, FunctionType, MilvusClient
from pymilvus.milvus_client.index import IndexParams

from memhub.index import dense_codes
from memhub.index.backend import Backend, DenseIndex

# 2: milvus-lite 2.5 (namespace a plain field there), record in the description, jieba analyzer, IP metric.
# Milvus servers keep it.
LAYOUT_VERSION = "2"
# 3: Milvus Lite's dense vector as a thermometer code and a float16 copy instead of a FLOAT_VECTOR (issue 27).
CODED_LAYOUT_VERSION = "3"
# 4: Lite rows carry the namespace's INT64 key, and searches filter on it (backend.Backend.namespace_keys).
KEYED_LAYOUT_VERSION = "4"
LAYOUT_NOTES = {
    LAYOUT_VERSION: "dense vectors as floats",
    CODED_LAYOUT_VERSION: "the embedded index's dense vectors as codes and float16 copies, 3-4x faster searches at 100k "
    "memories; `memhub reindex` reuses the stored vectors, embedding nothing again",
    KEYED_LAYOUT_VERSION: "the embedded index's dense vectors as codes and float16 copies, and its namespaces filtered "
    "on an integer key (the VARCHAR filter was half of its CPU per search at 100k memories); `memhub reindex` reuses "
    "the stored vectors, embedding nothing again",
}
"""What each layout is, for the message that asks to rebuild an index of another layout."""

# Field names (filters.py and rows.py use these, never literals).
ID = "id"
NAMESPACE = "namespace"
NAMESPACE_KEY = "namespace_key"
"""Lite: a 63-bit key of the namespace (``filters.namespace_key``), what searches filter on there."""
KIND = "kind"
TYPE = "type"
CONTENT = "content"
TAG_KEYS = "tag_keys"
OCCURRED_AT = "occurred_at_ms"
CREATED_AT = "created_at_ms"
EXPIRES_AT = "expires_at_ms"
DENSE = "dense"
"""Servers: the FLOAT_VECTOR searched by the graph index."""
DENSE_CODES = "dense_codes"
"""Lite: the vector's thermometer code (BINARY_VECTOR), searched by Hamming distance for candidates."""
DENSE_F16 = "dense_f16"
"""Lite: the vector's float16 bytes in base64 (VARCHAR), to score the candidates exactly."""
SPARSE = "sparse"
DENSE_METRIC = "IP"
CODES_METRIC = "HAMMING"

# Character limits the hub promises; Milvus counts VARCHAR max_length in bytes,
# so the declared byte limits allow 4 UTF-8 bytes per character.
MAX_ID_CHARS = 64
MAX_NAMESPACE_CHARS = 255
MAX_KIND_CHARS = 16
MAX_TYPE_CHARS = 32
# Tags per memory (memhub/core/validation.py MAX_TAGS) and the longest key of a 64-character tag (each character at
# most 4 UTF-8 bytes, each byte at most 3 key characters): for servers that keep the keys as an ARRAY.
MAX_TAGS = 32
MAX_TAG_KEY_BYTES = 64 * 4 * 3
# 65535 bytes is the largest VARCHAR Milvus accepts. 16384 characters fit unless
# every one of them needs 4 bytes; rows.py then cuts at a character boundary.
MAX_VARCHAR_BYTES = 65535

# Lucene's English stop list, the list behind Milvus's "_english_".
ENGLISH_STOP_WORDS: tuple[str, ...] = (
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
    "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
    "these", "they", "this", "to", "was", "will", "with",
)  # fmt: skip

# The jieba tokenizer emits whitespace and punctuation as tokens of their own;
# left in, "?" or "," would match nearly every memory. Dropped like stop words.
PUNCTUATION_TOKENS: tuple[str, ...] = (
    " ", "  ", "\n", "\t", ",", ".", "!", "?", ";", ":", "'", '"', "(", ")", "[", "]", "{", "}", "-", "/", "…",
    "，", "。", "！", "？", "；", "：", "、", "“", "”", "‘", "’", "（", "）", "《", "》", "【", "】", "～",
)  # fmt: skip

# One analyzer for English and Chinese in one field: jieba segments Chinese
# into words (花生 finds 小雨对花生过敏) and passes other text through as words
# and numbers; lowercase + the English stemmer then make "deploy" find
# "Deploys". Measured on LoCoMo (5,882 turns, 1,536 questions, BM25 alone,
# recall@5/@10): this analyzer 51.8/59.6, standard tokenizer + stemmer
# 51.8/59.7, standard without stemmer 48.7/55.8 (what milvus-lite 3.x gave).
# Milvus's built-in {"type": "chinese"} does not stem English.
DEFAULT_ANALYZER: dict[str, Any] = {
    "tokenizer": "jieba",
    "filter": [
        "lowercase",
        {"type": "stemmer", "language": "english"},
        {"type": "stop", "stop_words": list(ENGLISH_STOP_WORDS + PUNCTUATION_TOKENS)},
    ],
}

# The collection's description records what it was built for, as JSON after
# this prefix. Description, not collection properties: milvus-lite 2.5
# accepts properties at creation but returns none (and cannot alter them),
# while every backend keeps the description.
RECORD_PREFIX = "memhub memories "
RECORD_MODEL = "embedding_model_id"
RECORD_DIMENSION = "embedding_dimension"
RECORD_LAYOUT = "index_layout"
RECORD_ANALYZER = "bm25_analyzer"


def canonical_analyzer(analyzer: dict[str, Any]) -> str:
    """Stable JSON for an analyzer config, so recorded and configured ones compare equal."""
    return json.dumps(analyzer, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def layout_version(backend: Backend) -> str:
    """The layout a collection on this backend records (and a hub on it expects)."""
    if backend.namespace_keys:
        return KEYED_LAYOUT_VERSION
    return CODED_LAYOUT_VERSION if backend.coded_dense else LAYOUT_VERSION


def recorded_analyzer(analyzer: dict[str, Any], backend: Backend) -> str:
    """What a collection records as its BM25 analyzer: none where the engine has no BM25 (its keywords come from
    Postgres), so a collection made there is rebuilt rather than used without its sparse field once the engine has."""
    return canonical_analyzer(analyzer) if backend.bm25 else "none"


def record(model_id: str, dimension: int, analyzer: dict[str, Any], backend: Backend) -> dict[str, str]:
    """What a new collection on ``backend`` records about itself."""
    return {
        RECORD_MODEL: model_id,
        RECORD_DIMENSION: str(dimension),
        RECORD_LAYOUT: layout_version(backend),
        RECORD_ANALYZER: recorded_analyzer(analyzer, backend),
    }


def describe(rec: dict[str, str]) -> str:
    """The collection description carrying ``rec``."""
    return RECORD_PREFIX + json.dumps(rec, sort_keys=True, ensure_ascii=False)


def parse_description(description: str) -> dict[str, str]:
    """The record in a collection description; empty when it carries none (not made by memhub, or too old)."""
    if not description.startswith(RECORD_PREFIX):
        return {}
    try:
        value = json.loads(description[len(RECORD_PREFIX) :])
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def build_schema(dimension: int, analyzer: dict[str, Any], rec: dict[str, str], backend: Backend) -> CollectionSchema:
    """Fields, the BM25 function, and the description recording ``rec``, as ``backend`` supports them.

    The namespace is the partition key where the backend filters on one
    correctly (servers 2.5+ prune a search to the buckets of its namespaces);
    elsewhere a plain VARCHAR with the same filter expression (``backend.py``).
    Lite gets the coded dense fields (``dense_codes.py``), servers a
    FLOAT_VECTOR; servers before 2.5 get no sparse field and no BM25 function.
    """
    s = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False, description=describe(rec))
    s.add_field(ID, DataType.VARCHAR, is_primary=True, max_length=MAX_ID_CHARS)
    s.add_field(NAMESPACE, DataType.VARCHAR, max_length=4 * MAX_NAMESPACE_CHARS, is_partition_key=backend.namespace_partition_key)
    if backend.namespace_keys:
        s.add_field(NAMESPACE_KEY, DataType.INT64)
    s.add_field(KIND, DataType.VARCHAR, max_length=4 * MAX_KIND_CHARS)
    s.add_field(TYPE, DataType.VARCHAR, max_length=4 * MAX_TYPE_CHARS)
    if backend.bm25:
        s.add_field(CONTENT, DataType.VARCHAR, max_length=MAX_VARCHAR_BYTES, enable_analyzer=True, analyzer_params=analyzer)
    else:
        s.add_field(CONTENT, DataType.VARCHAR, max_length=MAX_VARCHAR_BYTES)
    if backend.tags_as_array:
        s.add_field(TAG_KEYS, DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=MAX_TAGS, max_length=MAX_TAG_KEY_BYTES)
    else:
        s.add_field(TAG_KEYS, DataType.VARCHAR, max_length=MAX_VARCHAR_BYTES)
    s.add_field(OCCURRED_AT, DataType.INT64)
    s.add_field(CREATED_AT, DataType.INT64)
    s.add_field(EXPIRES_AT, DataType.INT64)
    if backend.coded_dense:
        s.add_field(DENSE_CODES, DataType.BINARY_VECTOR, dim=dense_codes.code_bits(dimension))
        s.add_field(DENSE_F16, DataType.VARCHAR, max_length=dense_codes.packed_chars(dimension))
    else:
        s.add_field(DENSE, DataType.FLOAT_VECTOR, dim=dimension)
    if backend.bm25:
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


def dense_field(backend: Backend) -> str:
    """The dense field a search runs on: Lite's codes, or a server's vectors."""
    return DENSE_CODES if backend.coded_dense else DENSE


def vector_fields(backend: Backend) -> set[str]:
    """The indexed vector fields of collections on ``backend`` (each needs an index before a load)."""
    return {dense_field(backend), SPARSE} if backend.bm25 else {dense_field(backend)}


def build_index_params(backend: Backend, dense: DenseIndex, fields: set[str] | None = None) -> IndexParams:
    """The dense field's index (Hamming on Lite's codes, inner product on a server's vectors), BM25 on the sparse one.

    Inner product, not COSINE: rows and queries are unit vectors
    (``rows.check_vector``), where the two are equal, and Milvus Lite spent
    ~40% less CPU per search on IP (measured 4.2 vs 6.8 ms per search at 10k
    rows, FLAT, 16 threads).

    ``fields`` limits the result to some of ``vector_fields`` (default all).
    """
    wanted = vector_fields(backend) if fields is None else fields & vector_fields(backend)
    params = MilvusClient.prepare_index_params()
    if DENSE_CODES in wanted:
        params.add_index(field_name=DENSE_CODES, index_type=dense.index_type, metric_type=CODES_METRIC)
    if DENSE in wanted:
        params.add_index(field_name=DENSE, index_type=dense.index_type, metric_type=DENSE_METRIC, params=dense.build_params)
    if SPARSE in wanted:
        params.add_index(field_name=SPARSE, index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    return params
