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
from memhub.search import hydration
from memhub.search.fusion import Fused


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
