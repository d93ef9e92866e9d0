"""memhub/index/raw_search.py against pymilvus's own MilvusClient.search, on a real Milvus Lite collection.

The hub reads search replies straight from the protobuf; these tests send the same searches both ways (coded dense
with the float16 copies as output, BM25, filtered, several queries in one call, a filter matching nothing) and
require the same ids, scores and output fields in the same order. A pymilvus upgrade that moves the internals the
reader uses fails here.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_milvus_index import CORPUS, DIM, MODEL, mem, unit

from memhub.index import IndexFilter, MilvusIndex, dense_codes, raw_search, schema
from memhub.index.filters import build_filter


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MilvusIndex]:
    folder: Path = tmp_path_factory.mktemp("raw-search")
    idx = MilvusIndex(str(folder / "index.db"), collection=f"c_{uuid.uuid4().hex[:12]}", model_id=MODEL, dimension=DIM)
    idx.ensure_collection()
    extra = [mem(f"deploy freeze number {i} on friday", namespace=f"t/n{i % 3}", vector=unit(100 + i)) for i in range(60)]
    idx.upsert([*CORPUS, *extra])
    yield idx
    idx.close()


def both(index: MilvusIndex, data: list[Any], field: str, flt: IndexFilter, limit: int, output: list[str]) -> tuple:
    expr = build_filter(flt, tags_as_array=index.backend.tags_as_array, namespace_keys=index.backend.namespace_keys)
    client = index._client  # noqa: SLF001 - the same connection the hub searches on
    name = index._collection  # noqa: SLF001
    theirs = client.search(
        name, data=data, anns_field=field, filter=expr, limit=limit, output_fields=output, consistency_level="Strong"
    )
    ours = raw_search.search(
        client,
        name,
        data=data,
        anns_field=field,
        expr=expr,
        limit=limit,
        output_fields=output,
        search_params=None,
        consistency_level="Strong",
        timeout=10,
    )
    return theirs, ours


def assert_same(theirs: Any, ours: list[raw_search.Found], output: list[str]) -> None:
    assert len(ours) == len(theirs)
    for hits, found in zip(theirs, ours, strict=True):
        assert found.ids == [str(h["id"]) for h in hits]
        assert found.scores == pytest.approx([float(h["distance"]) for h in hits], abs=0)
        for name in output:
            assert found.fields[name] == [h["entity"][name] for h in hits]


def test_coded_dense_search_reads_the_same_hits_and_float16_copies(index: MilvusIndex) -> None:
    flt = IndexFilter(namespaces=("t/a", "t/b", "t/n0", "t/n1", "t/n2"), now_ms=0)
    queries = [unit(1), unit(2), unit(3)]
    codes = [row.tobytes() for row in dense_codes.thermometer(np.vstack(queries))]
    theirs, ours = both(index, codes, schema.DENSE_CODES, flt, 20, [schema.DENSE_F16])
    assert sum(len(f) for f in ours) > 30  # the test compares something
    assert_same(theirs, ours, [schema.DENSE_F16])


def test_keyword_search_reads_the_same_ids_and_scores(index: MilvusIndex) -> None:
    flt = IndexFilter(namespaces=("t/n0", "t/n1", "t/n2", "t/a"), now_ms=0)
    theirs, ours = both(index, ["deploy friday"], schema.SPARSE, flt, 15, [])
    assert len(ours[0]) == 15
    assert_same(theirs, ours, [])


def test_a_filter_matching_nothing_gives_an_empty_list_per_query(index: MilvusIndex) -> None:
    flt = IndexFilter(namespaces=("t/nowhere",), now_ms=0)
    codes = [row.tobytes() for row in dense_codes.thermometer(np.vstack([unit(1), unit(2)]))]
    theirs, ours = both(index, codes, schema.DENSE_CODES, flt, 10, [schema.DENSE_F16])
    assert [len(f) for f in ours] == [0, 0]
    assert [f.fields[schema.DENSE_F16] for f in ours] == [[], []]
    assert len(theirs) in (0, 2)


def test_the_index_searches_through_the_reader(index: MilvusIndex) -> None:
    """search_dense's exact similarities come from the float16 copies the reader returned."""
    flt = IndexFilter(namespaces=("t/n0", "t/n1", "t/n2"), now_ms=0)
    hits = index.search_dense(unit(105), flt, 5)
    assert hits[0][1] == pytest.approx(1.0, abs=2e-3)  # the row stored with that very vector, scored exactly
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def test_keyword_hits_bring_their_vectors_for_relevance(index: MilvusIndex) -> None:
    """A BM25 search keeps its hits' float16 copies, so relevance's similarities need no second query; the values
    are the ones read back by id."""
    flt = IndexFilter(namespaces=("t/n0", "t/n1", "t/n2"), now_ms=0)
    everything = [m.id for m in CORPUS] + [i for i, _ in index.search_keyword("deploy", flt, 100)]
    index._copies.forget(everything)  # noqa: SLF001 - earlier searches and writes kept vectors; start from none
    assert not index._copies.similarities(np.asarray(unit(7), dtype=np.float32), everything)  # noqa: SLF001
    ids = [i for i, _ in index.search_keyword("deploy freeze friday", flt, 8)]
    assert len(ids) == 8
    kept = index._copies.similarities(np.asarray(unit(7), dtype=np.float32), ids)  # noqa: SLF001
    assert set(kept) == set(ids)
    stored = index.vectors(ids)
    for mid in ids:
        assert kept[mid] == pytest.approx(float(np.dot(stored[mid], unit(7))), abs=1e-6)
