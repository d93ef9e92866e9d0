"""The embedded index's dense search by codes and exact scoring (memhub/index/dense_codes.py), against real Milvus Lite.

The codes only propose candidates; every similarity a search returns is the exact inner product of the query with
the stored float16 vector. These tests check the codes' arithmetic, that scoring is exact, that a search finds what
exact search finds on clustered 384-d vectors, and that vectors stored under the previous (float) layout are read
back for `memhub reindex` to reuse.
"""

from __future__ import annotations

import base64
import gc
import uuid
import weakref
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memhub.index import IndexedMemory, IndexFilter, MilvusIndex, dense_codes, schema
from memhub.index.backend import Backend, DenseIndex
from memhub.index.rows import to_row
from memhub.index.vector_copies import VectorCopies

DIM = 384
MODEL = "codes-test-model"


def clustered(n: int, seed: int) -> np.ndarray:
    """Unit vectors shaped like sentence embeddings: a shared direction, most variance in a few latent directions
    (32 here), noise in all 384; nearest neighbours at a similarity of about 0.6, pairs at 0.2 on average (as
    MiniLM's on LoCoMo). ``seed`` draws the points; the space is the same for every seed."""
    space = np.random.default_rng(0)
    latent, common = space.standard_normal((32, DIM)), space.standard_normal(DIM)
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((n, 32)) @ latent + 3 * common + 3 * rng.standard_normal((n, DIM))
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def row(i: int, vector: np.ndarray, namespace: str = "t/a") -> IndexedMemory:
    return IndexedMemory(
        id=f"00000000-0000-4000-8000-{i:012d}",
        namespace=namespace,
        kind="semantic",
        type="fact",
        content=f"memory {i}",
        tags=(),
        occurred_at_ms=0,
        created_at_ms=0,
        expires_at_ms=0,
        vector=vector,
    )


def test_hamming_distance_of_codes_is_the_l1_distance_of_four_levels() -> None:
    a, b = clustered(2, 3)
    t = dense_codes.THRESHOLD_SD / np.sqrt(DIM)

    def levels(v: np.ndarray) -> np.ndarray:
        return (v > -t).astype(int) + (v > 0) + (v > t)

    codes = dense_codes.thermometer(np.vstack([a, b]))
    assert codes.shape == (2, dense_codes.code_bits(DIM) // 8) and dense_codes.code_bits(DIM) == 3 * DIM
    hamming = int(np.unpackbits(codes[0] ^ codes[1]).sum())
    assert hamming == int(np.abs(levels(a) - levels(b)).sum())
    assert dense_codes.code_bits(7) == 24  # padded to whole bytes


def test_packed_vectors_round_trip_at_float16_precision_and_corruption_is_refused() -> None:
    vectors = clustered(5, 4)
    packed = [dense_codes.pack(v) for v in vectors]
    assert all(len(p) == dense_codes.packed_chars(DIM) for p in packed)
    back = dense_codes.unpack(packed, DIM)
    assert back.dtype == np.float32 and np.abs(back - vectors).max() < 1e-3
    with pytest.raises(ValueError, match="do not have 383 dimensions"):
        dense_codes.unpack(packed[:1], 383)
    with pytest.raises(ValueError, match="not base64"):
        dense_codes.unpack(["@@@" + packed[0][3:]], DIM)
    with pytest.raises(ValueError, match="not base64"):  # a stray character inside is refused, not skipped
        dense_codes.unpack([packed[0][:500] + "\n" + packed[0][501:]], DIM)
    # The stored text is standard base64 (indexes written before pybase64 read the same), and the float16 rows
    # are what float32 ones are made from.
    assert packed == [base64.b64encode(v.astype(np.float16).tobytes()).decode("ascii") for v in vectors]
    assert dense_codes.pack_many(vectors) == packed
    halves = dense_codes.unpack_halves(packed, DIM)
    assert halves.dtype == np.float16 and np.array_equal(halves.astype(np.float32), back)


def test_best_keeps_the_highest_inner_products_in_order() -> None:
    vectors = np.eye(4, dtype=np.float32)
    query = np.array([0.1, 0.9, 0.3, 0.5], dtype=np.float32)
    assert [i for i, _ in dense_codes.best(["a", "b", "c", "d"], vectors, query, 3)] == ["b", "d", "c"]
    assert dense_codes.best([], np.zeros((0, 4), np.float32), query, 3) == []


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MilvusIndex, np.ndarray]]:
    """3,000 clustered vectors over 3 namespaces in an embedded index."""
    index = MilvusIndex(str(tmp_path_factory.mktemp("codes") / "codes.db"), model_id=MODEL, dimension=DIM, lite_candidates=200)
    index.ensure_collection()
    vectors = clustered(3000, 7)
    index.upsert([row(i, v, f"t/{i % 3}") for i, v in enumerate(vectors)])
    yield index, vectors
    index.close()


