"""The change feed of one hub process: opening subscriptions, the LISTEN wake-ups, pruning.

Every replica runs one. They share nothing but Postgres: the changes table is the truth, a cursor
from one replica resumes on any other (the key that seals cursors is in the database too), and a
NOTIFY from any replica's commit wakes the subscribers of all of them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

from sqlalchemy import Engine

from memhub import outage_log
from memhub.auth.verifier import Identity
from memhub.core.access import Action, Authorizer, require
from memhub.core.model import Caller
from memhub.db import changes as changes_db
from memhub.db import namespace_scope
from memhub.feed.config import ChangeFeedConfig
from memhub.feed.cursor import CursorCodec
from memhub.feed.model import FeedFilter
from memhub.feed.notifier import ChangeNotifier
from memhub.feed.rights import Rights
from memhub.feed.subscription import Subscription, out_of_range
from memhub.feed.tail import FeedTail
from memhub.metrics import change_feed as feed_metrics
from memhub.periodic import Periodic

log = logging.getLogger(__name__)
_TAIL = outage_log.Site("change-feed tail", log)  # one line per outage (memhub/outage_log.py)

PRUNE_BATCH = 10_000
"""Changes deleted per transaction: a first prune of a large backlog must not hold one huge lock set."""
HELD_BACK_WARNING_S = 10.0
"""Changes held back this long behind an older transaction get one WARNING naming that transaction."""


class ChangeFeed:
    def __init__(
        self,
        engine: Engine,
        authorizer: Authorizer,
        rights: Rights,
        config: ChangeFeedConfig,
        *,
        listen_url: str | None,
    ) -> None:
        self.config = config
        self._engine = engine
        self._reads = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._authorizer = authorizer
        self._rights = rights
        with self._reads.connect() as conn:
            self.codec = CursorCodec(changes_db.cursor_key(conn))
        self.tail = FeedTail(engine, config)
        self._tail_wake = threading.Event()
        self._tail_thread: threading.Thread | None = None
        self.notifier = ChangeNotifier(listen_url, on_notify=self._tail_wake.set)
        # Streams' reads and rights checks run here, never in the threads of other calls.
        self.executor = ThreadPoolExecutor(max_workers=config.read_threads, thread_name_prefix="memhub-feed")
        self._pruner = (
            Periodic(self.prune, config.prune_interval_s, "memhub-feed-pruner", log, "change-feed prune failed; retrying later")
            if config.retention_s
            else None
        )
        self._closing = threading.Event()
        self._open = 0
        self._held = 0
        self._dropped = 0
        self._table_reads = 0
        self._open_lock = threading.Lock()

    # -- subscriptions ----------------------------------------------------------------------

    def subscribe(self, caller: Caller, flt: FeedFilter, cursor: str, verify_token: Callable[[], Identity]) -> Subscription:
        """Open a subscription (blocking). Each named namespace needs read and subscribe (audited, PermissionDenied
        naming it); with none named, the subscription is audited as one subscribe decision over every namespace,
        like a search. A cursor must be this hub's (InvalidArgument) and not older than the retention (OutOfRange)."""
        position = self.codec.open(cursor) if cursor else None
        if flt.namespaces:
            for root in flt.namespaces:
                require(self._authorizer, caller, Action.READ, root)
                require(self._authorizer, caller, Action.SUBSCRIBE, root)
        else:
            with self._reads.connect() as conn:
                self._authorizer.readable(
                    caller, Action.SUBSCRIBE, [], lambda scope: namespace_scope.namespaces_in_scope(conn, [], scope)
                )
        with self._reads.connect() as conn:
            if position is None:
                position = changes_db.head(conn)
            elif position < changes_db.horizon(conn):
                raise out_of_range(self.config.retention_s)
        return Subscription(
            self._engine,
            self._authorizer,
            self._rights,
            self.codec,
            self.config,
            caller,
            flt,
            position,
            verify_token,
            tail=self.tail,
            on_table_read=self._count_table_read,
            resumed_from=cursor,
        )

    @property
    def closing(self) -> bool:
        """The hub is stopping: streams end with UNAVAILABLE and their cursor, to resume on another replica."""
        return self._closing.is_set()

    def begin_shutdown(self) -> None:
        self._closing.set()
        self._tail_wake.set()
        self.notifier.wake_all()

    def stream_opened(self) -> None:
        with self._open_lock:
            self._open += 1
        feed_metrics.stream_opened()
        self._tail_wake.set()  # the first stream starts the tail reading

    def stream_closed(self) -> None:
        with self._open_lock:
            self._open -= 1
        feed_metrics.stream_closed()

    # -- the shared tail ----------------------------------------------------------------------

    def _run_tail(self) -> None:
        """Read the new changes once for every stream of this hub, whenever a commit (or the poll) says so.

        Only while streams are open: with none, a commit costs the feed nothing here, and the window is
        dropped (a stream opening later reads the table until it has caught up)."""
        held_since: float | None = None
        while not self._closing.is_set():
            held = self.tail.held_back
            if not held:
                held_since = None
            elif held_since is None:
                held_since = time.monotonic()
            elif time.monotonic() - held_since > HELD_BACK_WARNING_S:
                self._warn_held_back(time.monotonic() - held_since)
                held_since = float("inf")  # once per episode
            self._tail_wake.wait(min(0.05, self.config.poll_interval_s) if held else self.config.poll_interval_s)
            self._tail_wake.clear()
            if self._closing.is_set():
                break
            if self._open <= 0:
                self.tail.reset()
                continue
            try:
                while True:
                    moved, full = self.tail.advance()
                    if moved:
                        self.notifier.wake_all()
                    if not full:
                        break
                _TAIL.ok()
            except Exception as exc:  # Postgres down: streams keep polling on their own; retry next interval
                _TAIL.failed(exc, "change-feed tail cannot read; retrying")

    def open_streams(self) -> int:
        """Change-feed streams open on this hub now: the gauge for a metrics exporter (safe from any thread)."""
        return self._open

    def hold(self, count: int) -> None:
        """``count`` events were read for a stream and wait to be sent (negative: sent, or dropped with the stream)."""
        with self._open_lock:
            self._held += count

    def _count_table_read(self) -> None:
        with self._open_lock:
            self._table_reads += 1

    def table_reads(self) -> int:
        """Reads of the changes table by streams that were not caught up (outside the shared tail), since start:
        a counter for metrics; caught-up streams cost Postgres nothing."""
        return self._table_reads

    def count_dropped(self) -> None:
        with self._open_lock:
            self._dropped += 1

    def dropped_streams(self) -> int:
        """Streams dropped since start because their client accepted nothing for MEMHUB_CHANGE_FEED_SLOW_CONSUMER_S
        (a counter for metrics)."""
        return self._dropped

    def held_events(self) -> int:
        """Events read from Postgres and not yet handed to gRPC, all streams together: the feed's share of the hub's
        memory, at most MEMHUB_CHANGE_FEED_BATCH per open stream whatever the clients do (a gauge for metrics)."""
        return self._held

    # -- retention ----------------------------------------------------------------------------

    def prune(self, now: datetime | None = None) -> int:
        """Delete the changes older than the retention; returns how many. Run by the periodic job (every replica)."""
        if not self.config.retention_s:
            return 0
        cutoff = (now or datetime.now(timezone.utc)) - timedelta(seconds=self.config.retention_s)
        total = 0
        while True:
            with self._engine.begin() as conn:
                deleted = changes_db.prune(conn, cutoff, PRUNE_BATCH)
            total += deleted
            if deleted < PRUNE_BATCH:
                break
        if total:
            log.info("pruned %d change-feed entries older than %s", total, cutoff.isoformat(timespec="seconds"))
        return total

    # -- lifecycle ----------------------------------------------------------------------------

    def _warn_held_back(self, seconds: float) -> None:
        try:
            with self._reads.connect() as conn:
                oldest = changes_db.oldest_transaction(conn)
        except Exception:  # noqa: BLE001 - the warning matters more than its detail
            oldest = None
        log.warning(
            "change-feed events have waited %.0f s for an older transaction to finish (the feed delivers changes only "
            "once every older transaction on the database server has ended); oldest: %s",
            seconds,
            oldest or "not visible to this database user",
        )

    def start(self) -> None:
        self._closing.clear()
        self.notifier.start()
        if self._tail_thread is None or not self._tail_thread.is_alive():
            self._tail_thread = threading.Thread(target=self._run_tail, name="memhub-feed-tail", daemon=True)
            self._tail_thread.start()
        if self._pruner is not None:
            self._pruner.start()

    def stop(self) -> None:
        self.begin_shutdown()
        if self._pruner is not None:
            self._pruner.stop()
        self.notifier.stop()
        if self._tail_thread is not None:
            self._tail_thread.join(5)
        self.executor.shutdown(wait=False, cancel_futures=True)
