"""Table definitions (SQLAlchemy Core). Migrations in memhub/db/migrations must match.

The tables are defined in memhub/db/tables/, one module per part of the hub; this module gathers them on one
``metadata`` and is where the rest of memhub imports them from.

Why Core and not the ORM: every query here is a handful of columns in a hot
path; explicit SQL keeps locks (FOR UPDATE SKIP LOCKED, FOR SHARE) and
conflict handling (ON CONFLICT) visible.
"""

from __future__ import annotations

from memhub.db.tables import metadata
from memhub.db.tables.access import audit_log, revoked_tokens, token_records
from memhub.db.tables.change_feed import XID8, change_feed_horizon, change_feed_key, memory_changes
from memhub.db.tables.entity_graph import entity_edges
from memhub.db.tables.memories import (
    MEMORY_COLUMNS,
    idempotency,
    index_collections,
    memories,
    namespace_usage,
    namespace_usage_delta,
    namespaces,
    outbox,
)
from memhub.db.tables.retrieval_log import retrieval_log, retrieval_log_key, retrieval_use
from memhub.db.tables.session_state import session_state, session_state_sessions, session_state_version_seq

__all__ = [
    "MEMORY_COLUMNS",
    "XID8",
    "audit_log",
    "change_feed_horizon",
    "change_feed_key",
    "entity_edges",
    "idempotency",
    "index_collections",
    "memories",
    "memory_changes",
    "metadata",
    "namespace_usage",
    "namespace_usage_delta",
    "namespaces",
    "outbox",
    "retrieval_log",
    "retrieval_log_key",
    "retrieval_use",
    "revoked_tokens",
    "session_state",
    "session_state_sessions",
    "session_state_version_seq",
    "token_records",
]
