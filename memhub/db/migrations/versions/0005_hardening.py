"""hardening (issue 10): audit details, namespace creators, storage use per namespace, quota triggers

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 06:00:00

- audit_log.detail: what a row aggregates or counts.
- namespaces.created_by: the agent whose write created the namespace ('' for
  namespaces older than this revision: their creator is unknown and they
  count against nobody's quota); an index for counting an agent's
  namespaces, and a pattern index so prefix (LIKE 'a/b/%') lookups of
  namespaces use an index whatever the database's collation.
- namespace_usage (+ namespace_usage_delta): stored memories and content
  bytes per namespace. Triggers on memories append deltas (one row per
  statement and namespace, so concurrent writers never wait on a shared
  counter row); the hub folds them into namespace_usage in the background
  (memhub/db/namespace_usage.py).
- The quotas, enforced by the insert trigger inside the writing transaction
  (after the hub checked the write permission, so a refusal tells nothing to
  a caller that may not write there), with limits each hub sets as session
  settings on its connections (memhub/db/namespace_usage.py): unset means no
  quota, so tools and migrations are never refused.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# Statement-level triggers with transition tables: one delta row per statement and namespace.
_FUNCTIONS = r"""
CREATE FUNCTION memhub_memories_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  namespaces_quota bigint := nullif(current_setting('memhub.namespaces_per_agent', true), '')::bigint;
  max_memories bigint := nullif(current_setting('memhub.namespace_max_memories', true), '')::bigint;
  max_bytes bigint := nullif(current_setting('memhub.namespace_max_bytes', true), '')::bigint;
  creator text;
  created bigint;
  over record;
BEGIN
  -- The writer of a new namespace's first memory created it (insert_memories adds the row just before).
  FOR creator IN
    WITH claimed AS (
      UPDATE namespaces n SET created_by = w.source_agent
      FROM (SELECT DISTINCT namespace, source_agent FROM new_rows) w
      WHERE n.name = w.namespace AND n.created_by IS NULL
      RETURNING n.created_by
    )
    SELECT DISTINCT created_by FROM claimed
  LOOP
    IF namespaces_quota > 0 THEN
      -- One agent's namespace-creating writes take turns here, so the count is exact.
      PERFORM pg_advisory_xact_lock(hashtextextended('memhub.namespaces:' || creator, 0));
      SELECT count(*) INTO created FROM namespaces WHERE created_by = creator;
      IF created > namespaces_quota THEN
        RAISE EXCEPTION USING ERRCODE = 'MHQ02', MESSAGE = format(
          'namespace quota: an agent may create at most %s namespaces; write into namespaces that exist, '
          'or ask an operator to raise MEMHUB_NAMESPACES_PER_AGENT', namespaces_quota);
      END IF;
    END IF;
  END LOOP;

  INSERT INTO namespace_usage_delta (name, memories, bytes)
  SELECT namespace, count(*), coalesce(sum(octet_length(content)), 0)
  FROM new_rows WHERE status <> 'forgotten' GROUP BY namespace;

  IF coalesce(max_memories, 0) > 0 OR coalesce(max_bytes, 0) > 0 THEN
    SELECT t.name, coalesce(b.memories, 0) + coalesce(d.memories, 0) AS memories,
           coalesce(b.bytes, 0) + coalesce(d.bytes, 0) AS bytes
    INTO over
    FROM (SELECT DISTINCT namespace AS name FROM new_rows) t
    LEFT JOIN namespace_usage b ON b.name = t.name
    LEFT JOIN LATERAL (
      SELECT sum(x.memories) AS memories, sum(x.bytes) AS bytes FROM namespace_usage_delta x WHERE x.name = t.name
    ) d ON true
    WHERE (max_memories > 0 AND coalesce(b.memories, 0) + coalesce(d.memories, 0) > max_memories)
       OR (max_bytes > 0 AND coalesce(b.bytes, 0) + coalesce(d.bytes, 0) > max_bytes)
    LIMIT 1;
    IF FOUND THEN
      IF max_memories > 0 AND over.memories > max_memories THEN
        RAISE EXCEPTION USING ERRCODE = 'MHQ01', MESSAGE = format(
          'storage quota: namespace %L may hold at most %s memories; forget some of its memories, '
          'or ask an operator to raise MEMHUB_NAMESPACE_MAX_MEMORIES', over.name, max_memories);
      END IF;
      RAISE EXCEPTION USING ERRCODE = 'MHQ01', MESSAGE = format(
        'storage quota: namespace %L may hold at most %s bytes of content; forget some of its memories, '
        'or ask an operator to raise MEMHUB_NAMESPACE_MAX_BYTES', over.name, max_bytes);
    END IF;
  END IF;
  RETURN NULL;
