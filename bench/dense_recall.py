"""The dense channel's recall@10 against exact search, on a hub's own index (run after the hub has stopped).

Opens the index the hub left (its embedded Milvus Lite file, or a Milvus URI), reads every stored vector with its
namespace, and for each query compares what ``MilvusIndex.search_dense`` answers (what the hub's dense channel
asks, over every namespace) with an exact numpy search over the same stored vectors. Recall compares
similarities, not ids: the corpus repeats turns, so equal vectors tie and either id is right.

Exact means exact over what the index stores: on Lite that is each vector's float16 copy (against float32
vectors, float16 exact search returned the same top 10 in bench/bench_dense_index.py).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from memhub.index import IndexFilter, MilvusIndex, dense_search, schema

PAGE = 4096


@dataclass(frozen=True)
class Recall:
    queries: int
    rows: int
    recall_at_10: float
    worst: float


def stored(index: MilvusIndex) -> tuple[list[str], np.ndarray]:
    """Every row's namespace and float32 vector, read in pages."""
    coded = index.backend.coded_dense
    field = schema.DENSE_F16 if coded else schema.DENSE
    namespaces: list[str] = []
    chunks: list[np.ndarray] = []
    it = index._client.query_iterator(  # noqa: SLF001 - a benchmark reading the whole collection
        index.collection, batch_size=PAGE, filter="", output_fields=[schema.ID, schema.NAMESPACE, field]
    )
    with tqdm(desc="reading stored vectors", unit="row", file=sys.stderr) as bar:
        while page := it.next():
            namespaces += [str(r[schema.NAMESPACE]) for r in page]
            vectors = dense_search.stored_vectors(coded, index.dimension, page)
            chunks.append(np.vstack([vectors[str(r[schema.ID])] for r in page]))
            bar.update(len(page))
    it.close()
    return namespaces, np.vstack(chunks) if chunks else np.zeros((0, index.dimension), np.float32)


def measure(index: MilvusIndex, queries: np.ndarray, k: int = 10, depth: int = 30) -> Recall:
    """Recall@k of ``search_dense(q, every namespace, depth)`` against exact search, averaged over ``queries``."""
    namespaces, vectors = stored(index)
    flt = IndexFilter(namespaces=tuple(sorted(set(namespaces))))
    shares = []
    for q in tqdm(queries, desc="dense recall", unit="query", file=sys.stderr):
        found = [s for _, s in index.search_dense(q, flt, depth)][:k]
        exact = np.sort(vectors @ q)[::-1][:k]
        shares.append(_share(found, exact.tolist()))
    return Recall(len(shares), len(vectors), float(np.mean(shares)), float(np.min(shares)))


def _share(found: Sequence[float], exact: Sequence[float]) -> float:
    """Share of the exact top k matched: results at least as similar as the exact k-th (ties count)."""
    if not exact:
        return 1.0
    floor = exact[-1] - 1e-5  # the same float32 products, summed in another order
    return min(len(exact), sum(1 for s in found if s >= floor)) / len(exact)
