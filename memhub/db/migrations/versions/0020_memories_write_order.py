"""servable memories in write order, for `memhub reindex`'s fill

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-06 18:30:00

The fill paged through the servable memories by id, a random order, and Milvus Lite 2.5.1 searched the collection
it built 20-50% slower than one the indexer filled in write order (docs/benchmarks.md, seventh round). It now
pages by (created_at, write_pos, id), the order the indexer writes in (memhub/core/index_rebuild.py); this index
keeps each page a range read at 1M memories. Partial on status only: servable_condition()'s expiry test reads
now(), which an index predicate cannot, and the fill filters expired rows from the range.
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_memories_write_order",
        "memories",
        ["created_at", "write_pos", "id"],
        postgresql_where=sa.text("status = 'active'"),
    )


def downgrade() -> None:
    op.drop_index("ix_memories_write_order", table_name="memories")
