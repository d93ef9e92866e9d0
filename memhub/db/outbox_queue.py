"""The outbox as a work queue, in SQL: failures backed off, expiries swept into it, everything queued again, what
waits. The indexer's loop (memhub/core/indexer.py) claims and applies the rows; these are the rest of its queries."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine, func, insert, select, text, update

from memhub.db.memories import enqueue_index
from memhub.db.memory_rows import servable_condition
from memhub.db.schema import memories, outbox

MAX_BACKOFF_S = 60.0


def back_off(engine: Engine, ids: list[int], error: str) -> None:
    """Leave the outbox rows ``ids`` for later, with ``error`` recorded: 0.5 s, 1 s, 2 s ... at most MAX_BACKOFF_S."""
    with engine.begin() as conn:
        conn.execute(
            update(outbox)
            .where(outbox.c.id.in_(ids))
            .values(
                attempts=outbox.c.attempts + 1,
                last_error=error[:2000],
                available_at=func.now()
                + func.make_interval(0, 0, 0, 0, 0, 0, func.least(MAX_BACKOFF_S, 0.5 * func.power(2, outbox.c.attempts))),
            )
        )


def sweep_expired(engine: Engine) -> int:
    """Mark up to 1,000 active memories past expires_at as expired and queue their removal from the index."""
    with engine.begin() as conn:
        due = (
            select(memories.c.id)
            .where(memories.c.status == "active", memories.c.expires_at <= func.now())
            .limit(1000)
            .with_for_update(skip_locked=True)
            .scalar_subquery()
        )
        ids = [
            str(r[0])
            for r in conn.execute(
                update(memories)
                .where(memories.c.id.in_(due))
                .values(status="expired", updated_at=func.now())
                .returning(memories.c.id)
            )
        ]
        enqueue_index(conn, ids)
    return len(ids)


def release_backoffs(engine: Engine) -> int:
    """Make rows waiting out a back-off claimable now; returns how many."""
    with engine.begin() as conn:
        released = conn.execute(update(outbox).where(outbox.c.available_at > func.now()).values(available_at=func.now())).rowcount
    return released or 0


def servable_count(engine: Engine) -> int:
    """Memories that belong in the index (active, not expired)."""
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(memories).where(servable_condition())).scalar_one())


def queue_all_servable(engine: Engine) -> int:
    """Queue every servable memory (the index was rebuilt empty); returns how many."""
    servable = select(memories.c.id).where(servable_condition())
    queued = insert(outbox).from_select(["memory_id"], servable).returning(outbox.c.id).cte("queued")
    with engine.begin() as conn:
        count = int(conn.execute(select(func.count()).select_from(queued)).scalar_one())
        conn.execute(text("NOTIFY memhub_outbox"))  # at commit: every replica's indexer joins in
    return count


def pending(engine: Engine, memory_ids: Sequence[str]) -> int:
    """How many outbox rows still wait for these memories."""
    with engine.connect() as conn:
        return int(
            conn.execute(select(func.count()).select_from(outbox).where(outbox.c.memory_id.in_(list(memory_ids)))).scalar_one()
        )


def backlog(engine: Engine) -> int:
    """Outbox rows waiting, claimed or in back-off."""
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(outbox)).scalar_one())
