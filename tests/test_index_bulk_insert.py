"""``MilvusIndex.insert_new`` (the columnar insert `memhub reindex`'s fill uses) against ``upsert``, on real Milvus Lite.

The fill writes its new collection with columns instead of row dicts and without asking which ids the collection
holds; the rows must be exactly the ones the hub's upserts write (every field, the codes and float16 copies), and
searches over them must answer the same. A pymilvus upgrade that moves the internals the columnar insert uses
fails here.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from test_milvus_index import CORPUS, DIM, MODEL, mem, unit

from memhub.index import IndexFilter, MilvusIndex, dense_codes, schema
from memhub.index.backend import Backend
from memhub.index.rows import to_columns, to_row

# Awkward rows beside the corpus: Chinese text, a quote in a tag, no tags, an expiry, a long text.
EXTRA = [
    mem("小雨对花生过敏", namespace="t/zh", tags=("食物",), vector=unit(201)),
    mem('it\'s "quoted" text', namespace="t/a", tags=("it's",), expires=2_000_000_000_000, vector=unit(202)),
    mem("word " * 3000, namespace="t/b", kind="episodic", type="event", vector=unit(203)),
    *[mem(f"deploy freeze number {i} on friday", namespace=f"t/n{i % 3}", vector=unit(300 + i)) for i in range(40)],
]
ROWS = [*CORPUS, *EXTRA]
NAMESPACES = ("t/a", "t/b", "t/zh", "t/n0", "t/n1", "t/n2", "t/q'uote\\d")


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MilvusIndex, MilvusIndex]]:
    """Two collections of one Lite: the same rows upserted into the first, inserted into the second."""
    folder: Path = tmp_path_factory.mktemp("bulk-insert")
    upserted = MilvusIndex(str(folder / "index.db"), collection=f"u_{uuid.uuid4().hex[:12]}", model_id=MODEL, dimension=DIM)
    inserted = MilvusIndex(str(folder / "index.db"), collection=f"i_{uuid.uuid4().hex[:12]}", model_id=MODEL, dimension=DIM)
    try:
        for idx in (upserted, inserted):
            idx.ensure_collection()
        assert upserted.upsert(ROWS) == len(ROWS)
        assert inserted.insert_new(ROWS) == len(ROWS)
        yield upserted, inserted
    finally:
        inserted.close()
        upserted.close()


def stored(index: MilvusIndex) -> dict[str, dict]:
    client = index._client  # noqa: SLF001 - every stored field, read back as pymilvus returns it
    rows = client.query(index.collection, filter="", output_fields=["*"], limit=1000, consistency_level="Strong")
    return {str(r[schema.ID]): r for r in rows}


def test_inserted_rows_are_the_upserted_rows_field_for_field(pair: tuple[MilvusIndex, MilvusIndex]) -> None:
    upserted, inserted = pair
    theirs, ours = stored(upserted), stored(inserted)
    assert len(ours) == len(ROWS) and set(ours) == set(theirs)
    fields = {schema.NAMESPACE_KEY, schema.DENSE_CODES, schema.DENSE_F16, schema.CONTENT, schema.TAG_KEYS}
    assert fields <= set(ours[ROWS[0].id])  # the comparison covers the coded dense fields and the key
    for mid, row in theirs.items():
        assert ours[mid] == row


def test_searches_answer_the_same_over_inserted_rows(pair: tuple[MilvusIndex, MilvusIndex]) -> None:
    upserted, inserted = pair
    flt = IndexFilter(namespaces=NAMESPACES, now_ms=0)
    for query in (unit(1), unit(301), unit(9)):
        dense = inserted.search_dense(query, flt, 10)
        assert len(dense) == 10
        assert dense == upserted.search_dense(query, flt, 10)
    for text in ("deploy friday", "花生", "quoted"):
        keyword = inserted.search_keyword(text, flt, 10)
        assert keyword
        assert keyword == upserted.search_keyword(text, flt, 10)


def test_a_bad_row_or_a_repeated_id_writes_nothing(tmp_path: Path) -> None:
    index = MilvusIndex(str(tmp_path / "index.db"), collection="c_bad", model_id=MODEL, dimension=DIM)
    try:
        index.ensure_collection()
        good = [mem(f"good {i}", vector=unit(i)) for i in range(5)]
        with pytest.raises(ValueError, match="dimensions"):
            index.insert_new([*good, mem("short vector", vector=[1.0, 0.0])])
        with pytest.raises(ValueError, match="same memory id twice"):
            index.insert_new([*good, good[0]])
        with pytest.raises(ValueError, match="all zeros"):
            index.insert_new([mem("zero", vector=[0.0] * DIM), *good])
        assert index.count() == 0
        assert index.insert_new(good) == 5
        assert index.count() == 5
    finally:
        index.close()


BACKENDS = [Backend(lite=True), Backend(lite=False, version=(2, 5)), Backend(lite=False, version=(2, 3))]


@pytest.mark.parametrize("backend", BACKENDS)
def test_columns_are_the_rows_of_to_row(backend: Backend) -> None:
    columns = to_columns(ROWS, DIM, backend)
    rows = [to_row(m, DIM, backend) for m in ROWS]
    assert set(columns) == set(rows[0])
    for i, row in enumerate(rows):
        for field, value in row.items():
            got = columns[field][i]
            assert np.array_equal(got, value) if isinstance(value, np.ndarray) else got == value, (field, i)


@pytest.mark.parametrize("dimension", [8, 384, 385])
def test_pack_many_is_pack_row_by_row(dimension: int) -> None:
    rng = np.random.default_rng(dimension)
    vectors = rng.normal(size=(7, dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    assert dense_codes.pack_many(vectors) == [dense_codes.pack(v) for v in vectors]


def test_inserts_are_cut_by_rows_and_by_bytes() -> None:
    from memhub.index.milvus_index import _INSERT_BATCH, _INSERT_BYTES, _chunks  # noqa: PLC0415 - the private cut

    assert list(_chunks([])) == []
    for contents in (["short memory"] * 5000, ["汉" * 16384] * 700, ["a", "汉" * 16384, "b"] * 300, ["one"]):
        chunks = list(_chunks(contents))
        assert [s for s, _ in chunks] == [0, *[e for _, e in chunks[:-1]]]  # consecutive
        assert chunks[-1][1] == len(contents)  # complete
        for start, end in chunks:
            assert 0 < end - start <= _INSERT_BATCH
            assert end - start == 1 or sum(len(t.encode()) for t in contents[start:end]) <= _INSERT_BYTES
    assert len(list(_chunks(["汉" * 16384] * 700))) > 2  # the byte bound cuts, not only the row bound
