"""hardening (issue 10): audit details

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 06:00:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # What a row aggregates or counts (repeated authentication failures, a search's namespace counts).
    op.add_column("audit_log", sa.Column("detail", postgresql.JSONB(astext_type=sa.Text()), server_default="{}", nullable=False))


def downgrade() -> None:
    op.drop_column("audit_log", "detail")