END $$;

CREATE FUNCTION memhub_memories_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Forgetting erases content: a forgotten memory no longer counts. Status changes of stored ones cancel out.
  INSERT INTO namespace_usage_delta (name, memories, bytes)
  SELECT name, sum(m), sum(b) FROM (
    SELECT namespace AS name, 1 AS m, octet_length(content)::bigint AS b FROM new_rows WHERE status <> 'forgotten'
    UNION ALL
    SELECT namespace, -1, -octet_length(content)::bigint FROM old_rows WHERE status <> 'forgotten'
  ) c
  GROUP BY name HAVING sum(m) <> 0 OR sum(b) <> 0;
  RETURN NULL;
END $$;

CREATE FUNCTION memhub_memories_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO namespace_usage_delta (name, memories, bytes)
  SELECT namespace, -count(*), -coalesce(sum(octet_length(content)), 0)
  FROM old_rows WHERE status <> 'forgotten' GROUP BY namespace;
  RETURN NULL;
END $$;

CREATE TRIGGER memories_inserted AFTER INSERT ON memories
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memhub_memories_inserted();
CREATE TRIGGER memories_updated AFTER UPDATE ON memories
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION memhub_memories_updated();
CREATE TRIGGER memories_deleted AFTER DELETE ON memories
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION memhub_memories_deleted();
"""


def upgrade() -> None:
    op.add_column("audit_log", sa.Column("detail", postgresql.JSONB(astext_type=sa.Text()), server_default="{}", nullable=False))
    op.add_column("namespaces", sa.Column("created_by", sa.String(length=255), nullable=True))
    op.execute("UPDATE namespaces SET created_by = ''")
    op.create_index("ix_namespaces_created_by", "namespaces", ["created_by"], unique=False)
    op.create_index(
        "ix_namespaces_name_pattern", "namespaces", ["name"], unique=False, postgresql_ops={"name": "varchar_pattern_ops"}
    )
    op.create_table(
        "namespace_usage",
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("memories", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("bytes", sa.BigInteger(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "namespace_usage_delta",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("memories", sa.BigInteger(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_namespace_usage_delta_name", "namespace_usage_delta", ["name"], unique=False)
    op.execute(
        "INSERT INTO namespace_usage (name, memories, bytes) "
        "SELECT namespace, count(*), coalesce(sum(octet_length(content)), 0) FROM memories "
        "WHERE status <> 'forgotten' GROUP BY namespace"
    )
    op.execute(_FUNCTIONS)


def downgrade() -> None:
    for trigger in ("memories_inserted", "memories_updated", "memories_deleted"):
        op.execute(f"DROP TRIGGER IF EXISTS {trigger} ON memories")
    for function in ("memhub_memories_inserted", "memhub_memories_updated", "memhub_memories_deleted"):
        op.execute(f"DROP FUNCTION IF EXISTS {function}()")
    op.drop_index("ix_namespace_usage_delta_name", table_name="namespace_usage_delta")
    op.drop_table("namespace_usage_delta")
    op.drop_table("namespace_usage")
    op.drop_index("ix_namespaces_name_pattern", table_name="namespaces")
    op.drop_index("ix_namespaces_created_by", table_name="namespaces")
    op.drop_column("namespaces", "created_by")
    op.drop_column("audit_log", "detail")
