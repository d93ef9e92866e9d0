"""Postgres out of disk space: recognising it, naming where, and probing whether writes would work again.

A full disk is not an outage of Postgres: the server answers, ``SELECT 1``
and most reads work, and only what needs a new page, file or WAL segment
fails, with SQLSTATE 53100 (``psycopg.errors.DiskFull``, wrapped by
SQLAlchemy in ``OperationalError``, or raw from a COPY). So it has an outage
record of its own (``OUTAGE_KEY`` in memhub/outage_log.py): the first failure
logs one line naming the full path, and the record ends only when
``probe`` proves there is room again, never by a read that happened to
work (which would make the log flap with every write).

The location is the operator's: it goes to the log, never to a caller.
"""

from __future__ import annotations

import logging

from sqlalchemy import Connection, Engine, text

from memhub import outage_log

log = logging.getLogger(__name__)

SQLSTATE = "53100"  # disk_full (class 53, insufficient resources)
OUTAGE_KEY = "disk"
PROBE_ROWS = 50_000
"""Rows the probe sorts with a 64 kB work_mem: about 2 MB of temporary files, in the database's tablespace."""


def is_disk_full(exc: BaseException) -> bool:
    """True when ``exc`` or an error it was raised from carries SQLSTATE 53100."""
    cur: BaseException | None = exc
    for _ in range(8):  # the cause chain, bounded
        if cur is None:
            return False
        if getattr(cur, "sqlstate", None) == SQLSTATE or getattr(getattr(cur, "orig", None), "sqlstate", None) == SQLSTATE:
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def full() -> bool:
    """True from the first disk-full failure until a probe finds room again (process-wide)."""
    return outage_log.outage(OUTAGE_KEY).down


def set_location(where: str) -> None:
    """Name the storage in the outage's log lines: "the Postgres storage (disk full at <where>)"."""
    outage_log.outage(OUTAGE_KEY).name = f"the Postgres storage (disk full at {where})"


def locate(conn: Connection, server: str) -> str:
    """Where the connected database keeps its files: its tablespace's directory, else the server's data directory.

    ``server`` (host:port) stands in when the role may not read ``data_directory`` (superusers and
    pg_read_all_settings only): the operator still learns which server's disk to look at.
    """
    row = conn.execute(
        text(
            "SELECT t.spcname, pg_tablespace_location(t.oid) FROM pg_database d "
            "JOIN pg_tablespace t ON t.oid = d.dattablespace WHERE d.datname = current_database()"
        )
    ).one()
    if row[1]:
        return f"{row[1]} (tablespace {row[0]})"
    try:
        with conn.begin_nested():
            return str(conn.execute(text("SELECT current_setting('data_directory')")).scalar_one())
    except Exception:  # noqa: BLE001 - not allowed to read it: name the server instead
        return f"the data directory of the Postgres server at {server}"


def probe(engine: Engine) -> None:
    """Raise the database's error unless it can write a couple of MB in the database's own tablespace now.

    A sort larger than its work_mem spills to temporary files, which Postgres writes in the database's
    default tablespace when temp_tablespaces is empty: a real allocation on the disk that filled, that
    touches no table and no WAL, and whose files are gone when the statement ends.
    """
    with engine.begin() as conn:
        conn.execute(text("SET LOCAL work_mem = '64kB'"))
        conn.execute(text("SET LOCAL temp_tablespaces = ''"))
        conn.execute(
            text("SELECT count(*) FROM (SELECT g FROM generate_series(1, :n) g ORDER BY md5(g::text)) s"),
            {"n": PROBE_ROWS},
        )
