"""Storage quotas and the per-agent namespace quota: the refusal messages and their audit reasons.

The quotas are enforced in Postgres, by triggers on the memories table
(migration 0005): inside the write's own transaction, after the hub has
checked the write permission, so they are exact under concurrent writers
and a refused write stores nothing. The limits reach the triggers as
session settings each hub sets on its connections (hub/db/namespace_usage.py).
"""

from __future__ import annotations

SQLSTATE_STORAGE = "MHQ01"
"""A namespace would hold more memories or content bytes than its quota."""
SQLSTATE_NAMESPACES = "MHQ02"
"""An agent would have created more namespaces than its quota."""
QUOTA_SQLSTATES = frozenset({SQLSTATE_STORAGE, SQLSTATE_NAMESPACES})


def quota_reason(message: str) -> str:
    """The audit reason of a quota refusal, from the message the trigger wrote."""
    if message.startswith("namespace quota"):
        return "namespaces-per-agent"
    if message.startswith("storage quota") and "bytes" in message:
        return "namespace-bytes"
    if message.startswith("storage quota"):
        return "namespace-memories"
    if message.startswith("session quota"):
        return message.removeprefix("session quota (").partition(")")[0] or "session"
    return "quota"
