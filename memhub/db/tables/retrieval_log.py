"""The retrieval log: every search, the memories marked used, and the key of the query hashes."""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, DateTime, Index, Integer, SmallInteger, String, Table, Text, func, text
from sqlalchemy.dialects.postgresql import ARRAY, REAL, UUID

from memhub.db.tables import metadata

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
