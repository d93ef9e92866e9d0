"""full-text index for searches while the retrieval index is down

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 23:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_memories_fulltext",
        "memories",
        [sa.text("to_tsvector('english'::regconfig, content)")],
        unique=False,
        postgresql_using="gin",
        postgresql_where=sa.text("status = 'active'"),
    )


def downgrade() -> None:
    op.drop_index("ix_memories_fulltext", table_name="memories")
