"""Turn IndexedMemory values into Milvus rows, refusing what Milvus would reject later."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memhub.index import dense_codes, schema
from memhub.index.backend import Backend
from memhub.index.filters import namespace_key, tag_key_list, tag_keys
from memhub.index.records import IndexedMemory


def to_row(mem: IndexedMemory, dimension: int, backend: Backend) -> dict[str, Any]:
    """Validate one memory and return its row as ``backend`` lays it out. Raises ValueError naming the memory and
    field."""
    where = f"memory {mem.id!r}"
    return {**_scalars(mem, backend, where), **dense_fields(check_vector(mem.vector, dimension, where), backend)}


def to_columns(mems: Sequence[IndexedMemory], dimension: int, backend: Backend) -> dict[str, list[Any]]:
    """The rows ``to_row`` would make of ``mems``, as one list per field (what a columnar insert sends), checked
    the same way. The dense fields are computed for all the vectors at once: per row they were a tenth of a
    reindex's fill."""
    if not mems:
        return {}
    rows = [_scalars(m, backend, f"memory {m.id!r}") for m in mems]
    columns: dict[str, list[Any]] = {field: [r[field] for r in rows] for field in rows[0]}
    vectors = np.stack([check_vector(m.vector, dimension, f"memory {m.id!r}") for m in mems])
    if backend.coded_dense:
        codes = dense_codes.thermometer(vectors)
        columns[schema.DENSE_CODES] = [c.tobytes() for c in codes]
        columns[schema.DENSE_F16] = dense_codes.pack_many(vectors)
    else:
        columns[schema.DENSE] = list(vectors)
    return columns


def _scalars(mem: IndexedMemory, backend: Backend, where: str) -> dict[str, Any]:
    """The row's fields but the dense ones, after checking them."""
    _text(mem.id, "id", schema.MAX_ID_CHARS, where)
    _text(mem.namespace, "namespace", schema.MAX_NAMESPACE_CHARS, where)
    _text(mem.kind, "kind", schema.MAX_KIND_CHARS, where)
    _text(mem.type, "type", schema.MAX_TYPE_CHARS, where)
    if not isinstance(mem.content, str):
        raise ValueError(f"{where}: content must be a string")
    if isinstance(mem.tags, str):  # would otherwise become one tag per character
        raise ValueError(f"{where}: tags must be a tuple of strings, not a string")
    keys = tag_keys(mem.tags)
    if len(keys.encode("utf-8")) > schema.MAX_VARCHAR_BYTES:
        raise ValueError(f"{where}: {len(mem.tags)} tags are too long to index together")
    if backend.tags_as_array and len(mem.tags) > schema.MAX_TAGS:
        raise ValueError(f"{where}: {len(mem.tags)} tags; at most {schema.MAX_TAGS} can be indexed")
    return {
        schema.ID: mem.id,
        schema.NAMESPACE: mem.namespace,
        **({schema.NAMESPACE_KEY: namespace_key(mem.namespace)} if backend.namespace_keys else {}),
        schema.KIND: mem.kind,
        schema.TYPE: mem.type,
        schema.CONTENT: _fit_bytes(mem.content, schema.MAX_VARCHAR_BYTES),
        schema.TAG_KEYS: tag_key_list(mem.tags) if backend.tags_as_array else keys,
        schema.OCCURRED_AT: _ms(mem.occurred_at_ms, "occurred_at_ms", where),
        schema.CREATED_AT: _ms(mem.created_at_ms, "created_at_ms", where),
        schema.EXPIRES_AT: _ms(mem.expires_at_ms, "expires_at_ms", where, non_negative=True),
    }


def dense_fields(vector: np.ndarray, backend: Backend) -> dict[str, Any]:
    """A checked unit vector as the row's dense field(s): Lite's code and float16 copy, or a server's floats."""
    if backend.coded_dense:
        return {schema.DENSE_CODES: dense_codes.thermometer(vector)[0].tobytes(), schema.DENSE_F16: dense_codes.pack(vector)}
    return {schema.DENSE: vector}


def check_vector(vector: Any, dimension: int, where: str) -> np.ndarray:
    """The vector as unit-length float32 after checking its length and finiteness.

    The index compares vectors by inner product, which equals cosine
    similarity only for unit vectors; embedders return unit vectors, and
    normalising here (cheap) keeps that true for any caller. A zero vector
    has no direction and is refused.
    """
    try:
        values = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: vector must be a sequence of numbers") from None
    if values.shape != (dimension,):
        raise ValueError(f"{where}: vector has {values.size} dimensions, the index expects {dimension}")
    if not np.isfinite(values).all():
        raise ValueError(f"{where}: vector contains NaN or infinity")
    norm = float(np.linalg.norm(values))
    if norm < 1e-12:
        raise ValueError(f"{where}: vector is all zeros (it has no direction to compare)")
    return values / norm


def _text(value: object, field: str, max_chars: int, where: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}: {field} must be a non-empty string")
    if len(value) > max_chars:
        raise ValueError(f"{where}: {field} has {len(value)} characters, at most {max_chars} allowed")


def _ms(value: object, field: str, where: str, *, non_negative: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}: {field} must be an int (epoch ms), got {value!r}")
    if non_negative and value < 0:
        raise ValueError(f"{where}: {field} must be >= 0 (0 means never), got {value}")
    return value


def _fit_bytes(text: str, max_bytes: int) -> str:
    """Cut ``text`` to at most ``max_bytes`` UTF-8 bytes without splitting a character.

    Only text made mostly of 4-byte characters near the 16384-character limit
    gets here; losing its tail changes BM25 for that row, never correctness
    (hits are hydrated from Postgres, which keeps the full text).
    """
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", errors="ignore")


SCALAR_FIELDS = (
    schema.ID,
    schema.NAMESPACE,
    schema.KIND,
    schema.TYPE,
    schema.CONTENT,
    schema.TAG_KEYS,
    schema.OCCURRED_AT,
    schema.CREATED_AT,
    schema.EXPIRES_AT,
)
"""Every stored field but the vectors (the sparse one is derived from the content inside Milvus)."""


def same_fields(row: dict[str, Any], stored: dict[str, Any]) -> bool:
    """Does ``stored`` (read back from the collection) hold what ``row`` (from ``to_row``) would write, vector aside?"""
    return all(row[f] == stored.get(f) for f in SCALAR_FIELDS)
