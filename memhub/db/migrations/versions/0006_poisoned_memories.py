"""poisoned memories (issue 10 item 17): the writer's trust level, content flags, quarantine

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02 09:00:00

- memories.trust: the writer's trust level (verified | agent | external)
  from its token. Rows written before this revision read as 'agent', the
  level every token had until then.
- memories.flags: what screening found in the content on write (e.g.
  {instruction_like}); empty for older rows (they were never screened).
- status 'quarantined' (no schema change: status is text) and a partial
  index listing what waits for an admin's release per namespace.

Self-contained on purpose: it only adds columns and an index, so landing
after other revisions needs nothing but a new down_revision.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("memories", sa.Column("trust", sa.String(length=16), server_default="agent", nullable=False))
    op.add_column("memories", sa.Column("flags", postgresql.ARRAY(sa.Text()), server_default="{}", nullable=False))
    op.create_index(
        "ix_memories_quarantined",
        "memories",
        ["namespace", "created_at"],
        unique=False,
        postgresql_where=sa.text("status = 'quarantined'"),
    )


def downgrade() -> None:
    # Quarantined memories would turn servable without their status: make them forgotten-like tombstones first.
    op.execute(
        "UPDATE memories SET status = 'forgotten', content = '', forgotten_at = now(), forgotten_by = 'migration-0006', "
        "forget_reason = 'quarantined when migration 0006 was downgraded' WHERE status = 'quarantined'"
    )
    op.drop_index("ix_memories_quarantined", table_name="memories")
    op.drop_column("memories", "flags")
    op.drop_column("memories", "trust")
