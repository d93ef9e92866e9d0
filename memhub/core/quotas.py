"""Storage quotas and the per-agent namespace quota: the refusal messages and their audit reasons.

The quotas are enforced in Postgres, by triggers on the memories table
(migration 0005): inside the write's own transaction, after the hub has
checked the write permission, so they are exact under concurrent writers
and a refused write stores nothing. The limits reach the triggers as
session settings each hub sets on its connections (memhub/db/namespace_usage.py).

The storage quotas are a namespace's, shared by all its writers: unlike the
session-state quotas (memhub/session_state/config.py ``agent_share``), no writer
is held to a share of them (issue 22). Not cheap: the triggers count use per
namespace, and a share needs use per (namespace, writer), counted and folded
on every write. Not sound either: importers, consolidators and bots rightly
write most of a shared namespace, and memories never expire, so a share
would lock them out for good, while whoever may forget there can make room.
A refusal names the namespace, the quota and its limit, never another agent.
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
