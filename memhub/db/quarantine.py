"""Releasing quarantined memories (memhub/core/screening.py quarantines them on write).

A release makes a quarantined memory active, as if it had just been written:
it supersedes the active memory with its subject key (which the quarantined
write was not allowed to do), goes into the retrieval index, and leaves an
audit row naming the admin, the memory and the reason, in the same
transaction, so a committed release is never unaudited.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, func, select, update

from memhub.core.model import Caller, Status
from memhub.db.memories import enqueue_index
from memhub.db.schema import audit_log, memories
from memhub.errors import FailedPrecondition, NotFound


def release(conn: Connection, ids: Sequence[str], caller: Caller, reason: str) -> list[str]:
    """Make the quarantined memories ``ids`` active; returns them. Must run inside a transaction.

    Raises NotFound for an id that is not quarantined (nothing is released then), and
    FailedPrecondition when an active memory with the same content already exists in its namespace.
    """
    rows = {
        str(r.id): r
        for r in conn.execute(
            select(memories.c.id, memories.c.namespace, memories.c.subject_key, memories.c.content_hash)
            .where(memories.c.id.in_(list(ids)), memories.c.status == Status.QUARANTINED.value)
            .order_by(memories.c.id)
            .with_for_update()
        )
    }
    for i, mid in enumerate(ids):
        if mid not in rows:
            raise NotFound(f"ids[{i}]: memory {mid} is not quarantined (or does not exist); nothing was released")
    changed: list[str] = []
    for mid in ids:
        row = rows[mid]
        twin = conn.execute(
            select(memories.c.id).where(
                memories.c.namespace == row.namespace,
                memories.c.content_hash == row.content_hash,
                memories.c.status == Status.ACTIVE.value,
            )
        ).scalar()
        if twin is not None:
            raise FailedPrecondition(
                f"memory {mid}: the same content is already active in {row.namespace!r} as memory {twin}; "
                "forget the quarantined copy instead of releasing it"
            )
        superseded: list[str] = []
        if row.subject_key is not None:
            superseded = [
                str(r[0])
                for r in conn.execute(
                    update(memories)
                    .where(
                        memories.c.namespace == row.namespace,
                        memories.c.subject_key == row.subject_key,
                        memories.c.status == Status.ACTIVE.value,
                    )
                    .values(status=Status.SUPERSEDED.value, superseded_by=mid, updated_at=func.now())
                    .returning(memories.c.id)
                )
            ]
        conn.execute(
            update(memories)
            .where(memories.c.id == mid)
            .values(status=Status.ACTIVE.value, supersedes=superseded, updated_at=func.now())
        )
        conn.execute(
            audit_log.insert().values(
                agent_id=caller.agent_id,
                groups=list(caller.groups),
                action="release",
                namespace=row.namespace,
                decision="allow",
                rpc=caller.rpc,
                trace_id=caller.trace_id,
                detail={"memory_id": mid, "reason": reason, "superseded": len(superseded)},
            )
        )
        changed += [mid, *superseded]
    enqueue_index(conn, changed)
    return list(ids)
