"""Idempotency keys: a retried write with the same request_id replays its first result.

Keys are per agent (two agents may pick the same request_id) and store a
hash of the request, so reusing an id for a different request is refused
rather than answered with an unrelated result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select
from sqlalchemy.dialects.postgresql import insert as pg_insert

from memhub.db.schema import idempotency


@dataclass(frozen=True)
class StoredResult:
    operation: str
    request_hash: str
    response: dict[str, Any]


def lookup(conn: Connection, agent_id: str, request_id: str) -> StoredResult | None:
    row = conn.execute(
        select(idempotency.c.operation, idempotency.c.request_hash, idempotency.c.response).where(
            idempotency.c.agent_id == agent_id, idempotency.c.request_id == request_id
        )
    ).first()
    return StoredResult(row[0], row[1], row[2]) if row else None


def store(conn: Connection, agent_id: str, request_id: str, operation: str, request_hash: str, response: dict[str, Any]) -> bool:
    """Record the result; False when a concurrent call with the same key committed first."""
    row = conn.execute(
        pg_insert(idempotency)
        .values(agent_id=agent_id, request_id=request_id, operation=operation, request_hash=request_hash, response=response)
        .on_conflict_do_nothing()
        .returning(idempotency.c.request_id)
    ).first()
    return row is not None
