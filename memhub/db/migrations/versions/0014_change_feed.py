"""change feed (issue 13 part 1): memory_changes written by triggers in the changing transaction, the
pruning horizon, the key that seals cursors

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02 09:00:00

Triggers rather than a call at every place that changes a memory: a row per change is then written
in the same transaction as the change whatever code path made it (a write, a supersession inside
it, a forget, the expiry sweep, the archive job, a restore, an admin's release, and any later one),
so an acknowledged change can never lack its feed row. Inserts are recorded per statement (one
INSERT ... SELECT for a batch of 100 memories); status changes per row, but only for UPDATE
statements that set status and only for rows whose status did change: the frequent counter
updates (recalls, uses, confirmations) never fire it. A consolidation's writes say so through the
transaction-local setting memhub.change_cause (memhub/db/changes.py).

NOTIFY memhub_changes (delivered at commit, once per transaction) wakes the subscribers of every
replica; the table stays the truth.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


class _Xid8(sa.types.UserDefinedType):
    """PostgreSQL's xid8 (SQLAlchemy has no type for it)."""

    cache_ok = True

    def get_col_spec(self, **kw: object) -> str:
        return "XID8"


_TRIGGERS = r"""
CREATE FUNCTION memhub_changes_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO memory_changes (memory_id, namespace, event)
  SELECT id, namespace,
         CASE WHEN current_setting('memhub.change_cause', true) = 'consolidated' THEN 'consolidated' ELSE 'written' END
  FROM new_rows;
  IF FOUND THEN
    PERFORM pg_notify('memhub_changes', '');
  END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION memhub_changes_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO memory_changes (memory_id, namespace, event)
  VALUES (
    NEW.id,
    NEW.namespace,
    CASE
      WHEN NEW.status = 'active' AND OLD.status = 'archived' THEN 'restored'
      WHEN NEW.status = 'active' AND OLD.status = 'quarantined' THEN 'released'
      WHEN NEW.status = 'active' THEN 'written'
      ELSE NEW.status
    END
  );
  PERFORM pg_notify('memhub_changes', '');
  RETURN NULL;
END $$;

CREATE TRIGGER memories_changes_inserted AFTER INSERT ON memories
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memhub_changes_inserted();
CREATE TRIGGER memories_changes_status AFTER UPDATE OF status ON memories
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION memhub_changes_status();
"""


def upgrade() -> None:
    op.create_table(
        "memory_changes",
        sa.Column("seq", sa.BigInteger(), primary_key=True, autoincrement=True),
        sa.Column("txid", _Xid8(), server_default=sa.text("pg_current_xact_id()"), nullable=False),
        sa.Column("memory_id", postgresql.UUID(as_uuid=False), nullable=False),
        sa.Column("namespace", sa.String(255), nullable=False),
        sa.Column("event", sa.String(16), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), server_default=sa.text("clock_timestamp()"), nullable=False),
    )
    op.create_index("ix_memory_changes_position", "memory_changes", ["txid", "seq"])
    op.create_table(
        "change_feed_horizon",
        sa.Column("id", sa.SmallInteger(), primary_key=True),
        sa.Column("txid", _Xid8(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("pruned_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.execute("INSERT INTO change_feed_horizon (id, txid, seq) VALUES (1, '0'::xid8, 0)")
    op.create_table(
        "change_feed_key",
        sa.Column("id", sa.SmallInteger(), primary_key=True),
        sa.Column("secret", sa.String(128), nullable=False),
    )
    # 256 bits for AES-SIV, from sha256 over two version-4 UUIDs (244 random bits; built in since PostgreSQL 13,
    # where pgcrypto's gen_random_bytes would need an extension), as 64 hex characters.
    op.execute(
        "INSERT INTO change_feed_key (id, secret) "
        "SELECT 1, encode(sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')), 'hex')"
    )
    op.execute(_TRIGGERS)


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS memories_changes_status ON memories")
    op.execute("DROP TRIGGER IF EXISTS memories_changes_inserted ON memories")
    op.execute("DROP FUNCTION IF EXISTS memhub_changes_status()")
    op.execute("DROP FUNCTION IF EXISTS memhub_changes_inserted()")
    op.drop_table("change_feed_key")
    op.drop_table("change_feed_horizon")
    op.drop_index("ix_memory_changes_position", table_name="memory_changes")
    op.drop_table("memory_changes")
