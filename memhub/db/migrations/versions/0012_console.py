"""web console (issue 14 part 1): the audit log is searchable by the hub's request id, so a memory's
provenance leads to the decisions of the call that wrote it

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02 12:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Partial: rows written before hub request ids existed (and aggregated entries) carry "".
    op.create_index(
        "ix_audit_log_hub_request",
        "audit_log",
        ["hub_request_id"],
        postgresql_where=sa.text("hub_request_id <> ''"),
    )


def downgrade() -> None:
    op.drop_index("ix_audit_log_hub_request", table_name="audit_log")
