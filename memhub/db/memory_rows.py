"""A memory's row as SQL sees it: the record a row becomes, every column, the shared filter as bound
parameters, and the conditions readers apply (servable now, inside a namespace subtree).

Shared by the stores' modules that read memories (memhub/db/memories.py, memory_reads.py, fulltext.py,
entity_search.py, changes.py, consolidation.py, ...), so a filter means the same wherever it is applied.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from sqlalchemy import Boolean, Column, Text, and_, any_, bindparam, cast, func, or_, type_coerce
from sqlalchemy.dialects.postgresql import ARRAY, UUID
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.types import UserDefinedType

from memhub.core.model import Kind, MemoryFilter, MemoryRecord, MemoryType, Status, Trust
from memhub.db.schema import MEMORY_COLUMNS, memories


def to_record(row) -> MemoryRecord:  # noqa: ANN001 - a SQLAlchemy Row of the memories table
    """The record of a row holding the memories table's columns by name, in any order and among others."""
    m = row._mapping
    return record_from_columns([m[name] for name in COLUMN_NAMES])


def record_from_columns(v: Sequence[Any]) -> MemoryRecord:
    """The record of a row whose first columns are RECORD_COLUMNS, in their order (as a statement selecting
    ``*RECORD_COLUMNS`` returns them), read by position.

    By name (``row._mapping[...]``) and through the enums' constructors, a record took 10-20 us, and a search reads
    50-60 rows (bench/search_profile.py: to_record led the searching thread's functions at 10k memories).
    """
    values = {name: v[at] for name, at in _AS_STORED}
    values["id"] = str(v[_ID])
    values["kind"] = _enum(_KINDS, Kind, v[_KIND])
    values["type"] = _enum(_TYPES, MemoryType, v[_TYPE])
    values["status"] = _enum(_STATUSES, Status, v[_STATUS])
    values["trust"] = _enum(_TRUSTS, Trust, v[_TRUST])
    values["tags"] = tuple(v[_TAGS])
    values["entities"] = tuple(v[_ENTITIES])
    values["flags"] = tuple(v[_FLAGS])
    # uuid[] columns: read as text[] (RECORD_COLUMNS) they are str already; by the table's own columns, UUIDs.
    values["supersedes"] = tuple(map(str, v[_SUPERSEDES]))
    values["derived_from"] = tuple(map(str, v[_DERIVED_FROM]))
    values["superseded_by"] = str(v[_SUPERSEDED_BY]) if v[_SUPERSEDED_BY] else None
    values["hidden_sources"] = 0
    return _record(**values)


COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in MEMORY_COLUMNS)
"""The columns a record is read from, in RECORD_COLUMNS' order."""
_AT = {name: i for i, name in enumerate(COLUMN_NAMES)}
_CONVERTED = ("id", "kind", "type", "status", "trust", "tags", "entities", "flags", "supersedes", "derived_from", "superseded_by")
_ID, _KIND, _TYPE, _STATUS, _TRUST, _TAGS, _ENTITIES, _FLAGS, _SUPERSEDES, _DERIVED_FROM, _SUPERSEDED_BY = (
    _AT[name] for name in _CONVERTED
)
#: (field, position) of the fields a record holds as the driver hands them over.
_AS_STORED = tuple(
    (f.name, _AT[f.name]) for f in dataclasses.fields(MemoryRecord) if f.name not in _CONVERTED and f.name != "hidden_sources"
)

_E = TypeVar("_E", bound=enum.Enum)
_KINDS: dict[Any, Kind] = {k.value: k for k in Kind}
_TYPES: dict[Any, MemoryType] = {t.value: t for t in MemoryType}
_STATUSES: dict[Any, Status] = {s.value: s for s in Status}
_TRUSTS: dict[Any, Trust] = {t.value: t for t in Trust}


def _enum(members: dict[Any, _E], cls: type[_E], value: Any) -> _E:
    """``cls(value)`` by a dict look-up; a value that is not a member raises the enum's own ValueError."""
    member = members.get(value)
    return member if member is not None else cls(value)


_RECORD_FIELDS = frozenset(f.name for f in dataclasses.fields(MemoryRecord))


def _record(**values: Any) -> MemoryRecord:
    """A MemoryRecord of every one of its fields, without its generated ``__init__``.

    A frozen dataclass's ``__init__`` sets each of the 40 fields through ``object.__setattr__``: 5-15 us a record,
    and a search hydrates 30-40 rows, a twentieth of a busy hub's Python time (py-spy, bench/bench_throughput.py).
    The record is the same object ``MemoryRecord(**values)`` makes (tests/test_memory_rows.py compares them); the
    check below keeps a field added to the class from being left unset here.
    """
    if values.keys() != _RECORD_FIELDS:
        raise TypeError(f"a record needs exactly MemoryRecord's fields; differs by {sorted(values.keys() ^ _RECORD_FIELDS)}")
    record = object.__new__(MemoryRecord)
    record.__dict__.update(values)
    return record


