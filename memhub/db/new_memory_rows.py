"""A new memory's row, and the one statement that inserts a batch of them (memhub/db/memories.py decides which).

Why the rows travel as one JSON parameter: the statement psycopg is given must stay small for psycopg to
cache its conversion of the statement's placeholders (``psycopg._queries``: at most 4,096 bytes and 50
parameters). SQLAlchemy's multi-row VALUES for a batch of 100 memories was 100 rows x 30 parameters, about
30 KB of SQL, converted afresh at every write: a third of a write's Python time in a profile of the write path
(cProfile with ``time.thread_time``, 3,000 memories). Sent as one ``jsonb`` array unpacked by
``jsonb_to_recordset``, the statement is fixed (about 2.6 KB, one parameter), SQLAlchemy compiles it once and
psycopg converts it once; the rows are serialised by the C json encoder instead of being adapted one value at
a time.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection, Row, bindparam, column, func, select
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.dialects.postgresql import insert as pg_insert

from memhub.core.model import Caller, NewMemory, Status
from memhub.db.memory_rows import RECORD_COLUMNS
from memhub.db.schema import memories
from memhub.recall.entities import keys_for as entity_keys_for

#: The columns a new row gives; ``occurred_at`` comes from ``occurred_at_given`` (None: the transaction's time).
GIVEN_COLUMNS = (
    "write_pos",
    "id",
    "namespace",
    "kind",
    "type",
    "content",
    "content_hash",
    "tags",
    "entities",
    "entity_keys",
    "importance",
    "confidence",
    "valid_from",
    "valid_to",
    "expires_at",
    "source_agent",
    "source_session",
    "source_trace",
    "source_request_id",
    "source_trace_from_caller",
    "status",
    "trust",
    "flags",
    "subject_key",
    "supersedes",
    "derived_from",
    "embedding_model",
    "blind_write",
)
_TIMES = ("valid_from", "valid_to", "expires_at", "occurred_at_given")

_given = func.jsonb_to_recordset(bindparam("rows", type_=JSONB)).table_valued(
    *(column(name, memories.c[name].type) for name in GIVEN_COLUMNS),
    column("occurred_at_given", memories.c.occurred_at.type),
)
_rows = _given.render_derived(name="r", with_types=True)

# Rows are inserted in the array's order (a function scan reads it front to back): callers sort them by their
# unique keys so that concurrent writers take the same locks in the same order. Conflicts (an active copy of
# the same content, or of the same subject key) are skipped; the caller tells them apart by the ids returned.
INSERT_ROWS = (
    pg_insert(memories)
    .from_select(
        [*GIVEN_COLUMNS, "occurred_at"],
        select(*(_rows.c[name] for name in GIVEN_COLUMNS), func.coalesce(_rows.c.occurred_at_given, func.now())),
    )
    .on_conflict_do_nothing()
    .returning(*RECORD_COLUMNS)  # the arrays as the driver's lists, as the readers take them (memory_rows.py)
)


def content_hash(content: str) -> str:
    """sha256 of the exact content (no normalisation: 'Yes' and 'yes' are different memories)."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def row_values(
    item: NewMemory, position: int, caller: Caller, session_id: str, embedding_model: str, blind: frozenset[str]
) -> dict:
    """The row ``item`` becomes (every column of GIVEN_COLUMNS, and ``occurred_at_given``), under a fresh id."""
    return {
        "write_pos": position,
        "id": str(uuid.uuid4()),
        "namespace": item.namespace,
        "kind": item.kind.value,
        "type": item.type.value,
        "content": item.content,
        "content_hash": content_hash(item.content),
        "tags": list(item.tags),
        "entities": list(item.entities),
        "entity_keys": entity_keys_for(item.content, item.entities),
        "importance": item.importance,
        "confidence": item.confidence,
        "occurred_at_given": item.occurred_at,
        "valid_from": item.valid_from,
        "valid_to": item.valid_to,
        "expires_at": item.expires_at,
        "source_agent": caller.agent_id,
        "source_session": session_id,
        "source_trace": caller.trace_id,
        "source_request_id": caller.hub_request_id,
        "source_trace_from_caller": caller.trace_id_from_caller,
        "status": (Status.QUARANTINED if item.quarantined else Status.ACTIVE).value,
        "trust": caller.trust.value,
        "flags": list(item.flags),
        "subject_key": item.subject_key,
        "supersedes": [],
        "derived_from": list(item.derived_from),
        "embedding_model": embedding_model,
        "blind_write": item.namespace in blind,
    }


def insert_rows(conn: Connection, rows: Sequence[dict]) -> dict[str, Row]:
    """Insert ``rows`` (from row_values) in the order given; the rows inserted, by id (skipped ones are absent)."""
    if not rows:
        return {}
    as_json = [_json_ready(row) for row in rows]
    return {str(r._mapping["id"]): r for r in conn.execute(INSERT_ROWS, {"rows": as_json})}


def _json_ready(row: dict) -> dict:
    # JSON has no time type: ISO 8601 with its offset, which timestamptz reads back exactly (microseconds kept).
    out = dict(row)
    for name in _TIMES:
        value = out[name]
        if isinstance(value, datetime):
            out[name] = value.isoformat()
    return out
