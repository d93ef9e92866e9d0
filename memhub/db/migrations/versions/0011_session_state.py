"""shared session state (issue 13 part 3): the blackboard's sessions and entries, UNLOGGED, and the sequence
their versions come from

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 09:00:00

Both tables are UNLOGGED: a crash of the Postgres server empties them (a
clean restart keeps them) and standbys do not receive them; see
memhub/db/schema.py for why that is the right trade for working state. The
version sequence is an ordinary (logged) one, so versions never repeat,
even after a crash emptied the tables: a compare-and-set holding a version
read before the crash can never match a new entry.
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "session_state_sessions",
        sa.Column("namespace", sa.String(255), primary_key=True),
        sa.Column("session_id", sa.String(128, collation="C"), primary_key=True),
        sa.Column("created_by", sa.String(255), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        prefixes=["UNLOGGED"],
    )
    op.create_index("ix_session_state_sessions_ns_expires", "session_state_sessions", ["namespace", "expires_at"])
    op.create_index("ix_session_state_sessions_creator", "session_state_sessions", ["created_by", "expires_at"])
    op.create_index("ix_session_state_sessions_expires", "session_state_sessions", ["expires_at"])
    op.create_table(
        "session_state",
        sa.Column("namespace", sa.String(255), primary_key=True),
        sa.Column("session_id", sa.String(128, collation="C"), primary_key=True),
        sa.Column("key", sa.String(128, collation="C"), primary_key=True),
        sa.Column("value", sa.Text(), nullable=False),
        sa.Column("value_bytes", sa.Integer(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_by", sa.String(255), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("request_id", sa.String(128), server_default="", nullable=False),
        prefixes=["UNLOGGED"],
    )
    op.create_index("ix_session_state_expires", "session_state", ["expires_at"])
    op.execute("CREATE SEQUENCE session_state_version_seq")


def downgrade() -> None:
    op.execute("DROP SEQUENCE session_state_version_seq")
    op.drop_table("session_state")
    op.drop_table("session_state_sessions")
