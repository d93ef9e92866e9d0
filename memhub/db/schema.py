"""Table definitions (SQLAlchemy Core). Migrations in memhub/db/migrations must match.

Why Core and not the ORM: every query here is a handful of columns in a hot
path; explicit SQL keeps locks (FOR UPDATE SKIP LOCKED, FOR SHARE) and
conflict handling (ON CONFLICT) visible.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    Sequence,
    SmallInteger,
    String,
    Table,
    Text,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, REAL, UUID
from sqlalchemy.dialects.postgresql import base as postgresql_base
from sqlalchemy.types import UserDefinedType

metadata = MetaData()

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
    # answering "already there" would tell the writer what the namespace holds (memhub/core/service.py).
    Column("blind_write", Boolean, nullable=False, server_default=text("false")),
    # Goes up on every change a reader can see (not recall or use counts); kept by triggers (migration 0013),
    # a subject's memories numbered above every version the subject has had (memhub/db/versions.py).
    Column("version", BigInteger, nullable=False, server_default="1"),
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
    Index(
        "ix_memories_fulltext",
        text("to_tsvector('english'::regconfig, content)"),
        postgresql_using="gin",
        postgresql_where=text("status = 'active'"),
    ),
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

# Revoked token ids. Every replica keeps the unexpired ones in memory and
# refreshes them every few seconds (and on NOTIFY memhub_revocations).
revoked_tokens = Table(
    "revoked_tokens",
    metadata,
    Column("jti", String(128), primary_key=True),
    Column("agent_id", String(255), nullable=False, server_default=""),
    # After the token's own expiry the row is no longer needed (the token is refused anyway).
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Column("revoked_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("revoked_by", String(255), nullable=False),
    Column("reason", Text, nullable=False, server_default=""),
    Index("ix_revoked_tokens_expires", "expires_at"),
)

# Every access decision, allowed and denied.
audit_log = Table(
    "audit_log",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("agent_id", String(255), nullable=False),
    Column("groups", ARRAY(Text), nullable=False, server_default="{}"),
    Column("action", String(32), nullable=False),
    # A namespace path, or "" for hub-wide actions (admin).
    Column("namespace", String(255), nullable=False),
    Column("decision", String(8), nullable=False),
    Column("policy_ids", ARRAY(Text), nullable=False, server_default="{}"),
    Column("policy_version", String(64), nullable=False, server_default=""),
    Column("rpc", String(64), nullable=False, server_default=""),
    # The caller's idempotency key (WriteMemories/ForgetMemories request_id): its choice.
    Column("request_id", String(128), nullable=False, server_default=""),
    Column("trace_id", String(32), nullable=False, server_default=""),
    # What the row aggregates or counts, e.g. {"reason": "bad-signature", "source": "10.0.0.7", "count": 37}
    # for repeated authentication failures, {"namespaces": 12} for a search's one read decision.
    Column("detail", JSONB, nullable=False, server_default="{}"),
    # The hub's id of the call, one per RPC: joins the decisions of one request, its memories and its spans.
    Column("hub_request_id", String(36), nullable=False, server_default=""),
    Column("trace_id_from_caller", Boolean, nullable=False, server_default=text("false")),
    Index("ix_audit_log_at", "at"),
    Index("ix_audit_log_agent_at", "agent_id", "at"),
    Index("ix_audit_log_namespace_at", "namespace", "at"),
    # The decisions of one call (QueryAuditLog hub_request_id; migration 0011).
    Index("ix_audit_log_hub_request", "hub_request_id", postgresql_where=text("hub_request_id <> ''")),
)

# Every search: who asked, the query (as a keyed hash, its text, or nothing: MEMHUB_RETRIEVAL_LOG_QUERY),
# where it looked and what it returned. Written in background batches (memhub/retrieval_log/writer.py);
# rows older than the retention are deleted. Migration 0010.
retrieval_log = Table(
    "retrieval_log",
    metadata,
    Column("search_id", UUID(as_uuid=False), primary_key=True),
    # The time of the search (not of the batch that wrote it).
    Column("at", DateTime(timezone=True), nullable=False),
    Column("agent_id", String(255), nullable=False),
    Column("rpc", String(64), nullable=False, server_default=""),
    Column("query_hash", String(64), nullable=False, server_default=""),
    Column("query_text", Text),
    # The namespaces searched, the first 64 of them, and how many there were in all.
    Column("namespaces", ARRAY(Text), nullable=False, server_default="{}"),
    Column("namespace_count", Integer, nullable=False, server_default="0"),
    # The hits in response order (rank = position + 1): parallel arrays, one row per search.
    Column("hit_ids", ARRAY(UUID(as_uuid=False)), nullable=False, server_default="{}"),
    Column("hit_scores", ARRAY(REAL), nullable=False, server_default="{}"),
    Column("hit_relevance", ARRAY(REAL), nullable=False, server_default="{}"),
    Column("trace_id", String(32), nullable=False, server_default=""),
    Column("hub_request_id", String(36), nullable=False, server_default=""),
    Index("ix_retrieval_log_agent_at", "agent_id", text("at DESC"), text("search_id DESC")),
    Index("ix_retrieval_log_at", text("at DESC"), text("search_id DESC")),
)

# Memories an agent marked used (MarkUsed), with its verdict. Written on the MarkUsed call itself (one
# insert; it is what the answer reports), while the counters on memories follow in batches.
retrieval_use = Table(
    "retrieval_use",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("agent_id", String(255), nullable=False),
    # The search the memory came from; NULL when the agent named none.
    Column("search_id", UUID(as_uuid=False)),
    Column("memory_id", UUID(as_uuid=False), nullable=False),
    # NULL: used, no verdict; true: useful; false: not useful.
    Column("useful", Boolean),
    # A memory counts once per search of an agent (a repeated mark only adds a verdict not given before).
    Index(
        "ux_retrieval_use_search",
        "agent_id",
        "search_id",
        "memory_id",
        unique=True,
        postgresql_where=text("search_id IS NOT NULL"),
    ),
    Index("ix_retrieval_use_at", "at"),
)

# The key of the query hashes in retrieval_log: one random row made by migration 0010, shared by every
# replica, so equal queries hash alike while a log row alone does not let anyone test guesses of a query.
retrieval_log_key = Table(
    "retrieval_log_key",
    metadata,
    Column("id", SmallInteger, primary_key=True),
    Column("secret", String(128), nullable=False),
)


class XID8(UserDefinedType):
    """PostgreSQL's 64-bit transaction id (xid8): never wraps around, ordered like the transactions' start."""

    cache_ok = True

    def get_col_spec(self, **kw: object) -> str:
        return "XID8"


# So that reading the schema back (the migration test compares it with this file) knows the type.
postgresql_base.ischema_names.setdefault("xid8", XID8)

# The change feed (memhub/feed/): one row per change to a memory, written by triggers on memories in the
# changing transaction itself (migration 0014), so no committed change can lack its row. Rows are read
# in (txid, seq) order, never further than the oldest transaction still running (memhub/db/changes.py
# explains why that order, and not seq alone, is gap-free). Rows older than the retention are deleted.
memory_changes = Table(
    "memory_changes",
    metadata,
    Column("seq", BigInteger, primary_key=True, autoincrement=True),
    # The writing transaction's id (pg_current_xact_id()).
    Column("txid", XID8, nullable=False, server_default=text("pg_current_xact_id()")),
    Column("memory_id", UUID(as_uuid=False), nullable=False),
    Column("namespace", String(255), nullable=False),
    # written | superseded | forgotten | expired | archived | consolidated | restored | released
    Column("event", String(16), nullable=False),
    Column("changed_at", DateTime(timezone=True), nullable=False, server_default=text("clock_timestamp()")),
    Index("ix_memory_changes_position", "txid", "seq"),
)

# Where pruning stopped: every change at or before (txid, seq) is gone, every later one is kept; a
# cursor before it cannot be resumed (OUT_OF_RANGE). One row, (0, 0) until the first prune.
change_feed_horizon = Table(
    "change_feed_horizon",
    metadata,
    Column("id", SmallInteger, primary_key=True),
    Column("txid", XID8, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("pruned_at", DateTime(timezone=True)),
)

# The key that seals change-feed cursors (memhub/feed/cursor.py): one random row made by migration 0014,
# shared by every replica, so a cursor from one hub resumes on another while its content (a position in
# the whole hub's changes) stays unreadable and unforgeable to clients.
change_feed_key = Table(
    "change_feed_key",
    metadata,
    Column("id", SmallInteger, primary_key=True),
    Column("secret", String(128), nullable=False),
)
# Shared session state (memhub/session_state/): short-lived JSON values under (namespace, session_id, key).
# UNLOGGED (migration 0011): writes skip the write-ahead log, which is most of a small write's cost, and
# in exchange a crash of the Postgres server (not a clean restart) empties both tables, nor do standbys
# receive them. Working state of tasks in progress may be lost that way; memories may not, so they
# never live here. Identifiers are compared byte-wise (COLLATE "C"): keys list in the same order on
# every server, whatever its locale, and key-order paging stays exact.
session_state_sessions = Table(
    "session_state_sessions",
    metadata,
    Column("namespace", String(255), primary_key=True),
    Column("session_id", String(128, collation="C"), primary_key=True),
    # The agent whose put created the session: the per-agent session quota counts these.
    Column("created_by", String(255), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # The latest expiry of the session's live keys; the session is gone once it passes.
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Index("ix_session_state_sessions_ns_expires", "namespace", "expires_at"),
    Index("ix_session_state_sessions_creator", "created_by", "expires_at"),
    Index("ix_session_state_sessions_expires", "expires_at"),
    prefixes=["UNLOGGED"],
)

session_state = Table(
    "session_state",
    metadata,
    Column("namespace", String(255), primary_key=True),
    Column("session_id", String(128, collation="C"), primary_key=True),
    Column("key", String(128, collation="C"), primary_key=True),
    # The JSON text exactly as the writer sent it (validated by the hub, memhub/session_state/validation.py).
    Column("value", Text, nullable=False),
    Column("value_bytes", Integer, nullable=False),
    # From session_state_version_seq (a logged sequence): never repeats, even after a crash emptied the table.
    Column("version", BigInteger, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Column("updated_by", String(255), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    # The request_id of the put that set this value ('' when none): a retry of it is answered, not applied.
    Column("request_id", String(128), nullable=False, server_default=""),
    Index("ix_session_state_expires", "expires_at"),
    prefixes=["UNLOGGED"],
)

session_state_version_seq = Sequence("session_state_version_seq", metadata=metadata)

# Which Milvus collection serves each configured collection name (memhub/core/index_pointer.py): `memhub reindex`
# builds a new one beside the live one and switches this row; every replica follows it. No row: the name itself.
index_collections = Table(
    "index_collections",
    metadata,
    Column("name", String(255), primary_key=True),
    Column("collection", String(255), nullable=False),
    Column("switched_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)
