"""Rows of the memories table as records (memhub/db/memory_rows.py): built without MemoryRecord's generated
__init__ (for speed) and with array columns straight from the driver, they must be the records __init__ makes."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import Stack
from sqlalchemy import select

from memhub.client import memory_input
from memhub.core.model import Kind, MemoryFilter, MemoryRecord, MemoryType
from memhub.db import memory_reads, memory_rows
from memhub.db.schema import memories


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


def test_records_read_by_position_equal_the_ones_read_by_name(stack: Stack, ns: str) -> None:
    first = stack.client.write([memory_input(ns, "Melanie paints at dawn", tags=["art"])]).results[0]
    second = stack.client.write(
        [memory_input(ns, "Melanie paints landscapes", type="preference", entities=["Melanie"], derived_from=[first.memory.id])]
    ).results[0]
    ids = [first.memory.id, second.memory.id]
    with stack.hub.engine.connect() as conn:
        by_position = memory_reads.hydrate(conn, ids, MemoryFilter((ns,)), [ns])
        # The table's own columns, in reverse order with the generated tsvector among them: read by name.
        reversed_columns = list(reversed(memories.c))
        rows = conn.execute(select(*reversed_columns).where(memories.c.id.in_(ids))).all()
    by_name = {r.id: r for r in map(memory_rows.to_record, rows)}
    assert set(by_position) == set(by_name) == set(ids)
    for mid in ids:
        assert by_position[mid] == by_name[mid]
        for field in dataclasses.fields(MemoryRecord):  # same types too: enums as members, arrays as tuples of str
            assert type(getattr(by_position[mid], field.name)) is type(getattr(by_name[mid], field.name)), field.name
    assert by_position[ids[1]].derived_from == (ids[0],) and by_position[ids[1]].type is MemoryType.PREFERENCE


@pytest.mark.parametrize("column", ["kind", "type", "status", "trust"])
def test_a_stored_value_no_enum_knows_is_refused_by_name(column: str) -> None:
    row = [None] * len(memory_rows.COLUMN_NAMES)
    for name, value in {"kind": "episodic", "type": "event", "status": "active", "trust": "agent"}.items():
        row[memory_rows.COLUMN_NAMES.index(name)] = value
    for name in ("tags", "entities", "supersedes", "derived_from", "flags"):
        row[memory_rows.COLUMN_NAMES.index(name)] = []
    row[memory_rows.COLUMN_NAMES.index("id")] = "00000000-0000-0000-0000-000000000001"
    assert memory_rows.record_from_columns(row).kind is Kind.EPISODIC
    row[memory_rows.COLUMN_NAMES.index(column)] = "bogus"
    with pytest.raises(ValueError, match="'bogus' is not a valid"):
        memory_rows.record_from_columns(row)


def test_each_position_reads_the_column_it_is_named_after() -> None:
    # The converted fields' positions are unpacked from a list of names: two names swapped there would read each
    # other's column.
    for name in memory_rows._CONVERTED:  # noqa: SLF001
        assert memory_rows.COLUMN_NAMES[getattr(memory_rows, "_" + name.upper())] == name
    assert all(memory_rows.COLUMN_NAMES[at] == name for name, at in memory_rows._AS_STORED)  # noqa: SLF001
