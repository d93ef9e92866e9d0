"""Dense searches scored from the hub's copy of Lite's vectors (memhub/index/vector_copies.py, milvus_index.py),
against real Milvus Lite: the same exact answers as when Lite sends the vectors, rows another writer added found,
deleted rows gone, and the copy given up (searches asking Lite again) when it cannot hold every row."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import Stack
from test_dense_codes import DIM, MODEL, clustered, row

from memhub.client import memory_input
from memhub.index import IndexFilter, MilvusIndex

Writers = tuple[MilvusIndex, MilvusIndex, np.ndarray]
ALL = IndexFilter(namespaces=("t/0", "t/1", "t/2"))


@pytest.fixture
def two_writers(tmp_path: Path) -> Iterator[Writers]:
    """Two clients of one collection of 2,000 rows (as two hub processes): the first copies the vectors."""
    uri = str(tmp_path / "copies.db")
    first = MilvusIndex(uri, collection=f"c_{uuid.uuid4().hex[:8]}", model_id=MODEL, dimension=DIM, lite_candidates=200)
    first.ensure_collection()
    vectors = clustered(2400, 41)
    first.upsert([row(i, v, f"t/{i % 3}") for i, v in enumerate(vectors[:2000])])
    other = MilvusIndex(uri, collection=first.collection, model_id=MODEL, dimension=DIM, lite_candidates=200)
    other.ensure_collection()  # counts the rows, as the first did: both propose as many candidates
    yield first, other, vectors
    other.close()
    first.close()


def rounded(hits: list[tuple[str, float]]) -> list[tuple[str, float]]:
    return [(mid, round(score, 5)) for mid, score in hits]


def test_searches_from_the_copy_answer_as_searches_given_the_vectors(
    two_writers: Writers,
) -> None:
    first, other, vectors = two_writers
    assert not first.vectors_copied  # written here, but not read back whole yet
    assert first.copy_vectors() == 2000
    assert first.vectors_copied and not other.vectors_copied
    for q in clustered(30, 43):
        for flt in (ALL, IndexFilter(namespaces=("t/2",))):
            copied, sent = first.search_dense(q, flt, 10), other.search_dense(q, flt, 10)
            assert len(copied) == 10 and rounded(copied) == rounded(sent)
            for mid, score in copied:  # exact: the stored float16 vector's inner product
                i = int(mid.rsplit("-", 1)[1])
                assert f"t/{i % 3}" in flt.namespaces
                assert score == pytest.approx(float(vectors[i].astype(np.float16).astype(np.float32) @ q), abs=1e-5)
    # Keyword hits come without vectors now; relevance's similarities still come from the copy, exactly.
    ids = [mid for mid, _ in first.search_keyword("memory", ALL, 20)]
    assert len(ids) == 20
    got = first.similarities(vectors[7], ids)
    for mid in ids:
        i = int(mid.rsplit("-", 1)[1])
        assert got[mid] == pytest.approx(float(vectors[i].astype(np.float16).astype(np.float32) @ vectors[7]), abs=1e-5)


def test_rows_another_writer_adds_are_found_and_its_deletes_are_gone(
    two_writers: Writers,
) -> None:
    first, other, vectors = two_writers
    first.copy_vectors()
    # The other writer adds 400 rows this copy never saw, some of them the queries' nearest, and deletes some.
    other.upsert([row(i, vectors[i], f"t/{i % 3}") for i in range(2000, 2400)])
    deleted = [row(i, vectors[i]).id for i in range(0, 2400, 5)]
    other.delete(deleted)
    alive = np.ones(2400, bool)
    alive[::5] = False
    first.after_catch_up()  # recounts the rows, as the hub's indexer has it do: both propose as many candidates again
    other.after_catch_up()
    assert first.vectors_copied  # it cannot know: the rows it lacks are read from Lite when proposed
    for k, q in enumerate(vectors[2001:2400:40]):  # each query is one of the new rows
        hits = first.search_dense(q, ALL, 10)
        assert rounded(hits) == rounded(other.search_dense(q, ALL, 10))
        assert not {mid for mid, _ in hits} & set(deleted)
        assert hits[0][0] == row(2001 + 40 * k, q).id and hits[0][1] == pytest.approx(1.0, abs=2e-3)
        assert all(alive[int(mid.rsplit("-", 1)[1])] for mid, _ in hits)
    # Those read from Lite were kept: the copy now answers for them.
    assert set(first._copies.similarities(vectors[2001], [row(2001, vectors[2001]).id]))  # noqa: SLF001


def test_a_copy_past_its_budget_is_given_up_and_searches_ask_lite_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    index = MilvusIndex(
        str(tmp_path / "small.db"), model_id=MODEL, dimension=DIM, lite_candidates=200, vector_copies_bytes=500 * 2 * DIM
    )
    try:
        index.ensure_collection()
        vectors = clustered(800, 47)
        index.upsert([row(i, v, f"t/{i % 3}") for i, v in enumerate(vectors[:400])])
        assert index.copy_vectors() == 400 and index.vectors_copied
        with caplog.at_level(logging.WARNING, logger="memhub.index.milvus_index"):
            index.upsert([row(i, v, f"t/{i % 3}") for i, v in enumerate(vectors[400:], start=400)])  # 800 rows > 500
        assert not index.vectors_copied
        assert [r.message for r in caplog.records if "copy of the index's vectors is full" in r.message]
        asking = MilvusIndex(index._uri, collection=index.collection, model_id=MODEL, dimension=DIM, lite_candidates=200)  # noqa: SLF001
        asking.ensure_collection()
        index.after_catch_up()
        for q in clustered(10, 53):
            assert rounded(index.search_dense(q, ALL, 10)) == rounded(asking.search_dense(q, ALL, 10))
        asking.close()
        # Opened again on those 800 rows: the copy is not even begun.
        again = MilvusIndex(
            index._uri, collection=index.collection, model_id=MODEL, dimension=DIM, vector_copies_bytes=500 * 2 * DIM
        )  # noqa: SLF001
        again.ensure_collection()
        assert again.copy_vectors() == 0 and not again.vectors_copied and len(again._copies) == 0  # noqa: SLF001
        again.close()
    finally:
        index.close()


def test_a_switched_or_recreated_collection_is_copied_again(two_writers: Writers) -> None:
    first, _, vectors = two_writers
    first.copy_vectors()
    served = first.collection
    # A reindex's new collection, filled by another client, then switched to: the copy starts again in the background.
    fresh = MilvusIndex(first._uri, collection=f"{served}_v2", model_id=MODEL, dimension=DIM)  # noqa: SLF001
    fresh.ensure_collection()
    fresh.insert_new([row(i, vectors[i], f"t/{i % 3}") for i in range(100, 600)])
    fresh.close()
    first.use_collection(f"{served}_v2")
    deadline = time.monotonic() + 30
    while not first.vectors_copied and time.monotonic() < deadline:
        time.sleep(0.05)
    assert first.vectors_copied and len(first._copies) == 500  # noqa: SLF001 - only the new collection's rows
    hits = first.search_dense(vectors[50], ALL, 10)  # row 50 is not in the new collection
    assert len(hits) == 10 and all(100 <= int(mid.rsplit("-", 1)[1]) < 600 for mid, _ in hits)
    first.recreate()
    assert first.vectors_copied and len(first._copies) == 0  # noqa: SLF001 - empty, and kept by every write from now
    first.upsert([row(i, vectors[i], f"t/{i % 3}") for i in range(10)])
    assert [mid for mid, _ in first.search_dense(vectors[3], ALL, 1)] == [row(3, vectors[3]).id]


def test_a_running_hub_copies_the_vectors_and_its_searches_find_new_writes(stack: Stack, ns: str) -> None:
    """The hub starts the copy when it opens the index; writes through the API are then kept by the indexer, so a
    memory written a moment ago is found by a dense search scored from the copy."""
    index = stack.hub.index
    deadline = time.monotonic() + 60
    while not index.vectors_copied and time.monotonic() < deadline:
        time.sleep(0.05)
    assert index.vectors_copied
    written = stack.client.write([memory_input(ns, "The lighthouse keeper collects sea glass on Sundays")], wait_indexed=True)
    mid = written.results[0].memory.id
    assert index.vectors_copied
    assert set(index._copies.similarities(np.ones(index._dimension, np.float32), [mid]))  # noqa: SLF001 - kept at write
    vector = stack.hub.embedder.embed(["The lighthouse keeper collects sea glass on Sundays"])[0]
    hits = index.search_dense(vector, IndexFilter(namespaces=(ns,)), 5)
    assert hits[0][0] == mid and hits[0][1] == pytest.approx(1.0, abs=2e-3)


def test_a_failed_copy_is_tried_again_at_a_catch_up_after_a_growing_wait(tmp_path: Path) -> None:
    uri = str(tmp_path / "retry.db")
    index = MilvusIndex(uri, model_id=MODEL, dimension=DIM, lite_candidates=200)
    other = MilvusIndex(uri, model_id=MODEL, dimension=DIM, lite_candidates=200)
    try:
        index.ensure_collection()
        vectors = clustered(300, 59)
        other._client.drop_collection(index.collection)  # noqa: SLF001 - a real failure: the collection is gone
        failed_at = time.monotonic()
        index.start_copying_vectors()
        first = index._copying  # noqa: SLF001
        first.join(30)
        assert not index.vectors_copied
        retry_at = index._copy_retry_at  # noqa: SLF001
        assert retry_at is not None and retry_at - failed_at >= 29.0  # not before the first wait
        # Failing again doubles the wait: a copy that keeps failing is not read again at every catch-up.
        index.start_copying_vectors()  # tried again (the collection still gone: a catch-up could not count it)
        second = index._copying  # noqa: SLF001
        assert second is not first
        second.join(30)
        assert index._copy_retry_at is not None and index._copy_retry_at - time.monotonic() >= 59.0  # noqa: SLF001
        other.ensure_collection()  # back (as a restarted index is), and written to
        other.upsert([row(i, v, f"t/{i % 3}") for i, v in enumerate(vectors)])
        index.after_catch_up()  # within the wait: no copy begun
        assert index._copying is second and not index.vectors_copied  # noqa: SLF001
        index._copy_retry_at = 0.0  # noqa: SLF001 - the wait over
        index.after_catch_up()
        index._copying.join(30)  # noqa: SLF001
        assert index.vectors_copied and len(index._copies) == 300  # noqa: SLF001
        assert index._copy_retry_at is None and index._copy_retry_wait == 30.0  # noqa: SLF001 - succeeded: reset
        assert [mid for mid, _ in index.search_dense(vectors[9], ALL, 1)] == [row(9, vectors[9]).id]
    finally:
        other.close()
        index.close()


def test_the_copy_keeps_a_written_vector_as_the_index_stores_it_unit_length(two_writers: Writers) -> None:
    # MilvusIndex makes every vector unit length before storing it; the copy must hold the same float16 rows, or a
    # search scored from it would differ from one given Lite's vectors.
    first, other, vectors = two_writers
    first.copy_vectors()
    first.upsert([row(i, 3.0 * vectors[i], f"t/{i % 3}") for i in range(2000, 2100)])  # kept by the write, scaled
    other.after_catch_up()
    first.after_catch_up()
    for q in vectors[2000:2100:10]:
        copied, sent = first.search_dense(q, ALL, 10), other.search_dense(q, ALL, 10)
        assert rounded(copied) == rounded(sent)
        assert copied[0][1] == pytest.approx(1.0, abs=2e-3)


def test_a_copy_that_may_hold_nothing_is_never_relied_on(tmp_path: Path) -> None:
    index = MilvusIndex(str(tmp_path / "none.db"), model_id=MODEL, dimension=DIM, lite_candidates=200, vector_copies_bytes=0)
    try:
        index.ensure_collection()
        index.start_copying_vectors()  # nothing to run: no thread
        assert index._copying is None  # noqa: SLF001
        assert index.copy_vectors() == 0 and not index.vectors_copied  # an empty index read whole is still not held
        index.recreate()
        assert not index.vectors_copied
        vectors = clustered(50, 61)
        index.upsert([row(i, v, f"t/{i % 3}") for i, v in enumerate(vectors)])
        assert not index.vectors_copied
        assert [mid for mid, _ in index.search_dense(vectors[4], ALL, 1)] == [row(4, vectors[4]).id]
    finally:
        index.close()
