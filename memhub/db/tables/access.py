"""Access: revoked token ids, the tokens the hub issued or accepted, and the audit log of every access decision."""

from __future__ import annotations

from sqlalchemy import BigInteger, Boolean, Column, DateTime, Index, String, Table, Text, func, text
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

from memhub.db.tables import metadata

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

# Tokens the hub knows by id (memhub/auth/token_records.py): issued through AdminService.IssueToken, or first
# seen when the hub accepted them (signed by `memhub token issue` or an external issuer). The token text is
# never stored. Rows go some days after the token's expiry; their number is bounded, in all and per agent (new
# ids stop being recorded past a bound, uses of known ones are still counted).
token_records = Table(
    "token_records",
    metadata,
    Column("token_id", String(128), primary_key=True),
    Column("agent_id", String(255), nullable=False),
    Column("groups", ARRAY(Text), nullable=False, server_default="{}"),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    # When the hub first knew it (issued, or first accepted): the list's order, newest first.
    Column("recorded_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("issued_at", DateTime(timezone=True)),
    # The admin who issued it through the hub ("" for a token the hub only saw).
    Column("issued_by", String(255), nullable=False, server_default=""),
    Column("note", Text, nullable=False, server_default=""),
    Column("first_used_at", DateTime(timezone=True)),
    Column("last_used_at", DateTime(timezone=True)),
    Index("ix_token_records_recorded", "recorded_at", "token_id"),
    Index("ix_token_records_expires", "expires_at"),
    # One agent's share is counted (memhub/auth/token_records.py) and its tokens listed, newest first.
    Index("ix_token_records_agent", "agent_id", "recorded_at", "token_id"),
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
