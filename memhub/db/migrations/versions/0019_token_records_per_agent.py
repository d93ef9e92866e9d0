"""token records: an index by agent, for counting one agent's share and listing its tokens

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06 06:30:00

Token records were bounded only in all (100k rows): one agent whose issuer mints a token per call could fill
the table and keep every other agent's new tokens off the list. Each agent now has a share
(memhub/auth/token_records.py MAX_PER_AGENT), counted per flush through this index, which also serves the
token list filtered by agent, newest first.
"""

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_token_records_agent", "token_records", ["agent_id", "recorded_at", "token_id"])


def downgrade() -> None:
    op.drop_index("ix_token_records_agent", table_name="token_records")
