"""token records (issue 24): the tokens the hub issued or accepted, for the console's Tokens page

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-05 23:30:00

`AdminService.IssueToken` records the tokens it signs; the verifier records, in batches, the ids of the
tokens it accepts (first and last use), so tokens signed by `memhub token issue` or an external issuer are
listed too. The token text is never stored.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "token_records",
        sa.Column("token_id", sa.String(128), primary_key=True),
        sa.Column("agent_id", sa.String(255), nullable=False),
        sa.Column("groups", postgresql.ARRAY(sa.Text()), nullable=False, server_default="{}"),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
        sa.Column("issued_at", sa.DateTime(timezone=True)),
        sa.Column("issued_by", sa.String(255), nullable=False, server_default=""),
        sa.Column("note", sa.Text(), nullable=False, server_default=""),
        sa.Column("first_used_at", sa.DateTime(timezone=True)),
        sa.Column("last_used_at", sa.DateTime(timezone=True)),
    )
    op.create_index("ix_token_records_recorded", "token_records", ["recorded_at", "token_id"])
    op.create_index("ix_token_records_expires", "token_records", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_token_records_expires", table_name="token_records")
    op.drop_index("ix_token_records_recorded", table_name="token_records")
    op.drop_table("token_records")
