"""memories.seen_count: how many times a memory was written (first write, then each exact or near duplicate)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 01:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Existing memories were seen once as far as anyone knows.
    op.add_column("memories", sa.Column("seen_count", sa.BigInteger(), server_default="1", nullable=False))


def downgrade() -> None:
    op.drop_column("memories", "seen_count")
