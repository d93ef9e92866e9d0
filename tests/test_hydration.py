"""Hydration reads the head of the ranking and a few rows past it in one query; a later stage that needs rows
further down gets them from that read, not from another query, and the same rows a new read would give."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from conftest import Stack
from sqlalchemy import Connection, event

from memhub.client import memory_input
from memhub.core.model import MemoryFilter, SearchQuery
from memhub.db import memory_reads
from memhub.search import derived, hydration
from memhub.search.fusion import Fused
from memhub.search.query import understand
from memhub.search.settings import RetrievalSettings


@contextmanager
def counted(conn: Connection) -> Iterator[list[str]]:
    """The statements ``conn`` runs inside the block."""
    ran: list[str] = []

    def note(_conn, _cursor, statement, *_args) -> None:  # noqa: ANN001 - SQLAlchemy's event signature
        ran.append(statement)

    event.listen(conn, "before_cursor_execute", note)
    try:
        yield ran
    finally:
        event.remove(conn, "before_cursor_execute", note)


def test_rows_past_the_head_come_from_the_first_read(stack: Stack, ns: str) -> None:
    written = stack.client.write([memory_input(ns, f"Shelf {n} holds the blue binders", type="fact") for n in range(24)])
    ids = [r.memory.id for r in written.results]
    stale = ids[6]  # forgotten after indexing: past the head, inside the spare rows
    stack.client.forget(ids=[stale], reason="test")
    fused = [Fused(mid, 1.0 / (i + 1), ()) for i, mid in enumerate(ids)]
    query = SearchQuery("blue binders", MemoryFilter(namespaces=(ns,)), top_k=3, channels=(), explain=False, max_tokens=0)
    head = 4
    with stack.hub.engine.connect() as conn:
        with counted(conn) as ran:
            found = hydration.hydrate(conn, fused, query, [ns], head)
        assert len(ran) == 1  # one query for the head and the spare rows
        assert list(found.records) == ids[:head] and [f.id for f in found.fused] == ids[:head]
        past = ids[head : head + hydration.SPARE]
        assert set(found.spare) == set(past) - {stale}
        with counted(conn) as ran:
            spare_rows = hydration.rows(conn, found, past, query, [ns])
        assert ran == []  # read already, the forgotten one known to have no row
        assert spare_rows.keys() == memory_reads.hydrate(conn, past, query.filter, [ns]).keys() == set(past) - {stale}
        further = ids[head + hydration.SPARE - 2 : head + hydration.SPARE + 4]
        with counted(conn) as ran:
            more = hydration.rows(conn, found, further, query, [ns])
        assert len(ran) == 1 and set(more) == set(further)  # only the unread ones are read, in one query
        assert all(more[mid].content == f"Shelf {ids.index(mid)} holds the blue binders" for mid in further)


def test_too_few_servable_rows_in_the_head_read_everything_after(stack: Stack, ns: str) -> None:
    written = stack.client.write([memory_input(ns, f"Crate {n} left the dock", type="fact") for n in range(20)])
    ids = [r.memory.id for r in written.results]
    stack.client.forget(ids=ids[:10], reason="test")  # the head and the spare rows mostly stale
    fused = [Fused(mid, 1.0 / (i + 1), ()) for i, mid in enumerate(ids)]
    query = SearchQuery("crate", MemoryFilter(namespaces=(ns,)), top_k=5, channels=(), explain=False, max_tokens=0)
    with stack.hub.engine.connect() as conn:
        found = hydration.hydrate(conn, fused, query, [ns], 4)
    assert [f.id for f in found.fused] == ids[10:] and found.spare == {}
    assert found.read == frozenset(ids)


def test_a_read_ahead_reads_the_unread_in_one_query_and_later_steps_in_none(stack: Stack, ns: str) -> None:
    written = stack.client.write([memory_input(ns, f"Bin {n} holds red cables", type="fact") for n in range(30)])
    ids = [r.memory.id for r in written.results]
    stale = ids[20]
    stack.client.forget(ids=[stale], reason="test")
    fused = [Fused(mid, 1.0 / (i + 1), ()) for i, mid in enumerate(ids)]
    query = SearchQuery("red cables", MemoryFilter(namespaces=(ns,)), top_k=3, channels=(), explain=False, max_tokens=0)
    with stack.hub.engine.connect() as conn:
        found = hydration.hydrate(conn, fused, query, [ns], 4)
        below = ids[4 + hydration.SPARE :]
        with counted(conn) as ran:
            ahead = hydration.read_ahead(conn, found, ids[2:], query, [ns])  # the head and spare ones are read
        assert len(ran) == 1 and ahead.read == frozenset(ids)
        assert set(ahead.spare) == set(ids[4:]) - {stale} and not set(ahead.spare) & set(ahead.records)
        with counted(conn) as ran:
            rows = hydration.rows(conn, ahead, below, query, [ns])
            assert hydration.read_ahead(conn, ahead, below, query, [ns]) is ahead
        assert ran == []
        assert rows.keys() == memory_reads.hydrate(conn, below, query.filter, [ns]).keys() == set(below) - {stale}


def test_leaving_out_restatements_reads_further_down_in_one_query(stack: Stack, ns: str) -> None:
    # Two of every three candidates are preferences derived from the turn before them: each step of 8 further down
    # holds two thirds restatements, so the stage reads in several steps. They cost one query (two before), with
    # the rows one read per step would give.
    turns = [r.memory.id for r in stack.client.write([memory_input(ns, f"Lee visited museum {n}") for n in range(20)]).results]
    restate = [(f"Preference of Lee: museum {n}{tail}", t) for n, t in enumerate(turns) for tail in ("", " again")]
    restated = [
        r.memory.id
        for r in stack.client.write([memory_input(ns, text, type="preference", derived_from=[t]) for text, t in restate]).results
    ]
    ids = [mid for n, t in enumerate(turns) for mid in (t, restated[2 * n], restated[2 * n + 1])]
    fused = [Fused(mid, 1.0 / (i + 1), ()) for i, mid in enumerate(ids)]
    query = SearchQuery("Which museums did Lee visit?", MemoryFilter(namespaces=(ns,)), 10, (), explain=False, max_tokens=0)
    asked = understand(query, "all-MiniLM-L6-v2-onnx-int8-dynamic", RetrievalSettings())
    with stack.hub.engine.connect() as conn:
        found = hydration.hydrate(conn, fused, query, [ns], 13)
        with counted(conn) as ran:
            kept = derived.leave_out_restatements(found, asked, conn, [ns], fused)
        assert len(ran) == 1
        everything = memory_reads.hydrate(conn, ids, query.filter, [ns])
    assert [f.id for f in kept.fused] == [mid for mid in ids if mid in kept.records]
    # The turns from the top down, at least as many candidates as the head held, no restatement among them.
    assert set(kept.records) == set(turns[: len(kept.records)]) and len(kept.records) >= 13
    assert all(kept.records[mid] == everything[mid] for mid in kept.records)
