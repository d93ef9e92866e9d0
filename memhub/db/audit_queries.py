"""Reading the audit log (writes go through memhub/audit/writer.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, select

from memhub.db.memory_rows import subtree_condition
from memhub.db.schema import audit_log


@dataclass(frozen=True)
class AuditQuery:
    agent_id: str | None = None
    action: str | None = None
    namespace: str | None = None  # includes descendants
    decision: str | None = None  # "allow" | "deny"
    since: datetime | None = None
    until: datetime | None = None
    policy_id: str | None = None  # entries this policy decided
    hub_request_id: str | None = None  # the entries of one call


def query(conn: Connection, q: AuditQuery, limit: int, before_id: int | None) -> Sequence:
    """Newest first, keyset-paged on id."""
    conds = []
    if q.agent_id:
        conds.append(audit_log.c.agent_id == q.agent_id)
    if q.action:
        conds.append(audit_log.c.action == q.action)
    if q.namespace:
        conds.append(subtree_condition(audit_log.c.namespace, [q.namespace]))
    if q.decision:
        conds.append(audit_log.c.decision == q.decision)
    if q.since:
        conds.append(audit_log.c.at >= q.since)
    if q.until:
        conds.append(audit_log.c.at < q.until)
    if q.policy_id:
        conds.append(audit_log.c.policy_ids.contains([q.policy_id]))
    if q.hub_request_id:
        conds.append(audit_log.c.hub_request_id == q.hub_request_id)
    if before_id is not None:
        conds.append(audit_log.c.id < before_id)
    return conn.execute(select(audit_log).where(*conds).order_by(audit_log.c.id.desc()).limit(limit)).all()
