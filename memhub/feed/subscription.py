"""One open subscription: who it is for, what it wants, where it is in the feed, what it may see.

Plain blocking Python: the gRPC stream (memhub/api/feed_stream.py) runs these methods in the feed's
own threads and does the waiting, the sending and the timeouts.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from datetime import datetime

from sqlalchemy import Engine

from memhub.auth.verifier import Identity
from memhub.core.access import Action, Authorizer
from memhub.core.model import Caller, MemoryRecord, Status
from memhub.core.visible_links import only_readable_sources
from memhub.db import changes as changes_db
from memhub.db import lineage as lineage_db
from memhub.errors import OutOfRange, PermissionDenied
from memhub.feed.config import ChangeFeedConfig
from memhub.feed.cursor import SALT_BYTES, CursorCodec
from memhub.feed.holdback import HoldBack
from memhub.feed.model import Change, FeedFilter, Position
from memhub.feed.rights import Rights, RightsView
from memhub.feed.tail import FeedTail
from memhub.service.context import with_effective_status as as_get_memory_shows  # the rule GetMemory applies

SHOWN_REFRESH_S = 600.0
"""How often a stream with nothing to deliver moves its heartbeat cursor up to where it has read (at most a quarter of
the retention): by the clock alone, never because of others' changes, so a resumed stream need not scan again what it
was spared and an idle one does not fall behind the pruning horizon."""


def shown_refresh_s(retention_s: float | None) -> float:
    return min(SHOWN_REFRESH_S, retention_s / 4) if retention_s else SHOWN_REFRESH_S


@dataclasses.dataclass(frozen=True)
class VisibleChange:
    """A change as the subscriber may see it."""

    cursor: str
    change: Change
    changed_at: datetime
    memory: MemoryRecord


@dataclasses.dataclass(frozen=True)
class Delivery:
    """What one step found for the subscriber."""

    changes: tuple[VisibleChange, ...]
    cursor: str
    """Where the subscription stands after these changes (a heartbeat sends it)."""
    full: bool
    """More may be waiting: read again at once."""
    held_back: bool
    """Committed changes wait for an older transaction to finish: read again soon."""


def out_of_range(retention_s: float | None) -> OutOfRange:
    kept = (
        f"the last {retention_s / 3600:g} hours of changes (MEMHUB_CHANGE_FEED_RETENTION_HOURS)"
        if retention_s
        else "fewer changes"
    )
    return OutOfRange(
        f"cursor: the changes after this cursor were pruned; the feed keeps {kept}. Resync: subscribe without a "
        "cursor, keep the cursor of its first heartbeat, read the current state with ListMemories, then apply the "
        "events of the new stream"
    )


def with_readable_citations(engine: Engine, records: list[MemoryRecord], caller: Caller, view: RightsView) -> list[MemoryRecord]:
    """``records`` with derived_from cut to the memories ``caller`` may read, as every other response shows them
    (memhub/core/visible_links.py): a citation of a memory it cannot read would say that memory exists. Decided on
    ``view`` without an audit row each; one query, and none for records without citations."""
    cited = list(dict.fromkeys(mid for r in records for mid in r.derived_from))
    if not cited:
        return records
    with engine.connect() as conn:
        placed = lineage_db.placement(conn, cited)
    admin = view.allowed(caller, Action.ADMIN, None)
    readable = frozenset(
        mid
        for mid, (namespace, status) in placed.items()
        if view.allowed(caller, Action.READ, namespace) and (admin or status is not Status.QUARANTINED)
    )
    return [only_readable_sources(r, readable) for r in records]


def visible(record: MemoryRecord, caller: Caller, view: RightsView) -> MemoryRecord | None:
    """``record`` as GetMemory would show it to ``caller`` (who must also may subscribe there), or None.

    A memory of a namespace the caller cannot read is not its business, and neither is one in
    quarantine unless it is an admin (memhub/service/reading.py). A forgotten memory's row
    is already its tombstone (the forget erased content and entities), so what goes out is the
    tombstone, whichever change the event reports.
    """
    if not (view.allowed(caller, Action.READ, record.namespace) and view.allowed(caller, Action.SUBSCRIBE, record.namespace)):
        return None
    if record.status is Status.QUARANTINED and not view.allowed(caller, Action.ADMIN, None):
        return None
    return as_get_memory_shows(record)


class Subscription:
    """The state of one stream. Not thread-safe: one stream drives it, one step at a time."""

    def __init__(
        self,
        engine: Engine,
        authorizer: Authorizer,
        rights: Rights,
        codec: CursorCodec,
        config: ChangeFeedConfig,
        caller: Caller,
        flt: FeedFilter,
        position: Position,
        verify_token: Callable[[], Identity],
        *,
        tail: FeedTail | None = None,
        on_table_read: Callable[[], None] = lambda: None,
        resumed_from: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``tail``: the hub's shared window of the newest changes, taken from instead of reading the table
        whenever this subscription's position lies inside it (memhub/feed/tail.py). ``on_table_read``: told of each
        read of the table instead (a stream catching up). ``resumed_from``: the cursor the client gave (the
        first heartbeats repeat it)."""
        self._engine = engine.execution_options(isolation_level="REPEATABLE READ")
        self._reads = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._tail = tail
        self._on_table_read = on_table_read
        self._hold = HoldBack()
        self._authorizer = authorizer
        self._rights = rights
        self._codec = codec
        self._config = config
        self.caller = caller
        self.filter = flt
        self.position = position
        self._verify_token = verify_token
        self._version = rights.current().version
        self.token_expires_at = verify_token().expires_at
        self._clock = clock
        self._refresh_s = shown_refresh_s(config.retention_s)
        # What heartbeats and resume cursors show: not ``position`` (it moves over every change in the hub,
        # readable or not: one bit of others' activity per heartbeat, issue 22) but the place reached when the
        # subscriber was last sent something, or last moved on by the clock. Resuming there loses nothing it may
        # read: every change between it and ``position`` was one it may not see.
        self._shown_cursor = resumed_from
        self._shown_at = clock()
        if not resumed_from:
            self._show(position)

    @property
    def cursor(self) -> str:
        """Where a client resumes from: moves only when this stream delivers, or by the clock (see __init__)."""
        return self._shown_cursor

    def _show(self, position: Position) -> None:
        # A fresh salt each time, so that no two shown cursors compare equal unless one was repeated on purpose.
        self._shown_cursor = self._codec.seal_heartbeat(position, os.urandom(SALT_BYTES))
        self._shown_at = self._clock()

    def check(self) -> None:
        """Still allowed? Raises Unauthenticated (token expired or revoked) or PermissionDenied (a reload took
        read or subscribe away on a namespace the request names; audited as the denial it is)."""
        self._verify_token()
        version = self._rights.current().version
        if version == self._version:
            return
        self._version = version
        for root in self.filter.namespaces:
            for action in (Action.READ, Action.SUBSCRIBE):
                if not self._authorizer.allowed(self.caller, action, root):
                    raise PermissionDenied(
                        f"permission denied: agent {self.caller.agent_id!r} may no longer {action.value} in namespace "
                        f"{root!r} (the policies changed); this stream is closed"
                    )

    def step(self) -> Delivery:
        """Check the rights, then take the next batch (from the hub's tail, else the table) and keep what the
        subscriber may see."""
        self.check()
        view = self._rights.current()
        taken = self._tail.take(self.position, self.filter, self._config.batch) if self._tail is not None else None
        if taken is not None:
            changes, next_position, full, held_back = taken.changes, taken.next_position, taken.full, False
        else:
            self._on_table_read()
            with self._engine.connect() as conn, conn.begin():
                batch = changes_db.read(
                    conn,
                    self.position,
                    self.filter,
                    view.scope(self.caller),
                    scan_limit=self._config.scan_limit,
                    limit=self._config.batch,
                    scoped_bound=self._hold.scoped,
                )
            self._hold.saw(batch.held_back)
            if self.position < batch.horizon:  # a subscriber so far behind that pruning overtook it
                raise out_of_range(self._config.retention_s)
            changes, next_position, full, held_back = list(batch.changes), batch.next_position, batch.full, batch.held_back
        kept = [(change, record) for change in changes if (record := visible(change.memory, self.caller, view)) is not None]
        records = with_readable_citations(self._reads, [record for _, record in kept], self.caller, view)
        shown = tuple(
            VisibleChange(self._codec.seal(change.position), change.change, change.changed_at, record)
            for (change, _), record in zip(kept, records, strict=True)
        )
        self.position = next_position
        if shown or self._clock() - self._shown_at >= self._refresh_s:
            self._show(next_position)
        return Delivery(shown, self.cursor, full, held_back)
