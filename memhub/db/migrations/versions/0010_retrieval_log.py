"""retrieval log and use counts (issue 12 part 5): every search's query hash or text, caller, namespaces and
hits; agents' MarkUsed marks; use counters on memories beside recall_count; the key of the query hashes

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 12:00:00
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("memories", sa.Column("use_count", sa.BigInteger(), server_default="0", nullable=False))
    op.add_column("memories", sa.Column("not_useful_count", sa.BigInteger(), server_default="0", nullable=False))
    op.add_column("memories", sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "retrieval_log",
        sa.Column("search_id", postgresql.UUID(as_uuid=False), primary_key=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("agent_id", sa.String(255), nullable=False),
        sa.Column("rpc", sa.String(64), server_default="", nullable=False),
        sa.Column("query_hash", sa.String(64), server_default="", nullable=False),
        sa.Column("query_text", sa.Text(), nullable=True),
        sa.Column("namespaces", postgresql.ARRAY(sa.Text()), server_default="{}", nullable=False),
        sa.Column("namespace_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("hit_ids", postgresql.ARRAY(postgresql.UUID(as_uuid=False)), server_default="{}", nullable=False),
        sa.Column("hit_scores", postgresql.ARRAY(postgresql.REAL()), server_default="{}", nullable=False),
        sa.Column("hit_relevance", postgresql.ARRAY(postgresql.REAL()), server_default="{}", nullable=False),
        sa.Column("trace_id", sa.String(32), server_default="", nullable=False),
        sa.Column("hub_request_id", sa.String(36), server_default="", nullable=False),
    )
    op.create_index("ix_retrieval_log_agent_at", "retrieval_log", ["agent_id", sa.text("at DESC"), sa.text("search_id DESC")])
    op.create_index("ix_retrieval_log_at", "retrieval_log", [sa.text("at DESC"), sa.text("search_id DESC")])
    op.create_table(
        "retrieval_use",
        sa.Column("id", sa.BigInteger(), primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("agent_id", sa.String(255), nullable=False),
        sa.Column("search_id", postgresql.UUID(as_uuid=False), nullable=True),
        sa.Column("memory_id", postgresql.UUID(as_uuid=False), nullable=False),
        sa.Column("useful", sa.Boolean(), nullable=True),
    )
    op.create_index(
        "ux_retrieval_use_search",
        "retrieval_use",
        ["agent_id", "search_id", "memory_id"],
        unique=True,
        postgresql_where=sa.text("search_id IS NOT NULL"),
    )
    op.create_index("ix_retrieval_use_at", "retrieval_use", ["at"])
    op.create_table(
        "retrieval_log_key",
        sa.Column("id", sa.SmallInteger(), primary_key=True),
        sa.Column("secret", sa.String(128), nullable=False),
    )
    # 244 random bits from two version-4 UUIDs (gen_random_uuid is built in since PostgreSQL 13; pgcrypto's
    # gen_random_bytes would need an extension), hashed to 64 hex characters.
    op.execute(
        "INSERT INTO retrieval_log_key (id, secret) "
        "SELECT 1, encode(sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text, 'UTF8')), 'hex')"
    )


def downgrade() -> None:
    op.drop_table("retrieval_log_key")
    op.drop_table("retrieval_use")
    op.drop_table("retrieval_log")
    op.drop_column("memories", "last_used_at")
    op.drop_column("memories", "not_useful_count")
    op.drop_column("memories", "use_count")
