"""Rows of the memories table as records (memhub/db/memory_rows.py): built without MemoryRecord's generated
__init__ (for speed) and with array columns straight from the driver, they must be the records __init__ makes."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import Stack

from memhub.client import memory_input
from memhub.core.model import MemoryFilter, MemoryRecord
from memhub.db import memory_reads, memory_rows


def test_hydrated_records_equal_the_ones_init_makes(stack: Stack, ns: str) -> None:
    first = stack.client.write([memory_input(ns, "Caroline moved to Lisbon in May", tags=["travel", "move"])]).results[0]
    reply = stack.client.write(
        [
            memory_input(
                ns,
                "Caroline lives in Lisbon",
                type="fact",
                tags=["home", "ticket:4312", "café"],
                entities=["Caroline", "Lisbon"],
                importance=4,
                derived_from=[first.memory.id],
            )
        ]
    )
    ids = [first.memory.id, reply.results[0].memory.id]
    with stack.hub.engine.connect() as conn:
        records = memory_reads.hydrate(conn, ids, MemoryFilter((ns,)), [ns])
    assert set(records) == set(ids)
    derived = records[ids[1]]
    # Arrays arrive as tuples of str (text[] and uuid[] alike), not lists or UUID objects.
    assert derived.tags == ("home", "ticket:4312", "café")
    assert derived.entities == ("Caroline", "Lisbon")
    assert derived.derived_from == (ids[0],) and all(type(x) is str for x in derived.derived_from)
    assert records[ids[0]].tags == ("travel", "move") and records[ids[0]].derived_from == ()
    for record in records.values():
        made = MemoryRecord(**{f.name: getattr(record, f.name) for f in dataclasses.fields(MemoryRecord)})
        assert record == made and hash(record) == hash(made) and repr(record) == repr(made)
        assert dataclasses.replace(record, hidden_sources=2).hidden_sources == 2
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.content = "changed"  # type: ignore[misc]  # frozen, as MemoryRecord's own are


def test_a_record_must_be_given_every_field() -> None:
    with pytest.raises(TypeError, match="hidden_sources"):
        memory_rows._record(id="x")  # noqa: SLF001 - the guard against a field added to MemoryRecord later
