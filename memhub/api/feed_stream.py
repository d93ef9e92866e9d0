"""One SubscribeChanges stream on the gRPC event loop: waiting, sending, keepalive and the ways it ends.

The loop asks the subscription (memhub/feed/subscription.py) for its next batch in the feed's own
threads, sends the batch, and waits for a NOTIFY wake-up, the poll interval, the next heartbeat,
the token's expiry or the idle timeout, whichever comes first. Rights are checked at every step.

Memory stays bounded whatever the client does: the hub reads one batch only after the previous one
was handed to gRPC, so a slow client falls behind in Postgres, not in the hub; and a client that
accepts nothing for ``slow_consumer_s`` while a message waits (gRPC's flow control has stopped the
send) is dropped with RESOURCE_EXHAUSTED by a watchdog, with the cursor to resume from. Every end
but a clean one carries that cursor in the trailing metadata ``memhub-resume-cursor``.

A dropped client sees that status after the messages already on their way, when it reads again. Until
then gRPC keeps the call (HTTP/2 queues the status behind the stalled data, and there is no way to
reset one stream from here): the stream stops reading, waking and counting as open at once, but the
agent's stream slot and the one message gRPC holds are given back only when the client reads its end
or its connection closes. A stalled client can thus hold its own agent's slots, never more memory.

The stream's reads are not traced: a stream lives for hours, and a span per poll under its RPC
span would bury the trace. The subscription's open is (its audit rows carry the trace id).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timezone
from typing import Any, TypeVar

import grpc
from sqlalchemy.exc import OperationalError

from memhub.api import convert_feed
from memhub.api.status import abort, status_for
from memhub.auth import TokenVerifier
from memhub.core.model import Caller
from memhub.feed.cursor import RESUME_CURSOR_KEY
from memhub.feed.service import ChangeFeed
from memhub.v1 import changes_pb2 as cpb

log = logging.getLogger(__name__)

T = TypeVar("T")

METHOD = "SubscribeChanges"
DATABASE_GRACE_S = 60.0
"""How long a stream rides out Postgres being unreachable (reads retried every poll) before it ends with UNAVAILABLE."""
_MIN_HELD_BACK_WAIT_S = 0.02


class _Ended(Exception):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code
        self.details = details


def _now() -> datetime:
    return datetime.now(timezone.utc)


class FeedStream:
    """Drives one stream; ``messages`` is what the servicer yields."""

    def __init__(self, feed: ChangeFeed, verifier: TokenVerifier, context: grpc.aio.ServicerContext) -> None:
        self._feed = feed
        self._config = feed.config
        self._verifier = verifier
        self._context = context
        self._resume = ""
        """The cursor of the last message gRPC took (its send completed): the client receives every message up
        to it before any status, so resuming from it misses nothing (the message in flight may come again)."""
        self._blocked_since: float | None = None
        """When the send in progress started (None: none in progress)."""
        self._held = 0
        """Events of the current batch not yet handed to gRPC."""
        self._unregister: Callable[[], None] | None = None

    async def _blocking(self, fn: Callable[..., T], *args: Any) -> T:
        # No copied context: the reads run outside the RPC's span (see the module docstring).
        return await asyncio.get_running_loop().run_in_executor(self._feed.executor, functools.partial(fn, *args))

    async def messages(
        self, caller: Caller, request: cpb.SubscribeChangesRequest, token: str
    ) -> AsyncIterator[cpb.ChangeFeedMessage]:
        try:
            flt, cursor = convert_feed.subscription(request)
            subscription = await self._blocking(self._feed.subscribe, caller, flt, cursor, lambda: self._verifier.verify(token))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a status
            await abort(self._context, *status_for(exc, METHOD))
            raise AssertionError("unreachable: abort raises") from None
        wake = asyncio.Event()
        self._unregister = self._feed.notifier.register(wake)
        watchdog = asyncio.create_task(self._drop_stalled_client())
        self._feed.stream_opened()
        log.debug("change-feed stream opened", extra={"agent": caller.agent_id, "namespaces": list(flt.namespaces)})
        config = self._config
        try:
            self._resume = subscription.cursor
            self._blocked_since = time.monotonic()
            yield convert_feed.heartbeat(self._resume, _now())
            self._blocked_since = None
            last_sent = last_change = time.monotonic()
            held_wait = 0.0
            failing_since: float | None = None
            while True:
                if self._feed.closing:
                    raise _Ended(
                        grpc.StatusCode.UNAVAILABLE,
                        f"the hub is stopping; subscribe again (any replica) with cursor {self._resume}",
                    )
                wake.clear()  # before the read: a notification arriving during it wakes the next wait at once
                delivery = None
                try:
                    delivery = await self._blocking(subscription.step)
                    failing_since = None
                except OperationalError as exc:
                    if failing_since is None:  # once per outage and stream, not once per poll
                        failing_since = time.monotonic()
                        log.warning("change-feed read failed (%s); retrying", str(exc).splitlines()[0])
                    if time.monotonic() - failing_since > DATABASE_GRACE_S:
                        raise _Ended(*status_for(exc, METHOD)) from None
                except Exception as exc:  # noqa: BLE001 - rights lost, cursor pruned, or a bug: a status either way
                    raise _Ended(*status_for(exc, METHOD)) from None
                if delivery is not None:
                    self._hold(len(delivery.changes))
                    for change in delivery.changes:
                        message = convert_feed.change_event(change)
                        self._blocked_since = time.monotonic()
                        yield message
                        self._blocked_since = None
                        self._hold(-1)
                        self._resume = change.cursor
                        last_sent = last_change = time.monotonic()
                    self._resume = delivery.cursor  # everything the batch covered was sent
                    if delivery.full:
                        continue
                now = time.monotonic()
                if now - last_sent >= config.keepalive_s:
                    self._blocked_since = now
                    yield convert_feed.heartbeat(self._resume, _now())
                    self._blocked_since = None
                    last_sent = now = time.monotonic()
                if config.idle_timeout_s and now - last_change >= config.idle_timeout_s:
                    raise _Ended(
                        grpc.StatusCode.DEADLINE_EXCEEDED,
                        f"no change for {config.idle_timeout_s:g} s: idle streams are closed; subscribe again with cursor "
                        f"{self._resume} when needed",
                    )
                timeout = min(config.poll_interval_s, config.keepalive_s - (now - last_sent))
                if config.idle_timeout_s:
                    timeout = min(timeout, config.idle_timeout_s - (now - last_change))
                # Wake when the token expires (the step then ends the stream with UNAUTHENTICATED).
                expiry = subscription.token_expires_at.timestamp() + self._verifier.config.leeway_s - time.time()
                timeout = min(timeout, max(expiry, 0.0) + 0.01)
                if delivery is not None and delivery.held_back:
                    # An older transaction is still running; its end may send no notification (it changed no memory).
                    held_wait = min(max(held_wait * 2, _MIN_HELD_BACK_WAIT_S), config.poll_interval_s)
                    timeout = min(timeout, held_wait)
                else:
                    held_wait = 0.0
                try:
                    await asyncio.wait_for(wake.wait(), max(timeout, 0.0))
                except TimeoutError:
                    pass
        except _Ended as ended:
            await self._end(ended.code, ended.details)
        finally:
            watchdog.cancel()
            self._finish()
            log.debug("change-feed stream closed", extra={"agent": caller.agent_id})

    def _finish(self) -> None:
        """Give back what the stream holds in the feed (once: when it ends, or when its client is dropped)."""
        if self._unregister is None:
            return
        self._unregister()
        self._unregister = None
        self._hold(-self._held)
        self._feed.stream_closed()

    def _hold(self, count: int) -> None:
        self._held += count
        self._feed.hold(count)

    async def _end(self, code: grpc.StatusCode, details: str) -> None:
        if self._resume:
            self._context.set_trailing_metadata(((RESUME_CURSOR_KEY, self._resume),))
        await abort(self._context, code, details)

    async def _drop_stalled_client(self) -> None:
        """End the stream when a send has been waiting for the client longer than slow_consumer_s."""
        limit = self._config.slow_consumer_s
        while True:
            await asyncio.sleep(min(1.0, limit / 4))
            since = self._blocked_since
            if since is not None and time.monotonic() - since >= limit:
                log.warning("dropping a change-feed client that accepted nothing for %g s", limit)
                self._feed.count_dropped()
                self._finish()  # the generator stays parked in its send until the client reads or goes away
                try:
                    await self._end(
                        grpc.StatusCode.RESOURCE_EXHAUSTED,
                        f"this client accepted no message for {limit:g} s while changes waited, so the stream is closed "
                        "(the hub holds at most one batch per stream); subscribe again with the cursor of the last "
                        f"message received, or with {self._resume} (also in the trailing metadata {RESUME_CURSOR_KEY}; "
                        "it may repeat the last message)",
                    )
                except grpc.aio.AbortError:
                    pass
                return
