"""a session's turns in order (contextual keyword indexing) and entity keys (the entity channel)

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 02:00:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from memhub.recall.entities import keys_for

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Existing rows get position 0: their order within one write is lost, ties fall to created_at.
    op.add_column("memories", sa.Column("write_pos", sa.SmallInteger(), server_default="0", nullable=False))
    op.create_index(
        "ix_memories_session_order",
        "memories",
        ["namespace", "source_session", "occurred_at", "created_at", "write_pos", "id"],
        unique=False,
        postgresql_where=sa.text("status = 'active' AND kind = 'episodic' AND source_session <> ''"),
    )
    op.add_column("outbox", sa.Column("context_only", sa.Boolean(), server_default=sa.text("false"), nullable=False))
    op.add_column("memories", sa.Column("entity_keys", postgresql.ARRAY(sa.Text()), server_default="{}", nullable=False))
    _backfill_entity_keys()
    op.create_index(
        "ix_memories_entity_keys",
        "memories",
        ["entity_keys"],
        unique=False,
        postgresql_using="gin",
        postgresql_where=sa.text("status = 'active'"),
    )


def _backfill_entity_keys() -> None:
    """Existing memories get the keys a new write would get (the same rules, memhub/recall/entities.py)."""
    conn = op.get_bind()
    last = ""
    while True:
        rows = conn.execute(
            sa.text(
                "SELECT id::text, content, entities FROM memories WHERE status = 'active' AND id::text > :last "
                "ORDER BY id::text LIMIT 1000"
            ),
            {"last": last},
        ).all()
        if not rows:
            return
        conn.execute(
            sa.text("UPDATE memories SET entity_keys = :keys WHERE id = CAST(:id AS uuid)"),
            [{"id": r[0], "keys": keys_for(r[1], r[2])} for r in rows],
        )
        last = rows[-1][0]


def downgrade() -> None:
    op.drop_index("ix_memories_entity_keys", table_name="memories")
    op.drop_column("memories", "entity_keys")
    op.drop_column("outbox", "context_only")
    op.drop_index("ix_memories_session_order", table_name="memories")
    op.drop_column("memories", "write_pos")
