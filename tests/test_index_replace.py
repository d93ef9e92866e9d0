"""Replacing rows the index holds never hides them from a search (memhub/index/replace_gate.py).

Milvus Lite 2.5.1 upserts a held row as a delete and then an insert; a search
between the two misses the row. The hub replaces rows in normal operation (a
turn's keyword context grows when the next turn arrives), so searches of the
same process wait for a replacement to end. Real Milvus Lite, embedded.
"""

from __future__ import annotations

import dataclasses
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import lite_index

from memhub.index import IndexedMemory, IndexFilter, MilvusIndex
from memhub.index.replace_gate import ReplaceGate

DIM = 16
ROWS = 300
FLT = IndexFilter(namespaces=("replace/a",))


def unit(seed: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.gauss(0, 1) for _ in range(DIM)]


def word(i: int) -> str:
    return "zq" + "".join(chr(ord("a") + int(d)) for d in f"{i:04d}") + "xv"


def row(i: int, mid: str, context: str = "") -> IndexedMemory:
    return IndexedMemory(mid, "replace/a", "episodic", "event", f"{context}Parcel {word(i)} ships", (), 1, 1, 0, unit(i))


@pytest.fixture
def index(tmp_path: Path) -> Iterator[MilvusIndex]:
    with lite_index(tmp_path / "replace.db", "replace", DIM) as idx:
        yield idx


def test_a_search_during_replacements_always_finds_the_row(index: MilvusIndex) -> None:
    ids = [str(uuid.uuid4()) for _ in range(ROWS)]
    assert index.upsert([row(i, mid) for i, mid in enumerate(ids)]) == ROWS
    stop = threading.Event()
    searched, misses, errors = [0], [], []

    def search_loop() -> None:
        rng = random.Random(7)
        try:
            while not stop.is_set():
                i = rng.randrange(ROWS)
                keyword = {h for h, _ in index.search_keyword(word(i), FLT, 5)}
                dense = {h for h, _ in index.search_dense(unit(i), FLT, 5)}
                searched[0] += 1
                if ids[i] not in keyword or ids[i] not in dense:
                    misses.append(i)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below, not lost with the thread
            errors.append(exc)

    searcher = threading.Thread(target=search_loop, daemon=True)
    searcher.start()
    replaced = 0
    # Each round changes every row's keyword context (as the next turn of a session does) and keeps its word.
    for rnd in range(8):
        replaced += index.upsert([row(i, mid, f"turn {rnd} before. ") for i, mid in enumerate(ids)], skip_unchanged=True)
    while searched[0] < 20 and searcher.is_alive():  # a slow machine: let the searcher get its share
        time.sleep(0.05)
    stop.set()
    searcher.join(30)
    assert not errors, errors
    assert replaced == 8 * ROWS, "every round replaced every row"
    assert not misses, f"{len(misses)} of {searched[0]} searches missed a row while it was being replaced"
    kept = index.vectors([ids[0]])
    assert list(kept) == [ids[0]]


def test_rows_held_unchanged_are_not_written_again(index: MilvusIndex) -> None:
    ids = [str(uuid.uuid4()) for _ in range(5)]
    rows = [row(i, mid) for i, mid in enumerate(ids)]
    assert index.upsert(rows) == 5
    assert index.upsert(rows, skip_unchanged=True) == 0
    # A changed field (any but the vector) is written; a fresh row too; unchanged ones are not.
    changed = dataclasses.replace(rows[1], tags=("new",))
    fresh = row(9, str(uuid.uuid4()))
    assert index.upsert([*rows, changed, fresh], skip_unchanged=True) == 2
    assert index.search_keyword(word(9), FLT, 5)[0][0] == fresh.id
    # Without skip_unchanged every row is written again (re-persisting what Lite failed to write needs that).
    assert index.upsert(rows) == 5
    assert index.count() == 6


def test_a_replacement_waits_for_running_searches_and_goes_before_new_ones() -> None:
    gate = ReplaceGate(timeout_s=30)
    order: list[str] = []
    searching, release = threading.Event(), threading.Event()

    def first_search() -> None:
        with gate.search():
            searching.set()
            release.wait(30)
            order.append("first search ends")

    def replacement() -> None:
        with gate.replace():
            order.append("replace")

    def later_search() -> None:
        with gate.search() as gated:
            order.append(f"later search (gated={gated})")

    threads = [threading.Thread(target=first_search)]
    threads[0].start()
    assert searching.wait(30)
    threads.append(threading.Thread(target=replacement))
    threads[1].start()
    _wait_until(lambda: gate._waiting_replacements == 1)
    threads.append(threading.Thread(target=later_search))
    threads[2].start()
    time.sleep(0.2)  # the later search must now be waiting behind the replacement, not running
    assert order == []
    release.set()
    for t in threads:
        t.join(30)
    assert order == ["first search ends", "replace", "later search (gated=True)"]


def test_a_search_does_not_wait_forever_for_a_replacement_that_hangs() -> None:
    gate = ReplaceGate(timeout_s=0.3)
    holding, release = threading.Event(), threading.Event()

    def hung_replacement() -> None:
        with gate.replace():
            holding.set()
            release.wait(30)

    t = threading.Thread(target=hung_replacement)
    t.start()
    assert holding.wait(30)
    with gate.search() as gated:
        assert gated is False, "the search ran without the gate after its timeout"
    release.set()
    t.join(30)
    with gate.search() as gated:
        assert gated is True


def _wait_until(condition: Callable[[], bool], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)
