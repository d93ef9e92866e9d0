"""The change feed's tables (memhub/feed/): one row per change to a memory, the pruning horizon, the cursor key."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, DateTime, Index, SmallInteger, String, Table, text
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.dialects.postgresql import base as postgresql_base
from sqlalchemy.types import UserDefinedType

from memhub.db.tables import metadata


class XID8(UserDefinedType):
    """PostgreSQL's 64-bit transaction id (xid8): never wraps around, ordered like the transactions' start."""

    cache_ok = True

    def get_col_spec(self, **kw: object) -> str:
        return "XID8"


# So that reading the schema back (the migration test compares it with this file) knows the type.
postgresql_base.ischema_names.setdefault("xid8", XID8)

# The change feed (memhub/feed/): one row per change to a memory, written by triggers on memories in the
# changing transaction itself (migration 0014), so no committed change can lack its row. Rows are read
# in (txid, seq) order, never further than the oldest transaction still running (memhub/db/changes.py
# explains why that order, and not seq alone, is gap-free). Rows older than the retention are deleted.
memory_changes = Table(
    "memory_changes",
    metadata,
    Column("seq", BigInteger, primary_key=True, autoincrement=True),
    # The writing transaction's id (pg_current_xact_id()).
    Column("txid", XID8, nullable=False, server_default=text("pg_current_xact_id()")),
    Column("memory_id", UUID(as_uuid=False), nullable=False),
    Column("namespace", String(255), nullable=False),
    # written | superseded | forgotten | expired | archived | consolidated | restored | released
    Column("event", String(16), nullable=False),
    Column("changed_at", DateTime(timezone=True), nullable=False, server_default=text("clock_timestamp()")),
    Index("ix_memory_changes_position", "txid", "seq"),
)

# Where pruning stopped: every change at or before (txid, seq) is gone, every later one is kept; a
# cursor before it cannot be resumed (OUT_OF_RANGE). One row, (0, 0) until the first prune.
change_feed_horizon = Table(
    "change_feed_horizon",
    metadata,
    Column("id", SmallInteger, primary_key=True),
    Column("txid", XID8, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("pruned_at", DateTime(timezone=True)),
)

# The key that seals change-feed cursors (memhub/feed/cursor.py): one random row made by migration 0014,
# shared by every replica, so a cursor from one hub resumes on another while its content (a position in
# the whole hub's changes) stays unreadable and unforgeable to clients.
change_feed_key = Table(
    "change_feed_key",
    metadata,
    Column("id", SmallInteger, primary_key=True),
    Column("secret", String(128), nullable=False),
)
