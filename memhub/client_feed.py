"""Following the change feed from a client, across disconnects and hub restarts.

    with MemhubClient(address, token=token) as hub:
        follower = hub.follow_changes(["teams/research"])   # a FeedFollower
        for message in follower:          # blocks; reconnects by itself
            if message.WhichOneof("message") == "change":
                handle(message.change)     # follower.cursor is where to resume after this one

A stream that ends for a reason retrying can fix (the hub restarting or unreachable, a replica
stopping, the idle timeout, a slow-consumer drop, the agent's stream limit for now) is opened again
from the cursor of the last message received, after a back-off, on the same address (behind a
balancer, any replica). One that retrying cannot fix (rights taken away, the token expired or
revoked, a cursor past the retention, a malformed request) raises the hub's RpcError. Events a
resume delivers again (delivery is at least once) are skipped by their cursor.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import grpc

from memhub.client_feed_progress import RETRYABLE, SEEN_CURSORS, FeedProgress
from memhub.client_stubs import FeedCall
from memhub.v1 import changes_pb2

if TYPE_CHECKING:  # the client imports this module for follow_changes
    from memhub.client import MemhubClient

__all__ = ["RETRYABLE", "SEEN_CURSORS", "FeedFollower"]

log = logging.getLogger(__name__)


class FeedFollower:
    """One subscription followed forever (until ``close`` or an error retrying cannot fix). Iterate it once."""

    def __init__(
        self,
        client: MemhubClient,
        namespaces: Sequence[str] = (),
        *,
        cursor: str = "",
        kinds: Sequence[str] = (),
        types: Sequence[str] = (),
        tags: Sequence[str] = (),
        changes: Sequence[str] = (),
        on_retry: Callable[[grpc.RpcError, float], None] | None = None,
        max_backoff_s: float = 10.0,
    ) -> None:
        """``on_retry(error, wait_s)`` is told of each retryable end before the wait (to log or print it)."""
        self._client = client
        self._namespaces = list(namespaces)
        self._filters = (kinds, types, tags, changes)
        self._progress = FeedProgress(cursor, max_backoff_s)
        self._on_retry = on_retry
        self._closed = threading.Event()
        self._call: FeedCall | None = None
        self.reconnects = 0

    def close(self) -> None:
        """Stop following (from any thread): the iteration ends."""
        self._closed.set()
        call = self._call
        if call is not None:
            call.cancel()

    @property
    def cursor(self) -> str:
        """The cursor of the last message received: resuming from it (another process, later) misses nothing."""
        return self._progress.cursor

    def __iter__(self) -> Iterator[changes_pb2.ChangeFeedMessage]:
        while not self._closed.is_set():
            kinds, types, tags, changes = self._filters
            call = self._call = self._client.subscribe_changes(
                self._namespaces, cursor=self.cursor, kinds=kinds, types=types, tags=tags, changes=changes
            )
            try:
                for message in call:
                    if self._progress.accept(message):
                        yield message
                return  # the hub ended the stream without an error: it has nothing more to say
            except grpc.RpcError as exc:
                if self._closed.is_set():
                    return
                wait = self._progress.retry_wait(exc.code())
                if wait is None:
                    raise
                if self._on_retry is not None:
                    self._on_retry(exc, wait)
                self.reconnects += 1
                if self._closed.wait(wait):
                    return
            finally:
                self._call = None
