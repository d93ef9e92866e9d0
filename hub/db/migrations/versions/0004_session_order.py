"""a session's turns in order, for contextual keyword indexing

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 02:00:00
"""

import sqlalchemy as sa
from alembic import op

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


def downgrade() -> None:
    op.drop_column("outbox", "context_only")
    op.drop_index("ix_memories_session_order", table_name="memories")
    op.drop_column("memories", "write_pos")
