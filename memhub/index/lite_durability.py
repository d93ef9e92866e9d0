"""Did the embedded Milvus Lite keep what it acknowledged? Read back from its data file.

Milvus Lite 2.5 writes every row into a SQLite table named after the
collection (``<collection>(id, milvus_id, data)``) when it accepts the
insert, and serves searches from memory. On a full disk the SQLite write
fails and Lite swallows the error: the upsert and the flush succeed, the row
is searchable, and it is gone at the next start (measured: 300 of 300 rows
written on a full tmpfs lost, nothing in Lite's log). The only witness is
the file, so the hub reads it back, read-only, through SQLite's own locking.

This leans on Lite 2.5.1's private file layout (pinned in pyproject). If the
layout is not what we expect the check answers ``None`` ("cannot tell"),
never a false alarm and never a crash.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

# A reader waits this long for Lite's write lock before giving up on one check.
_BUSY_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Persisted:
    """What the data file holds for one collection."""

    rows: int
    free_bytes: int
    """Free space on the data file's filesystem (for the message: a full disk is the usual cause)."""


def _connect(db_file: Path) -> sqlite3.Connection:
    # mode=ro: never create, never write; a shared lock only while a statement runs.
    return sqlite3.connect(f"file:{db_file}?mode=ro", uri=True, timeout=_BUSY_TIMEOUT_S, check_same_thread=False)


def free_bytes(db_file: Path) -> int:
    """Bytes an unprivileged writer may still use on the filesystem holding ``db_file``."""
    st = os.statvfs(db_file.parent)
    return st.f_bavail * st.f_frsize


def persisted(db_file: Path, collection: str) -> Persisted | None:
    """Rows of ``collection`` in the data file, or None when the file cannot tell (missing table, busy, other layout)."""
    try:
        conn = _connect(db_file)
        try:
            (rows,) = conn.execute(f'SELECT count(*) FROM "{_table(collection)}"').fetchone()
        finally:
            conn.close()
        return Persisted(int(rows), free_bytes(db_file))
    except (sqlite3.Error, OSError) as exc:
        log.debug("cannot read back %s from %s: %s", collection, db_file, exc)
        return None


def missing_ids(db_file: Path, collection: str, live_ids: Iterable[str]) -> list[str] | None:
    """Of ``live_ids`` (what the engine serves), those the data file lacks; None when the file cannot tell."""
    try:
        conn = _connect(db_file)
        try:
            stored = {str(r[0]) for r in conn.execute(f'SELECT milvus_id FROM "{_table(collection)}"')}
        finally:
            conn.close()
    except (sqlite3.Error, OSError) as exc:
        log.debug("cannot read back the ids of %s from %s: %s", collection, db_file, exc)
        return None
    return sorted(set(live_ids) - stored)


def _table(collection: str) -> str:
    # Collection names are [A-Za-z0-9_] (Milvus refuses others); checked again because it is pasted into SQL.
    if not collection.replace("_", "").isalnum():
        raise sqlite3.ProgrammingError(f"unexpected collection name {collection!r}")
    return collection