class _DriverList(UserDefinedType[list[Any]]):
    """A text[] result column taken as the driver hands it over (psycopg: a list of str). SQLAlchemy's ARRAY
    result processing copies every list element by element; for the five array columns of the rows a search
    hydrates that was a twentieth of a busy hub's Python time."""

    cache_ok = True

    def get_col_spec(self, **kw: Any) -> str:
        return "TEXT[]"

    def result_processor(self, dialect: Any, coltype: Any) -> None:
        return None


def _record_column(c: Column[Any]) -> ColumnElement[Any]:
    if not isinstance(c.type, ARRAY):
        return c
    # uuid[] is read as text[]: the driver then hands over strings, not UUID objects to convert back.
    as_text = cast(c, ARRAY(Text)) if isinstance(c.type.item_type, UUID) else c
    return type_coerce(as_text, _DriverList()).label(c.name)


# Every column, the arrays as text[] lists straight from the driver.
RECORD_COLUMNS = [_record_column(c) for c in MEMORY_COLUMNS]


def subtree_condition(column: ColumnElement[str], roots: Sequence[str]) -> ColumnElement[bool]:
    """`column` equals one of the roots or lies below it ('a' covers 'a/b', not 'ab')."""
    clauses: list[ColumnElement[bool]] = []
    for root in roots:
        # '_' is legal in namespaces but a LIKE wildcard: escape it (and the escape char).
        escaped = root.replace("\\", "\\\\").replace("_", "\\_").replace("%", "\\%")
        clauses.append(column == root)
        clauses.append(column.like(escaped + "/%", escape="\\"))
    return or_(*clauses)


# The shared filter as named parameters: each filter field that is set adds one
# condition with a bound parameter of its own. A statement is then the same for
# every request of the same shape (which fields are set), so hot statements are
# built once and SQLAlchemy's compiled cache serves them; "= ANY(array)" rather
# than "IN (...)" for the same reason (an IN list is re-rendered per execution).
# Measured at 16 concurrent searches: building and keying the hydration statement
# per request was a tenth of the hub's Python time.
_FILTER_CONDITIONS: dict[str, Callable[[], ColumnElement[bool]]] = {
    "f_namespaces": lambda: memories.c.namespace == any_(bindparam("f_namespaces", type_=ARRAY(Text))),
    "f_kinds": lambda: memories.c.kind == any_(bindparam("f_kinds", type_=ARRAY(Text))),
    "f_types": lambda: memories.c.type == any_(bindparam("f_types", type_=ARRAY(Text))),
    "f_tags": lambda: memories.c.tags.overlap(bindparam("f_tags", type_=ARRAY(Text))),
    "f_occurred_from": lambda: memories.c.occurred_at >= bindparam("f_occurred_from", type_=memories.c.occurred_at.type),
    "f_occurred_to": lambda: memories.c.occurred_at < bindparam("f_occurred_to", type_=memories.c.occurred_at.type),
    "f_created_from": lambda: memories.c.created_at >= bindparam("f_created_from", type_=memories.c.created_at.type),
    "f_created_to": lambda: memories.c.created_at < bindparam("f_created_to", type_=memories.c.created_at.type),
    "f_subject_key": lambda: memories.c.subject_key == bindparam("f_subject_key", type_=Text),
    "f_flags": lambda: memories.c.flags.overlap(bindparam("f_flags", type_=ARRAY(Text))),
    "f_unflagged": lambda: and_(bindparam("f_unflagged", type_=Boolean), func.cardinality(memories.c.flags) == 0),
}


def filter_params(flt: MemoryFilter, allowed: Sequence[str]) -> dict[str, Any]:
    """The filter's parameters, one per field that is set (its keys are the statement's shape).

    `allowed` is the exact list of namespaces the caller may touch (already
    resolved below the filter's roots and checked against policy).
    """
    values: dict[str, Any] = {
        "f_namespaces": list(allowed),
        "f_kinds": [k.value for k in flt.kinds] or None,
        "f_types": [t.value for t in flt.types] or None,
        "f_tags": list(flt.tags_any) or None,
        "f_occurred_from": flt.occurred.start,
        "f_occurred_to": flt.occurred.end,
        "f_created_from": flt.created.start,
        "f_created_to": flt.created.end,
        "f_subject_key": flt.subject_key,
        "f_flags": list(flt.flags_any) or None,
        "f_unflagged": True if flt.unflagged else None,
    }
    return {k: v for k, v in values.items() if v is not None}


@functools.lru_cache(maxsize=512)
def shape_conditions(shape: tuple[str, ...]) -> tuple[ColumnElement[bool], ...]:
    return tuple(_FILTER_CONDITIONS[name]() for name in shape)


def filter_conditions(params: dict[str, Any]) -> tuple[ColumnElement[bool], ...]:
    """SQL conditions for the shared filter fields (not status), bound by ``params`` (from ``filter_params``) at execution."""
    return shape_conditions(tuple(params))


def servable_condition() -> ColumnElement[bool]:
    """Active and not past its expiry, judged now (the index may lag behind both)."""
    return and_(
        memories.c.status == Status.ACTIVE.value,
        or_(memories.c.expires_at.is_(None), memories.c.expires_at > func.now()),
    )
