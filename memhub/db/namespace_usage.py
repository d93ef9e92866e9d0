"""Storage use per namespace and the quota settings the memories triggers read (migration 0005).

Triggers append one delta row per statement and namespace; ``fold`` moves
deltas into namespace_usage so the table of deltas stays small. Readers
sum the folded row and the deltas not folded yet, which is exact at any
moment: a fold deletes deltas and adds them to the row in one transaction.

The quotas reach the triggers as session settings on every connection of
the hub's pool (``install_quota_settings``); a connection without them
(migrations, psql, other tools) is never refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, event, text

from memhub.config import LimitsConfig

_FOLD = text(
    "WITH moved AS ("
    "  DELETE FROM namespace_usage_delta WHERE id IN ("
    "    SELECT id FROM namespace_usage_delta ORDER BY id LIMIT :limit FOR UPDATE SKIP LOCKED"
    "  ) RETURNING name, memories, bytes"
    "), summed AS (SELECT name, sum(memories) AS memories, sum(bytes) AS bytes FROM moved GROUP BY name ORDER BY name) "
    "INSERT INTO namespace_usage (name, memories, bytes) SELECT name, memories, bytes FROM summed "
    "ON CONFLICT (name) DO UPDATE SET memories = namespace_usage.memories + EXCLUDED.memories, "
    "bytes = namespace_usage.bytes + EXCLUDED.bytes"
)

_USAGE = text(
    "SELECT coalesce((SELECT memories FROM namespace_usage WHERE name = :n), 0) "
    "     + coalesce((SELECT sum(memories) FROM namespace_usage_delta WHERE name = :n), 0), "
    "       coalesce((SELECT bytes FROM namespace_usage WHERE name = :n), 0) "
    "     + coalesce((SELECT sum(bytes) FROM namespace_usage_delta WHERE name = :n), 0), "
    "       (SELECT created_by FROM namespaces WHERE name = :n)"
)


@dataclass(frozen=True)
class Usage:
    memories: int
    """Stored memories (any status but forgotten: superseded and expired ones keep their content)."""
    bytes: int
    """UTF-8 bytes of their content."""
    created_by: str | None
    """The agent whose write created the namespace ('' when unknown, None when it does not exist)."""


def usage(conn: Connection, namespace: str) -> Usage:
    memories, size, creator = conn.execute(_USAGE, {"n": namespace}).one()
    return Usage(int(memories), int(size), creator)


_USAGE_MANY = text(
    "SELECT n.name, coalesce(u.memories, 0) + coalesce(d.memories, 0), coalesce(u.bytes, 0) + coalesce(d.bytes, 0), "
    "       n.created_by "
    "FROM namespaces n "
    "LEFT JOIN namespace_usage u ON u.name = n.name "
    "LEFT JOIN (SELECT name, sum(memories) AS memories, sum(bytes) AS bytes FROM namespace_usage_delta "
    "           WHERE name = ANY(:names) GROUP BY name) d ON d.name = n.name "
    "WHERE n.name = ANY(:names)"
)


def usage_many(conn: Connection, names: Sequence[str]) -> dict[str, Usage]:
    """``usage`` for a page of namespaces in one statement (each lookup by primary key or index)."""
    if not names:
        return {}
    rows = conn.execute(_USAGE_MANY, {"names": list(names)})
    return {name: Usage(int(memories), int(size), creator) for name, memories, size, creator in rows}


def fold(conn: Connection, limit: int = 10_000) -> int:
    """Fold up to ``limit`` deltas into namespace_usage; returns the namespaces updated. Safe beside other replicas
    (SKIP LOCKED: each delta is folded exactly once)."""
    return conn.execute(_FOLD, {"limit": limit}).rowcount or 0


def quota_settings(limits: LimitsConfig) -> dict[str, str]:
    """The session settings the triggers read; 0 means no quota."""
    return {
        "memhub.namespaces_per_agent": str(limits.namespaces_per_agent),
        "memhub.namespace_max_memories": str(limits.namespace_max_memories),
        "memhub.namespace_max_bytes": str(limits.namespace_max_bytes),
    }


def install_quota_settings(engine: Engine, limits: LimitsConfig) -> None:
    """Set the quotas on every connection the engine opens from now on, and drop the ones it holds."""
    settings = quota_settings(limits)

    @event.listens_for(engine, "connect")
    def _set(dbapi_connection, _record) -> None:  # noqa: ANN001 - a psycopg connection
        with dbapi_connection.cursor() as cursor:
            for name, value in settings.items():
                cursor.execute("SELECT set_config(%s, %s, false)", (name, value))
        dbapi_connection.commit()  # a session setting made in a transaction is undone by its rollback

    engine.dispose()  # connections opened before (the migration's) lack the settings
