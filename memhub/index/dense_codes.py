"""How the embedded index stores a dense vector: a thermometer code to find candidates, a float16 copy to score them.

Milvus Lite 2.5.1 offers no fast exact dense search: FLAT scans every float
(28 ms of a core per search at 100k rows of 384 floats), FLAT on
FLOAT16_VECTOR is slower still, and its IVF_FLAT and AUTOINDEX answer from one
fixed approximate index whatever nprobe says (recall@10 0.67-0.76 against
exact; bench/bench_dense_index.py reproduces both). Its BIN_FLAT (Hamming
distance over bits) is fast, so the embedded index searches in two steps:

1. candidates: Hamming distance between *thermometer codes*. Each dimension
   is cut at three thresholds (-t, 0, +t), one bit per threshold, so the
   Hamming distance between two codes is the L1 distance between the vectors
   quantised to four levels per dimension; for unit vectors that ranks close
   to inner product. ``t`` is 0.67 standard deviations of a coordinate of a
   random unit vector (1/sqrt(dimension)): the quartiles of each coordinate,
   for any model, with nothing to calibrate or record.
2. scoring: the candidates' float16 vectors (returned by the same search,
   from a VARCHAR field: Lite fails a search that outputs a FLOAT16_VECTOR
   field) are scored exactly against the float32 query, and the best are kept.

Measured in numpy on 100k vectors made like bench/bench_scale.py's texts
(each the normalised sum of two LoCoMo turns' embeddings), 200 LoCoMo
questions, recall@10 against exact float32 search with 400 candidates: sign
bits of the centred vector (48 bytes) 0.92, random-rotation sign bits 0.95,
768-bit SimHash 0.96, these codes (144 bytes) 1.000 (0.996 at 1M rows).
Centring them on a sample's mean, or scaling them per dimension, did no
better. bench/bench_scale.py prints the hub's own recall on its index.
"""

from __future__ import annotations

import binascii
import math
from collections.abc import Sequence

import numpy as np
import pybase64  # SIMD base64: 800 candidates' copies decoded in 0.08 ms here, against 3.3 ms with binascii

LEVELS = 3
"""Thresholds per dimension: bits per dimension in a code."""
THRESHOLD_SD = 0.67
"""The outer thresholds, in standard deviations of a coordinate of a random unit vector (the quartiles)."""


def code_bits(dimension: int) -> int:
    """Length of a code in bits: three per dimension, rounded up to whole bytes (Milvus's binary vectors)."""
    return 8 * math.ceil(LEVELS * dimension / 8)


def thermometer(vectors: np.ndarray) -> np.ndarray:
    """The codes of unit vectors, one row of ``code_bits(d) / 8`` bytes per vector (shape ``(n, bytes)``, uint8)."""
    values = np.atleast_2d(np.asarray(vectors, dtype=np.float32))
    t = THRESHOLD_SD / math.sqrt(values.shape[1])
    bits = np.concatenate((values > -t, values > 0, values > t), axis=1)
    packed: np.ndarray = np.packbits(bits, axis=1)
    return packed


def pack(vector: np.ndarray) -> str:
    """A unit vector as the text the index keeps for scoring: its float16 bytes in base64."""
    return pybase64.b64encode(np.asarray(vector, dtype=np.float16).tobytes()).decode("ascii")


def pack_many(vectors: np.ndarray) -> list[str]:
    """``pack`` of each row of ``vectors``, in order, converted at once (the same text, row for row)."""
    halves = np.ascontiguousarray(vectors, dtype=np.float16)
    width = 2 * halves.shape[1]
    if width % 3:  # base64 pads each row: encoded one at a time
        return [pybase64.b64encode(row.tobytes()).decode("ascii") for row in halves]
    # No padding inside: the joined rows encode to the rows' texts joined (384-d: 1,024 characters each).
    text = pybase64.b64encode(halves.tobytes()).decode("ascii")
    chars = 4 * width // 3
    return [text[i : i + chars] for i in range(0, len(text), chars)]


def unpack(packed: Sequence[str], dimension: int) -> np.ndarray:
    """float32 rows of the vectors ``pack`` wrote, in order (shape ``(len(packed), dimension)``).

    Raises ValueError when a value is not what ``pack`` writes for this dimension (a corrupted row).
    """
    return unpack_halves(packed, dimension).astype(np.float32)


def unpack_halves(packed: Sequence[str], dimension: int) -> np.ndarray:
    """``unpack`` before the conversion to float32: the stored float16 rows, read-only."""
    try:
        if (2 * dimension) % 3 == 0:  # no padding inside: one decode of the joined text (384-d: 1,024 characters each)
            raw = pybase64.b64decode("".join(packed), validate=True)
        else:
            raw = b"".join(pybase64.b64decode(p, validate=True) for p in packed)
    except (binascii.Error, ValueError):
        raise ValueError("a stored vector is not base64; rebuild the index with `memhub reindex`") from None
    if len(raw) != 2 * dimension * len(packed):
        raise ValueError(f"stored vectors do not have {dimension} dimensions; rebuild the index with `memhub reindex`")
    return np.frombuffer(raw, dtype=np.float16).reshape(len(packed), dimension)


def best(ids: Sequence[str], vectors: np.ndarray, query: np.ndarray, limit: int) -> list[tuple[str, float]]:
    """The ``limit`` ids whose vectors have the largest inner product with ``query``, best first, with it."""
    if not ids:
        return []
    scores = vectors @ query
    if len(ids) > limit:
        top = np.argpartition(-scores, limit - 1)[:limit]
        order = top[np.argsort(-scores[top], kind="stable")]
    else:
        order = np.argsort(-scores, kind="stable")
    return [(ids[i], float(scores[i])) for i in order]


def packed_chars(dimension: int) -> int:
    """Length of ``pack``'s text for a vector of ``dimension`` floats (the VARCHAR that holds it)."""
    return 4 * math.ceil(2 * dimension / 3)
