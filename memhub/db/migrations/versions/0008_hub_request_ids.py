"""hub-generated request ids beside the caller-supplied trace id, in memories' provenance and the audit log

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 07:10:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Older rows keep "" and false: their trace ids are of unknown origin.
    op.add_column("memories", sa.Column("source_request_id", sa.String(36), server_default="", nullable=False))
    op.add_column(
        "memories", sa.Column("source_trace_from_caller", sa.Boolean(), server_default=sa.text("false"), nullable=False)
    )
    op.add_column("audit_log", sa.Column("hub_request_id", sa.String(36), server_default="", nullable=False))
    op.add_column("audit_log", sa.Column("trace_id_from_caller", sa.Boolean(), server_default=sa.text("false"), nullable=False))


def downgrade() -> None:
    op.drop_column("audit_log", "trace_id_from_caller")
    op.drop_column("audit_log", "hub_request_id")
    op.drop_column("memories", "source_trace_from_caller")
    op.drop_column("memories", "source_request_id")