def exact(vectors: np.ndarray, query: np.ndarray, allowed: np.ndarray, k: int) -> list[float]:
    stored = vectors.astype(np.float16).astype(np.float32)  # what the index scores: the float16 copies
    scores = np.where(allowed, stored @ query, -np.inf)
    return sorted(scores[np.isfinite(scores)].tolist(), reverse=True)[:k]


def test_dense_search_finds_what_exact_search_finds(filled: tuple[MilvusIndex, np.ndarray]) -> None:
    index, vectors = filled
    queries = clustered(60, 11)
    namespaces = np.array([f"t/{i % 3}" for i in range(len(vectors))])
    found_share = []
    for q in queries:
        for flt, allowed in (
            (IndexFilter(namespaces=("t/0", "t/1", "t/2")), np.ones(len(vectors), bool)),
            (IndexFilter(namespaces=("t/1",)), namespaces == "t/1"),
        ):
            hits = index.search_dense(q, flt, 10)
            truth = exact(vectors, q, allowed, 10)
            # Similarities are exact, not estimated from codes: each equals the stored vector's inner product.
            for mid, score in hits:
                i = int(mid.rsplit("-", 1)[1])
                assert allowed[i]
                assert abs(score - float(vectors[i].astype(np.float16).astype(np.float32) @ q)) < 1e-5
            found_share.append(sum(1 for _, s in hits if s >= truth[-1] - 1e-6) / 10)
    assert np.mean(found_share) >= 0.98, f"recall@10 {np.mean(found_share):.3f} with 200 candidates of 1,000-3,000 rows"


def test_a_filter_narrower_than_the_candidates_is_searched_exactly(filled: tuple[MilvusIndex, np.ndarray]) -> None:
    """Fewer rows pass the filter than the codes propose: every one is scored, so the answer is exact."""
    index, vectors = filled
    tagged = np.zeros(len(vectors), bool)
    tagged[::25] = True  # 120 rows
    extra = MilvusIndex(index._uri, collection=f"few_{uuid.uuid4().hex[:8]}", model_id=MODEL, dimension=DIM)  # noqa: SLF001
    extra.ensure_collection()
    extra.upsert([row(i, vectors[i], "t/few" if tagged[i] else "t/rest") for i in range(0, 1500)])
    few = tagged[:1500]
    for q in clustered(20, 13):
        hits = extra.search_dense(q, IndexFilter(namespaces=("t/few",)), 10)
        assert [round(s, 5) for _, s in hits] == [round(s, 5) for s in exact(vectors[:1500], q, few, 10)]
    extra.close()


def test_stored_vectors_come_back_as_float32(filled: tuple[MilvusIndex, np.ndarray]) -> None:
    index, vectors = filled
    held = index.vectors([row(5, vectors[5]).id, row(6, vectors[6]).id, "00000000-0000-4000-8000-999999999999"])
    assert set(held) == {row(5, vectors[5]).id, row(6, vectors[6]).id}
    assert held[row(5, vectors[5]).id].dtype == np.float32
    assert np.abs(held[row(5, vectors[5]).id] - vectors[5]).max() < 1e-3


def test_vectors_of_a_float_layout_collection_are_reused(tmp_path: Path) -> None:
    """`memhub reindex` after the layout change reads the old collection's vectors instead of embedding again."""
    index = MilvusIndex(str(tmp_path / "old.db"), collection="new_layout", model_id=MODEL, dimension=DIM)
    index.ensure_collection()
    server_like = Backend(lite=False, version=(2, 5))
    rec = schema.record(MODEL, DIM, schema.DEFAULT_ANALYZER, server_like)  # layout 2: FLOAT_VECTOR rows
    client = index._client  # noqa: SLF001 - an old-layout collection beside the new one, as an upgrade finds it
    client.create_collection(
        "old_layout",
        schema=schema.build_schema(DIM, schema.DEFAULT_ANALYZER, rec, Backend(lite=False, version=(2, 4))),
        index_params=schema.build_index_params(Backend(lite=False, version=(2, 4)), DenseIndex("FLAT")),
    )
    vectors = clustered(3, 17)
    client.insert("old_layout", [to_row(row(i, v), DIM, Backend(lite=False, version=(2, 4))) for i, v in enumerate(vectors)])
    client.load_collection("old_layout")
    reused = index.vectors_in("old_layout", [row(0, vectors[0]).id, row(2, vectors[2]).id])
    assert set(reused) == {row(0, vectors[0]).id, row(2, vectors[2]).id}
    assert np.abs(reused[row(2, vectors[2]).id] - vectors[2]).max() < 1e-6  # float32 kept as it was
    # Another model's vectors are never reused.
    other = MilvusIndex(str(tmp_path / "old.db"), collection="new_layout", model_id="other-model", dimension=DIM)
    assert other.vectors_in("old_layout", [row(0, vectors[0]).id]) == {}
    assert index.vectors_in("no_such_collection", [row(0, vectors[0]).id]) == {}
    other.close()
    index.close()


