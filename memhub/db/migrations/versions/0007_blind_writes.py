"""blind writes: memories written by agents that may not read their namespace are never deduplicated

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 07:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("memories", sa.Column("blind_write", sa.Boolean(), server_default=sa.text("false"), nullable=False))
    # The unique index that enforces dedup leaves blind writes out: two copies of one text may then be
    # active in a namespace, one of them written blind. Rebuilt rather than altered (Postgres cannot
    # change an index's predicate); existing rows are all non-blind, so the rebuild cannot fail.
    op.drop_index("ux_memories_active_hash", table_name="memories")
    op.create_index(
        "ux_memories_active_hash",
        "memories",
        ["namespace", "content_hash"],
        unique=True,
        postgresql_where=sa.text("status = 'active' AND NOT blind_write"),
    )


def downgrade() -> None:
    # An active blind copy of a text that is also stored non-blind collides with the old index: the
    # CREATE then fails and the downgrade stops, rather than choosing which copy to drop.
    op.drop_index("ux_memories_active_hash", table_name="memories")
    op.create_index(
        "ux_memories_active_hash",
        "memories",
        ["namespace", "content_hash"],
        unique=True,
        postgresql_where=sa.text("status = 'active'"),
    )
    op.drop_column("memories", "blind_write")
