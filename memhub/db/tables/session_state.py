"""Shared session state (memhub/session_state/): sessions and their keys, UNLOGGED."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, DateTime, Index, Integer, Sequence, String, Table, Text, func

from memhub.db.tables import metadata

# Shared session state (memhub/session_state/): short-lived JSON values under (namespace, session_id, key).
# UNLOGGED (migration 0011): writes skip the write-ahead log, which is most of a small write's cost, and
# in exchange a crash of the Postgres server (not a clean restart) empties both tables, nor do standbys
# receive them. Working state of tasks in progress may be lost that way; memories may not, so they
# never live here. Identifiers are compared byte-wise (COLLATE "C"): keys list in the same order on
# every server, whatever its locale, and key-order paging stays exact.
session_state_sessions = Table(
    "session_state_sessions",
    metadata,
    Column("namespace", String(255), primary_key=True),
    Column("session_id", String(128, collation="C"), primary_key=True),
    # The agent whose put created the session: the per-agent session quota counts these.
    Column("created_by", String(255), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # The latest expiry of the session's live keys; the session is gone once it passes.
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Index("ix_session_state_sessions_ns_expires", "namespace", "expires_at"),
    Index("ix_session_state_sessions_creator", "created_by", "expires_at"),
    Index("ix_session_state_sessions_expires", "expires_at"),
    prefixes=["UNLOGGED"],
)

session_state = Table(
    "session_state",
    metadata,
    Column("namespace", String(255), primary_key=True),
    Column("session_id", String(128, collation="C"), primary_key=True),
    Column("key", String(128, collation="C"), primary_key=True),
    # The JSON text exactly as the writer sent it (validated by the hub, memhub/session_state/validation.py).
    Column("value", Text, nullable=False),
    Column("value_bytes", Integer, nullable=False),
    # From session_state_version_seq (a logged sequence): never repeats, even after a crash emptied the table.
    Column("version", BigInteger, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Column("updated_by", String(255), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    # The request_id of the put that set this value ('' when none): a retry of it is answered, not applied.
    Column("request_id", String(128), nullable=False, server_default=""),
    Index("ix_session_state_expires", "expires_at"),
    prefixes=["UNLOGGED"],
)

session_state_version_seq = Sequence("session_state_version_seq", metadata=metadata)
