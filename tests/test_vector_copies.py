"""The hub's copy of Lite's float16 vectors (memhub/index/vector_copies.py): exact rows back, bounded, oldest out."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from memhub.index.vector_copies import VectorCopies

DIM = 8


def unit_rows(n: int, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_rows_come_back_as_the_float16_given_in_the_order_asked() -> None:
    copies = VectorCopies(DIM)
    vectors = unit_rows(3000)  # past the first allocation: the matrix grows, rows kept before it must survive
    ids = [f"m{i}" for i in range(3000)]
    copies.put(ids, vectors)
    asked = ["m2999", "nope", "m0", "m1500", "m0"]
    matrix, missing = copies.rows(asked)
    assert missing == [1]
    assert matrix.dtype == np.float16 and matrix.shape == (5, DIM)
    for row, mid in zip(matrix, asked, strict=True):
        if mid != "nope":
            assert np.array_equal(row, vectors[int(mid[1:])].astype(np.float16))
    assert not matrix[1].any()
    assert len(copies) == 3000


def test_a_put_again_replaces_and_the_last_of_a_repeated_id_wins() -> None:
    copies = VectorCopies(DIM)
    a, b, c = unit_rows(3)
    copies.put(["x", "y"], np.vstack([a, b]))
    copies.put(["x", "x"], np.vstack([b, c]))
    matrix, missing = copies.rows(["x", "y"])
    assert missing == [] and np.array_equal(matrix[0], c.astype(np.float16)) and np.array_equal(matrix[1], b.astype(np.float16))
    assert len(copies) == 2


def test_the_budget_bounds_the_copies_and_the_oldest_leave_first() -> None:
    copies = VectorCopies(DIM, budget_bytes=100 * 2 * DIM)
    assert copies.capacity == 100
    vectors = unit_rows(250)
    copies.put([f"m{i}" for i in range(100)], vectors[:100])
    assert copies.pushed_out == 0
    for start in range(0, 250, 50):
        copies.put([f"m{i}" for i in range(start, start + 50)], vectors[start : start + 50])
    assert len(copies) == 100
    _, missing = copies.rows([f"m{i}" for i in range(250)])
    assert missing == list(range(150))  # the first 150 written left, the last 100 stayed
    assert copies.pushed_out == 150
    matrix, _ = copies.rows([f"m{i}" for i in range(150, 250)])
    assert np.array_equal(matrix, vectors[150:].astype(np.float16))
    # One put of more than the budget keeps its last rows.
    copies.put([f"n{i}" for i in range(300)], unit_rows(300, seed=1))
    _, missing = copies.rows([f"n{i}" for i in range(300)])
    assert missing == list(range(200)) and len(copies) == 100


def test_forgotten_rows_are_gone_and_their_room_is_reused() -> None:
    copies = VectorCopies(DIM, budget_bytes=10 * 2 * DIM)
    vectors = unit_rows(20)
    copies.put([f"m{i}" for i in range(10)], vectors[:10])
    copies.forget(["m3", "m4", "unknown"])
    assert len(copies) == 8 and copies.rows(["m3", "m4"])[1] == [0, 1]
    copies.put(["a", "b"], vectors[10:12])  # into the freed rows: nothing else leaves
    assert copies.rows([f"m{i}" for i in range(10) if i not in (3, 4)] + ["a", "b"])[1] == []
    copies.put(["c"], vectors[12:13])  # full now: the oldest leaves
    assert copies.pushed_out == 1 and copies.rows(["m0"])[1] == [0]
    copies.clear()
    assert len(copies) == 0 and copies.rows(["a"])[1] == [0] and copies.pushed_out == 0


def test_similarities_are_the_inner_products_of_the_kept_rows() -> None:
    copies = VectorCopies(DIM)
    vectors = unit_rows(5)
    copies.put(["a", "b", "c"], vectors[:3])
    query = vectors[4]
    got = copies.similarities(query, ["c", "zzz", "a", "a"])
    assert set(got) == {"a", "c"}
    for mid, i in (("a", 0), ("c", 2)):
        assert got[mid] == pytest.approx(float(vectors[i].astype(np.float16).astype(np.float32) @ query), abs=1e-6)
    assert copies.similarities(query, ["zzz"]) == {}


def test_a_zero_budget_keeps_nothing_and_bad_arguments_are_refused() -> None:
    copies = VectorCopies(DIM, budget_bytes=0)
    copies.put(["a"], unit_rows(1))
    assert len(copies) == 0 and copies.rows(["a"])[1] == [0]
    with pytest.raises(ValueError, match="2 ids for 1 vectors"):
        VectorCopies(DIM).put(["a", "b"], unit_rows(1))
    with pytest.raises(ValueError, match="budget_bytes"):
        VectorCopies(DIM, budget_bytes=-1)
    with pytest.raises(ValueError, match="dimension"):
        VectorCopies(0)


def test_concurrent_puts_forgets_and_reads_keep_every_row_its_own() -> None:
    copies = VectorCopies(DIM, budget_bytes=500 * 2 * DIM)
    vectors = unit_rows(2000)
    halves = vectors.astype(np.float16)
    errors: list[str] = []

    def writer(offset: int) -> None:
        for start in range(offset, 2000, 400):
            ids = [f"m{i}" for i in range(start, start + 200)]
            copies.put(ids, vectors[start : start + 200])
            copies.forget(ids[::7])

    def reader() -> None:
        for _ in range(200):
            ids = [f"m{i}" for i in range(0, 2000, 13)]
            matrix, missing = copies.rows(ids)
            absent = set(missing)
            for j, mid in enumerate(ids):
                if j not in absent and not np.array_equal(matrix[j], halves[int(mid[1:])]):
                    errors.append(mid)

    threads = [threading.Thread(target=writer, args=(o,)) for o in (0, 200)] + [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(copies) <= 500
