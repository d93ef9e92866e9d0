"""Memories and what serves them: namespaces and their storage usage, the outbox, the index pointer, idempotency keys."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Computed,
    DateTime,
    Index,
    Integer,
    SmallInteger,
    String,
    Table,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, REAL, TSVECTOR, UUID

from memhub.db.tables import metadata

memories = Table(
    "memories",
    metadata,
    Column("id", UUID(as_uuid=False), primary_key=True),
    Column("namespace", String(255), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("type", String(16), nullable=False),
    Column("content", Text, nullable=False),
    Column("content_hash", String(64), nullable=False),
    Column("tags", ARRAY(Text), nullable=False, server_default="{}"),
    Column("entities", ARRAY(Text), nullable=False, server_default="{}"),
    Column("importance", SmallInteger, nullable=False),
    Column("confidence", REAL, nullable=False),
    Column("occurred_at", DateTime(timezone=True), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("valid_from", DateTime(timezone=True)),
    Column("valid_to", DateTime(timezone=True)),
    Column("expires_at", DateTime(timezone=True)),
    Column("source_agent", String(255), nullable=False),
    Column("source_session", String(128), nullable=False, server_default=""),
    Column("source_trace", String(32), nullable=False, server_default=""),
    # The hub's own id of the write call (memhub/api/provenance.py): unlike the trace id, no caller chooses it.
    Column("source_request_id", String(36), nullable=False, server_default=""),
    # True when source_trace came from the caller's traceparent header (its choice, not the hub's).
    Column("source_trace_from_caller", Boolean, nullable=False, server_default=text("false")),
    Column("status", String(16), nullable=False),
    Column("subject_key", String(128)),
    Column("supersedes", ARRAY(UUID(as_uuid=False)), nullable=False, server_default="{}"),
    Column("derived_from", ARRAY(UUID(as_uuid=False)), nullable=False, server_default="{}"),
    Column("superseded_by", UUID(as_uuid=False)),
    Column("recall_count", BigInteger, nullable=False, server_default="0"),
    # Writes of this memory: 1, plus one per exact or near duplicate that was folded into it (migration 0009).
    Column("seen_count", BigInteger, nullable=False, server_default="1"),
    Column("last_recalled_at", DateTime(timezone=True)),
    # Marked used by agents (MarkUsed), and how many of those marks said "not useful"; migration 0010.
    # Beside recall_count so ranking reads both from the row it already hydrates; incremented in
    # background batches (memhub/core/recall_stats.py), never on a request's path.
    Column("use_count", BigInteger, nullable=False, server_default="0"),
    Column("not_useful_count", BigInteger, nullable=False, server_default="0"),
    Column("last_used_at", DateTime(timezone=True)),
    Column("embedding_model", String(128), nullable=False),
    Column("forgotten_at", DateTime(timezone=True)),
    Column("forgotten_by", String(255)),
    Column("forget_reason", Text),
    # Position of the memory in its write request: with occurred_at and created_at (the
    # transaction's time) it orders a session's turns, which sorted inserts would not.
    Column("write_pos", SmallInteger, nullable=False, server_default="0"),
    # Entity keys for the entity channel: the writer's entities and those found in the
    # content, normalised (memhub/recall/entities.py). ``entities`` keeps what the writer gave.
    Column("entity_keys", ARRAY(Text), nullable=False, server_default="{}"),
    # The writer's trust level (verified | agent | external) from its token, and what screening
    # flagged in the content (e.g. {instruction_like}); migration 0006, memhub/core/screening.py.
    Column("trust", String(16), nullable=False, server_default="agent"),
    Column("flags", ARRAY(Text), nullable=False, server_default="{}"),
    # Written by an agent that could write the namespace but not read it (an inbox, a report drop).
    # Such a memory is never deduplicated against, nor deduplicated into, what is already stored:
    # answering "already there" would tell the writer what the namespace holds (memhub/service/write.py).
    Column("blind_write", Boolean, nullable=False, server_default=text("false")),
    # Goes up on every change a reader can see (not recall or use counts); kept by triggers (migration 0013),
    # a subject's memories numbered above every version the subject has had (memhub/db/versions.py).
    Column("version", BigInteger, nullable=False, server_default="1"),
    # The content's English full-text vector, kept by Postgres (migration 0018) for keyword search where Milvus
    # has none (memhub/db/fulltext.py). Stored, because ranking with ts_rank_cd otherwise parses the content of
    # every matching row at every search: ~100 ms of Postgres CPU a search at 10k memories. Never read back:
    # MEMORY_COLUMNS below leaves it out of what hydrates a memory.
    Column("content_tsv", TSVECTOR, Computed("to_tsvector('english'::regconfig, content)", persisted=True)),
    # Newest-first listing within a namespace, keyset-paged on (created_at, id).
    Index("ix_memories_ns_created", "namespace", text("created_at DESC"), text("id DESC")),
    # One active copy of a content per namespace: the database enforces dedup, so two
    # concurrent writers of the same text cannot both win. Blind writes stand apart (above).
    Index(
        "ux_memories_active_hash",
        "namespace",
        "content_hash",
        unique=True,
        postgresql_where=text("status = 'active' AND NOT blind_write"),
    ),
    # At most one active semantic memory per subject key in a namespace.
    Index(
        "ux_memories_active_subject",
        "namespace",
        "subject_key",
        unique=True,
        postgresql_where=text("status = 'active' AND subject_key IS NOT NULL"),
    ),
    Index("ix_memories_tags", "tags", postgresql_using="gin"),
    # Keyword search while the Milvus index is down (memhub/db/fulltext.py).
    Index("ix_memories_content_tsv", "content_tsv", postgresql_using="gin", postgresql_where=text("status = 'active'")),
    # A session's turns in order, for the keyword context of episodic memories (memhub/db/context.py).
    Index(
        "ix_memories_session_order",
        "namespace",
        "source_session",
        "occurred_at",
        "created_at",
        "write_pos",
        "id",
        postgresql_where=text("status = 'active' AND kind = 'episodic' AND source_session <> ''"),
    ),
    Index("ix_memories_entity_keys", "entity_keys", postgresql_using="gin", postgresql_where=text("status = 'active'")),
    # Servable memories in write order, keyset-paged by `memhub reindex`'s fill (memhub/core/index_rebuild.py);
    # the expiry half of servable_condition() reads now(), which an index predicate cannot (migration 0020).
    Index("ix_memories_write_order", "created_at", "write_pos", "id", postgresql_where=text("status = 'active'")),
    Index("ix_memories_expiry", "expires_at", postgresql_where=text("status = 'active' AND expires_at IS NOT NULL")),
    # What waits for an admin's release, per namespace, oldest first.
    Index("ix_memories_quarantined", "namespace", "created_at", postgresql_where=text("status = 'quarantined'")),
    # A subject's versions in any status: its next version (migration 0013) and its history.
    Index("ix_memories_subject", "namespace", "subject_key", postgresql_where=text("subject_key IS NOT NULL")),
    # What was derived from a memory (GetMemoryLineage); most memories cite nothing and stay out of it.
    Index(
        "ix_memories_derived_from",
        "derived_from",
        postgresql_using="gin",
        postgresql_where=text("cardinality(derived_from) > 0"),
    ),
)

# What a memory is read back with: every column but the full-text vector (a derived copy of the content, as
# large as it, that no reader needs). Selects and RETURNING clauses of whole memories use this.
MEMORY_COLUMNS = [c for c in memories.c if c.name != "content_tsv"]

namespaces = Table(
    "namespaces",
    metadata,
    Column("name", String(255), primary_key=True),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # The agent whose write created it, set by the memories insert trigger (migration 0005), which also
    # enforces the per-agent namespace quota; '' for namespaces made before creators were recorded.
    Column("created_by", String(255)),
    Index("ix_namespaces_created_by", "created_by"),
    # Prefix lookups (name LIKE 'a/b/%') use an index whatever the database's collation.
    Index("ix_namespaces_name_pattern", "name", postgresql_ops={"name": "varchar_pattern_ops"}),
)

# Stored (not forgotten) memories and their content bytes per namespace, for the storage quotas. Triggers
# on memories append a delta per statement and namespace (no shared counter row for writers to wait on);
# the hub folds deltas into namespace_usage in the background (memhub/db/namespace_usage.py).
namespace_usage = Table(
    "namespace_usage",
    metadata,
    Column("name", String(255), primary_key=True),
    Column("memories", BigInteger, nullable=False, server_default="0"),
    Column("bytes", BigInteger, nullable=False, server_default="0"),
)

namespace_usage_delta = Table(
    "namespace_usage_delta",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("name", String(255), nullable=False),
    Column("memories", BigInteger, nullable=False),
    Column("bytes", BigInteger, nullable=False),
    Index("ix_namespace_usage_delta_name", "name"),
)

outbox = Table(
    "outbox",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("memory_id", UUID(as_uuid=False), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("available_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("last_error", Text),
    # Queued only because a neighbour's change altered this memory's keyword context:
    # indexing it must not queue its own neighbours in turn (memhub/db/context.py).
    Column("context_only", Boolean, nullable=False, server_default=text("false")),
    Index("ix_outbox_available", "available_at", "id"),
    Index("ix_outbox_memory", "memory_id"),
)

idempotency = Table(
    "idempotency_keys",
    metadata,
    Column("agent_id", String(255), primary_key=True),
    Column("request_id", String(128), primary_key=True),
    Column("operation", String(32), nullable=False),
    # sha256 of the request as received, so a reused id with a different body is refused.
    Column("request_hash", String(64), nullable=False),
    Column("response", JSONB, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

# Which Milvus collection serves each configured collection name (memhub/core/index_pointer.py): `memhub reindex`
# builds a new one beside the live one and switches this row; every replica follows it. No row: the name itself.
index_collections = Table(
    "index_collections",
    metadata,
    Column("name", String(255), primary_key=True),
    Column("collection", String(255), nullable=False),
    Column("switched_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)
