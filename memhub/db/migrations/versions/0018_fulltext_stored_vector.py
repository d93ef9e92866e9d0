"""full-text vector stored beside the content, for keyword search without parsing every matching row

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06 03:00:00

Keyword search in Postgres (memhub/db/fulltext.py: the keyword channel on a Milvus server without BM25, and the
fallback while the index is down) ranked with ts_rank_cd over to_tsvector(content), which Postgres computed
again for every matching row of every search: with a question's words OR-ed, hundreds of rows at 10k
memories, ~100 ms of Postgres CPU a search (bench_throughput --milvus-server). A generated column holds the
vector once; its partial GIN index replaces the expression index of 0003. Adding it rewrites the table once.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "memories",
        sa.Column(
            "content_tsv",
            postgresql.TSVECTOR(),
            sa.Computed("to_tsvector('english'::regconfig, content)", persisted=True),
        ),
    )
    op.create_index(
        "ix_memories_content_tsv",
        "memories",
        ["content_tsv"],
        postgresql_using="gin",
        postgresql_where=sa.text("status = 'active'"),
    )
    op.drop_index("ix_memories_fulltext", table_name="memories")


def downgrade() -> None:
    op.create_index(
        "ix_memories_fulltext",
        "memories",
        [sa.text("to_tsvector('english'::regconfig, content)")],
        postgresql_using="gin",
        postgresql_where=sa.text("status = 'active'"),
    )
    op.drop_index("ix_memories_content_tsv", table_name="memories")
    op.drop_column("memories", "content_tsv")