def test_similarities_come_from_the_last_candidates_or_the_index_and_leave_with_a_delete(
    filled: tuple[MilvusIndex, np.ndarray],
) -> None:
    """Judging relevance asks the similarity of hits the dense channel did not return: a recent search's candidates
    answer without Milvus, the rest are read from it; either way the value is the stored vector's inner product."""
    shared, vectors = filled
    # Another client of the same collection, so only this test's search has filled its memory of candidates.
    index = MilvusIndex(shared._uri, collection=shared.collection, model_id=MODEL, dimension=DIM, lite_candidates=200)  # noqa: SLF001
    query = clustered(1, 23)[0]
    index.search_dense(query, IndexFilter(namespaces=("t/0", "t/1", "t/2")), 10)
    ids = [row(i, vectors[i]).id for i in range(0, 3000, 150)]
    proposed = set(index._copies.similarities(query, ids))  # noqa: SLF001 - which came from the last candidates
    got = index.similarities(query, ids)
    assert set(got) == set(ids) and proposed and proposed != set(ids)  # some from the candidates, some from Milvus
    for i in range(0, 3000, 150):
        assert abs(got[row(i, vectors[i]).id] - float(vectors[i].astype(np.float16).astype(np.float32) @ query)) < 1e-5
    gone = next(iter(proposed))
    index.delete([gone])
    assert gone not in index.similarities(query, [gone])
    index.close()
    copies = VectorCopies(DIM, budget_bytes=3 * 2 * DIM)
    copies.put(["a", "b", "c", "d"], clustered(4, 29))
    assert set(copies.similarities(query, ["a", "b", "c", "d"])) == {"b", "c", "d"}  # bounded: the oldest left


def test_a_search_for_close_rows_proposes_few_candidates_at_any_size() -> None:
    """Only hits at a cosine of 0.8 or more wanted (the near-duplicate check): a few dozen candidates, not the
    hundreds a top 10 needs at 100k rows; a lower threshold is an ordinary search."""
    from memhub.index import dense_search

    lite = Backend(lite=True, lite_candidates=400)
    assert dense_search.candidates_for(lite, 5, 100_000, 16_384) == 400
    assert dense_search.candidates_for(lite, 5, 100_000, 16_384, at_least=0.85) == dense_search.CLOSE_CANDIDATES
    assert dense_search.candidates_for(lite, 5, 100_000, 16_384, at_least=0.5) == 400
    assert dense_search.candidates_for(lite, 30, 100_000, 16_384, at_least=0.9) == 120  # still 4 per hit asked for
    assert dense_search.candidates_for(lite, 5, 2_000, 16_384, at_least=0.9) == 20  # never more than a search asks
    query = clustered(1, 3)
    close = dense_search.request(lite, DenseIndex("FLAT"), [query[0]], 5, 16_384, 100_000, at_least=0.85)
    assert close.limit == dense_search.CLOSE_CANDIDATES


def test_a_search_for_close_rows_returns_exactly_the_close_rows(filled: tuple[MilvusIndex, np.ndarray]) -> None:
    """Queries a little off stored vectors: what comes back is the exact top 5 among rows at 0.85 or more, and
    nothing below it."""
    index, vectors = filled
    rng = np.random.default_rng(17)
    picks = rng.choice(len(vectors), 40, replace=False)
    queries = vectors[picks] + 0.02 * rng.standard_normal((40, DIM)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    flt = IndexFilter(namespaces=("t/0", "t/1", "t/2"))
    answers = index.search_dense_many(list(queries), flt, 5, at_least=0.85)
    some_below = 0
    for q, hits in zip(queries, answers, strict=True):
        truth = [s for s in exact(vectors, q, np.ones(len(vectors), bool), 5) if s >= 0.85]
        some_below += len(exact(vectors, q, np.ones(len(vectors), bool), 5)) > len(truth)
        assert hits, "the stored vector the query was drawn from is at 0.85 or more"
        assert [round(s, 5) for _, s in hits] == [round(s, 5) for s in truth]
    assert some_below, "some queries have rows below the threshold in their top 5, which must be left out"
    for bad in (1.5, float("nan"), True, "0.9"):
        with pytest.raises(ValueError, match="at_least"):
            index.search_dense_many(list(queries[:1]), flt, 5, at_least=bad)  # type: ignore[arg-type]
    assert index.search_dense_many(list(queries[:1]), flt, 5, at_least=np.float32(0.85))[0] == answers[0]


def test_kept_candidates_do_not_hold_their_search_s_matrix() -> None:
    # The copy's bound counts rows: a kept row that were a view of its search's matrix would keep every candidate
    # of that search alive (400 rows) for as long as it stays.
    copies = VectorCopies(DIM, budget_bytes=8 * 2 * DIM)
    halves = clustered(400, 31).astype(np.float16)
    batch = weakref.ref(halves)
    copies.put([f"m{i}" for i in range(400)], halves)
    del halves
    gc.collect()
    assert batch() is None
    copies.put(["f32"], clustered(1, 37))  # float32 rows are converted, and kept on their own too
    assert set(copies.similarities(clustered(1, 37)[0], ["m399", "f32", "m0"])) == {"m399", "f32"}
