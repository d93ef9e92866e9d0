"""A dense search as each backend runs it: what is sent to Milvus, and how its answer becomes ``[(id, similarity)]``.

Servers search the float vectors under their graph index and answer with
similarities. Lite searches the thermometer codes for ``candidates`` rows by
Hamming distance and returns their float16 copies, which are scored here
against the float32 query (memhub/index/dense_codes.py), so the similarities
a caller sees are exact on both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memhub.index import dense_codes, schema
from memhub.index.backend import Backend, DenseIndex
from memhub.index.raw_search import Found


@dataclass(frozen=True)
class DenseRequest:
    """One Milvus search call for a dense search."""

    data: list[Any]
    anns_field: str
    limit: int
    """Hits asked of Milvus: the caller's limit, or the candidates to score on Lite."""
    search_params: dict[str, Any] | None
    output_fields: list[str]


ROWS_PER_CANDIDATE = 250
"""Lite: a collection of n rows gets n/250 candidates per search (at least 4 per hit asked for), up to the configured
number: 400 at 100k rows (recall@10 1.000 on bench_scale's 100k, 200 candidates 0.998), 120 for a top 30 at 10k,
where parsing the candidates' float16 copies, not the engine, was most of the hub's CPU for a search."""


CLOSE_FROM = 0.8
"""A search that wants only hits at this cosine similarity or above is a search for close rows (below)."""
CLOSE_CANDIDATES = 40
"""Lite: candidates for a search for close rows, whatever the collection's size (at least 4 per hit asked for).
Rows that close to the query are also close by code: on real turns (LoCoMo and LongMemEval) embedded by the hub's
model, all in one namespace, the 40 rows nearest by code held every one of each query's 5 closest rows at cosine
0.85 or more, at 30,000 turns (3,232 pairs) and at 82,893 (3,305 pairs); 20 held 99.9% and 99.97%. The
near-duplicate check on each write asked for 400 at 100k rows, and decoding, keeping and scoring a candidate's
float16 copy costs the hub ~4 us (bench/bench_close_candidates.py)."""


ROWS_UNKNOWN = 1 << 62
"""A collection's row count before it was counted: a Lite search then proposes its most candidates."""


def candidates_for(backend: Backend, limit: int, rows: int, max_limit: int, at_least: float | None = None) -> int:
    """How many rows Lite's codes propose for a search of ``limit`` hits in a collection of about ``rows`` rows;
    fewer when only hits at ``at_least`` or above are wanted and those are close rows (``CLOSE_FROM``)."""
    candidates = min(max_limit, max(limit, 4 * limit, min(backend.lite_candidates, -(-rows // ROWS_PER_CANDIDATE))))
    if at_least is not None and at_least >= CLOSE_FROM:
        return min(candidates, max(CLOSE_CANDIDATES, 4 * limit))
    return candidates


def request(
    backend: Backend,
    dense: DenseIndex,
    queries: Sequence[np.ndarray],
    limit: int,
    max_limit: int,
    rows: int = ROWS_UNKNOWN,
    at_least: float | None = None,
    with_vectors: bool = True,
) -> DenseRequest:
    """The search call for unit ``queries`` wanting ``limit`` hits each (only those at ``at_least`` or above, when
    given), in a collection of about ``rows`` rows. ``with_vectors``: Lite sends its candidates' float16 copies along
    (not needed when the hub holds a copy of them, memhub/index/vector_copies.py)."""
    if backend.coded_dense:
        candidates = candidates_for(backend, limit, rows, max_limit, at_least)
        codes = dense_codes.thermometer(np.vstack(queries))
        output = [schema.DENSE_F16] if with_vectors else []
        return DenseRequest([row.tobytes() for row in codes], schema.DENSE_CODES, candidates, None, output)
    params = dense.search_params_for(limit)
    return DenseRequest(list(queries), schema.DENSE, limit, {"params": params} if params else None, [])


def hits(
    backend: Backend,
    answer: Sequence[Found],
    queries: Sequence[np.ndarray],
    limit: int,
    candidates: Callable[[Found], tuple[list[str], np.ndarray]],
    at_least: float | None = None,
) -> list[list[tuple[str, float]]]:
    """Milvus's answer (one ``Found`` per query) as ``[(id, similarity)]`` per query, best first, ``limit`` each,
    and only those at ``at_least`` or above when it is given (a search for close rows proposed fewer candidates:
    what lies below is not the collection's best). On Lite, ``candidates`` gives the ids Lite's codes proposed
    with their float16 vectors, to score exactly (those whose vector is gone are left out)."""
    lists = list(answer) + [Found([], [], {}) for _ in range(len(queries) - len(answer))]
    if not backend.coded_dense:
        out = [list(zip(found.ids, found.scores, strict=True)) for found in lists]
    else:
        out = []
        for found, query in zip(lists, queries, strict=True):
            ids, halves = candidates(found)
            out.append(dense_codes.best(ids, halves.astype(np.float32), query, limit))
    if at_least is None:
        return out
    return [[(mid, score) for mid, score in hits if score >= at_least] for hits in out]


def sent_vectors(found: Found, dimension: int) -> tuple[list[str], np.ndarray]:
    """The candidates of a Lite search that asked for their vectors, with them (float16, as stored)."""
    return list(found.ids), dense_codes.unpack_halves(found.fields.get(schema.DENSE_F16, []), dimension)


def stored_vectors(coded: bool, dimension: int, rows: Sequence[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Rows read back with ``vector_output_fields(coded)`` as id -> float32 vector."""
    if not rows:
        return {}
    if coded:
        matrix = dense_codes.unpack([r[schema.DENSE_F16] for r in rows], dimension)
        return {str(r[schema.ID]): matrix[i] for i, r in enumerate(rows)}
    return {str(r[schema.ID]): np.asarray(r[schema.DENSE], dtype=np.float32) for r in rows}


def vector_output_fields(coded: bool) -> list[str]:
    """The fields to read to get rows' vectors back from a collection of the coded layout (Lite's) or not."""
    return [schema.ID, schema.DENSE_F16 if coded else schema.DENSE]
