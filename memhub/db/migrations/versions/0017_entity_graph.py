"""entity graph (issue 25): one edge per (memory, entity key), kept by triggers, for the graph channel

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-03 23:30:00

The edges mirror memories.entity_keys: a statement-level trigger adds those of every inserted memory, a row
trigger follows a change of the keys (forgetting empties them), both inside the changing transaction. Existing
memories get their edges here, in one statement.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

_TRIGGERS = r"""
CREATE FUNCTION memhub_entity_edges_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO entity_edges (namespace, entity_key, memory_id)
  SELECT DISTINCT n.namespace, k.key, n.id FROM new_rows n CROSS JOIN LATERAL unnest(n.entity_keys) AS k(key)
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;

CREATE FUNCTION memhub_entity_edges_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM entity_edges
   WHERE namespace = OLD.namespace AND memory_id = OLD.id AND NOT (entity_key = ANY(NEW.entity_keys));
  INSERT INTO entity_edges (namespace, entity_key, memory_id)
  SELECT DISTINCT NEW.namespace, k.key, NEW.id FROM unnest(NEW.entity_keys) AS k(key)
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;

CREATE TRIGGER memories_entity_edges_inserted AFTER INSERT ON memories
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memhub_entity_edges_inserted();
CREATE TRIGGER memories_entity_edges_changed AFTER UPDATE OF entity_keys ON memories
  FOR EACH ROW WHEN (OLD.entity_keys IS DISTINCT FROM NEW.entity_keys) EXECUTE FUNCTION memhub_entity_edges_changed();
"""


def upgrade() -> None:
    op.create_table(
        "entity_edges",
        sa.Column("namespace", sa.String(255), nullable=False),
        sa.Column("entity_key", sa.Text(), nullable=False),
        sa.Column("memory_id", postgresql.UUID(as_uuid=False), nullable=False),
        sa.PrimaryKeyConstraint("namespace", "entity_key", "memory_id", name="pk_entity_edges"),
    )
    op.create_index("ix_entity_edges_memory", "entity_edges", ["memory_id"])
    op.execute(
        "INSERT INTO entity_edges (namespace, entity_key, memory_id) "
        "SELECT DISTINCT m.namespace, k.key, m.id FROM memories m CROSS JOIN LATERAL unnest(m.entity_keys) AS k(key) "
        "ON CONFLICT DO NOTHING"
    )
    op.execute(_TRIGGERS)


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS memories_entity_edges_changed ON memories")
    op.execute("DROP TRIGGER IF EXISTS memories_entity_edges_inserted ON memories")
    op.execute("DROP FUNCTION IF EXISTS memhub_entity_edges_changed()")
    op.execute("DROP FUNCTION IF EXISTS memhub_entity_edges_inserted()")
    op.drop_table("entity_edges")
