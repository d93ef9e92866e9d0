"""memories.version (issue 13, safe concurrent updates) and the indexes lineage walks (derivations of a memory)

A version goes up on every change of what a reader sees of a memory; triggers keep it, so every path that
updates memories (supersede, forget, confirm, expiry, archive, restore, quarantine release) counts without
each having to remember. A subject's memories take versions above every one the subject has had, so an
expected version never matches a memory the writer did not see (memhub/db/versions.py).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-03 09:00:00
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

# What a reader sees (the Memory message) minus recall and use statistics, which reads change: a search must
# never invalidate a writer's expectation. updated_at, entity_keys, write_pos and blind_write are bookkeeping.
# content is left out of the comparison on purpose: it only changes when a forget erases it, which changes
# status too, and comparing it would read (detoast) up to 16 KiB per row on every recall-count flush.
VISIBLE_COLUMNS = (
    "namespace, kind, type, content_hash, tags, entities, importance, confidence, occurred_at, valid_from, "
    "valid_to, expires_at, source_agent, source_session, source_trace, source_request_id, source_trace_from_caller, "
    "status, subject_key, supersedes, derived_from, superseded_by, seen_count, embedding_model, forgotten_at, "
    "forgotten_by, forget_reason, trust, flags"
)

_OLD = ", ".join(f"OLD.{c.strip()}" for c in VISIBLE_COLUMNS.split(","))
_NEW = ", ".join(f"NEW.{c.strip()}" for c in VISIBLE_COLUMNS.split(","))

_FUNCTIONS = f"""
CREATE FUNCTION memhub_subject_next_version(ns text, subject text) RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT coalesce(max(version), 0) + 1 FROM memories WHERE namespace = ns AND subject_key = subject
$$;

-- A new memory of a subject starts above every version the subject has had in its namespace: "version N of
-- this subject" then names one state, even after the memory holding it was forgotten and another written.
CREATE FUNCTION memhub_memories_version_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.version := greatest(NEW.version, memhub_subject_next_version(NEW.namespace, NEW.subject_key));
  RETURN NEW;
END $$;

-- One more per change; a subject's memory that becomes active again (a quarantined one released, an archived
-- one restored) also goes above the versions its subject took meanwhile.
CREATE FUNCTION memhub_memories_version_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.version := OLD.version + 1;
  IF NEW.subject_key IS NOT NULL AND NEW.status = 'active' AND OLD.status <> 'active' THEN
    NEW.version := greatest(NEW.version, memhub_subject_next_version(NEW.namespace, NEW.subject_key));
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER memories_version_insert BEFORE INSERT ON memories
  FOR EACH ROW WHEN (NEW.subject_key IS NOT NULL) EXECUTE FUNCTION memhub_memories_version_insert();
CREATE TRIGGER memories_version_update BEFORE UPDATE ON memories
  FOR EACH ROW WHEN (({_OLD}) IS DISTINCT FROM ({_NEW})) EXECUTE FUNCTION memhub_memories_version_update();
"""


def upgrade() -> None:
    op.add_column("memories", sa.Column("version", sa.BigInteger(), server_default="1", nullable=False))
    op.create_index(
        "ix_memories_subject", "memories", ["namespace", "subject_key"], postgresql_where=sa.text("subject_key IS NOT NULL")
    )
    op.create_index(
        "ix_memories_derived_from",
        "memories",
        ["derived_from"],
        postgresql_using="gin",
        postgresql_where=sa.text("cardinality(derived_from) > 0"),
    )
    # Existing subjects: their memories numbered in the order they were written, so versions grow along each
    # chain from the start (before the triggers exist: this is not a change anyone made).
    op.execute(
        "UPDATE memories m SET version = r.n FROM (SELECT id, row_number() OVER "
        "(PARTITION BY namespace, subject_key ORDER BY created_at, id) AS n FROM memories WHERE subject_key IS NOT NULL) r "
        "WHERE m.id = r.id AND r.n > 1"
    )
    op.execute(_FUNCTIONS)


def downgrade() -> None:
    op.execute("DROP TRIGGER IF EXISTS memories_version_update ON memories")
    op.execute("DROP TRIGGER IF EXISTS memories_version_insert ON memories")
    for function in (
        "memhub_memories_version_update()",
        "memhub_memories_version_insert()",
        "memhub_subject_next_version(text, text)",
    ):
        op.execute(f"DROP FUNCTION IF EXISTS {function}")
    op.drop_index("ix_memories_derived_from", table_name="memories")
    op.drop_index("ix_memories_subject", table_name="memories")
    op.drop_column("memories", "version")
