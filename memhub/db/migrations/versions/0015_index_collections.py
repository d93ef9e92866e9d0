"""index collections (issue 22): which Milvus collection serves a configured collection name

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02 20:00:00

`memhub reindex` builds the new index in a collection of its own beside the live one and then
switches this pointer; every hub replica follows it (memhub/core/index_pointer.py). Milvus aliases would
do the same on a server, but Milvus Lite 2.5 does not implement them (CreateAlias: UNIMPLEMENTED).
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "index_collections",
        sa.Column("name", sa.String(255), primary_key=True),
        sa.Column("collection", sa.String(255), nullable=False),
        sa.Column("switched_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    )


def downgrade() -> None:
    op.drop_table("index_collections")
