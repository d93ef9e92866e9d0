"""What an operator needs to judge the retrieval index: is it up, and how far behind Postgres is it?

The index's own state (up or down, and why) is this replica's view
(memhub/core/index_health.py); the outbox is shared by every replica, so its
depth, the age of its oldest row (the lag) and the last recorded indexing
error describe the whole deployment. Counting stops at OUTBOX_COUNT_CAP so
that a report on a huge backlog stays a bounded query.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

from sqlalchemy import Engine, func, select

from memhub.core.index_health import IndexHealth
from memhub.db.schema import outbox

OUTBOX_COUNT_CAP = 1_000_000
MAX_REASON_CHARS = 512


@dataclass(frozen=True)
class IndexReport:
    index_ok: bool
    index_reason: str
    index_down_seconds: float
    database_ok: bool
    outbox_depth: int
    outbox_depth_capped: bool
    outbox_retrying: int
    oldest_queued_at: datetime | None
    lag_seconds: float
    last_error: str
    last_error_attempts: int
    last_error_memory_id: str
    indexer_enabled: bool
    embedding_model: str
    collection: str


class IndexReporter:
    """Builds an IndexReport from the replica's index health and the shared outbox."""

    def __init__(
        self,
        engine: Engine,
        index_health: IndexHealth,
        database_ok: Callable[[], bool],
        *,
        indexer_enabled: bool,
        embedding_model: str,
        collection: str,
    ) -> None:
        self._engine = engine
        self._index_health = index_health
        self._database_ok = database_ok
        self._indexer_enabled = indexer_enabled
        self._embedding_model = embedding_model
        self._collection = collection

    def report(self) -> IndexReport:
        capped_rows = select(outbox.c.attempts).limit(OUTBOX_COUNT_CAP + 1).subquery()
        with self._engine.connect() as conn:
            depth, retrying = conn.execute(
                select(func.count(), func.count().filter(capped_rows.c.attempts > 0)).select_from(capped_rows)
            ).one()
            oldest, now = conn.execute(select(func.min(outbox.c.created_at), func.now())).one()
            failed = conn.execute(
                select(outbox.c.last_error, outbox.c.attempts, outbox.c.memory_id)
                .where(outbox.c.last_error.is_not(None))
                .order_by(outbox.c.available_at.desc())  # the latest failure pushed its retry furthest
                .limit(1)
            ).first()
        capped = depth > OUTBOX_COUNT_CAP
        lag = max(0.0, (now - oldest).total_seconds()) if oldest is not None else 0.0
        return IndexReport(
            index_ok=self._index_health.healthy,
            index_reason=self._index_health.reason[:MAX_REASON_CHARS],
            index_down_seconds=self._index_health.down_for_s(),
            database_ok=self._database_ok(),
            outbox_depth=min(depth, OUTBOX_COUNT_CAP),
            outbox_depth_capped=capped,
            outbox_retrying=min(retrying, OUTBOX_COUNT_CAP),
            oldest_queued_at=oldest.astimezone(timezone.utc) if oldest is not None else None,
            lag_seconds=lag,
            last_error=failed[0] if failed else "",
            last_error_attempts=int(failed[1]) if failed else 0,
            last_error_memory_id=str(failed[2]) if failed else "",
            indexer_enabled=self._indexer_enabled,
            embedding_model=self._embedding_model,
            collection=self._collection,
        )
