"""Exclusive index writes (``MilvusIndex.upsert`` with ``exclusive=True``), on a real Milvus Lite.

The indexer holds its memories' rows locked while it writes them, so the index may insert the rows it does not
hold instead of upserting them: on Lite an upsert of a new id costs as much as deleting a held one, a scan of
the whole collection (bench/bench_lite_writes.py). The result must be the same rows as before.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import CountedCalls, lite_index

from memhub.index import IndexedMemory, IndexFilter, MilvusIndex

DIM = 16
NS = "t/exclusive"


def memory(content: str, mid: str | None = None, seed: int = 0) -> IndexedMemory:
    vector = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    now = int(time.time() * 1000)
    unit = vector / np.linalg.norm(vector)
    return IndexedMemory(mid or str(uuid.uuid4()), NS, "semantic", "fact", content, (), now, now, 0, unit)


@pytest.fixture
def index(tmp_path: Path) -> Iterator[MilvusIndex]:
    with lite_index(tmp_path / "index.db", "exclusive", DIM) as ix:
        yield ix


def keyword_ids(index: MilvusIndex, text: str) -> set[str]:
    return {mid for mid, _ in index.search_keyword(text, IndexFilter(namespaces=(NS,)), 10)}


def test_an_exclusive_upsert_inserts_absent_rows_and_replaces_held_ones(index: MilvusIndex) -> None:
    held = memory("apricot jam on the shelf", seed=1)
    index.upsert([held])
    counted = CountedCalls(index._client)  # noqa: SLF001 - counting the requests Lite receives
    fresh = [memory(f"a brand new memory number {i}", seed=10 + i) for i in range(5)]
    written = index.upsert([*fresh, memory("zucchini bread in the oven", mid=held.id, seed=1)], exclusive=True)
    assert written == 6
    # The absent rows went in one insert; only the held one was upserted (a delete, then an insert).
    assert counted.calls == ["insert", "upsert"]
    index.flush()
    assert index.count() == 6, "a row was stored twice or lost"
    assert keyword_ids(index, "apricot") == set()
    assert keyword_ids(index, "zucchini") == {held.id}
    assert keyword_ids(index, "brand new memory") == {m.id for m in fresh}
    # Without exclusivity every row is upserted, as before.
    again = [memory(f"another plain memory {i}", seed=20 + i) for i in range(3)]
    index.upsert(again)
    assert counted.calls[-1] == "upsert" and counted.calls.count("insert") == 1
    index.flush()
    assert index.count() == 9
