"""Following the change feed from a client, across disconnects and hub restarts.

    with MemhubClient(address, token=token) as hub:
        follower = FeedFollower(hub, ["teams/research"])
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
import random
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence

import grpc

from memhub.client import MemhubClient
from memhub.client_stubs import FeedCall
from memhub.v1 import changes_pb2

log = logging.getLogger(__name__)

RETRYABLE = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.CANCELLED,  # a connection reset mid-stream (not our own cancel: that ends iteration)
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.ABORTED,
    }
)
SEEN_CURSORS = 4096
"""Cursors of recent events remembered to skip repeats; a resume repeats at most a few."""


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
        self.cursor = cursor
        """The cursor of the last message received: resuming from it (another process, later) misses nothing."""
        self._on_retry = on_retry
        self._max_backoff = max_backoff_s
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._closed = threading.Event()
        self._call: FeedCall | None = None
        self.reconnects = 0

    def close(self) -> None:
        """Stop following (from any thread): the iteration ends."""
        self._closed.set()
        call = self._call
        if call is not None:
            call.cancel()

    def __iter__(self) -> Iterator[changes_pb2.ChangeFeedMessage]:
        backoff = 0.5
        while not self._closed.is_set():
            kinds, types, tags, changes = self._filters
            call = self._call = self._client.subscribe_changes(
                self._namespaces, cursor=self.cursor, kinds=kinds, types=types, tags=tags, changes=changes
            )
            try:
                for message in call:
                    backoff = 0.5  # the stream works again
                    if message.WhichOneof("message") == "heartbeat":
                        self.cursor = message.heartbeat.cursor
                        yield message
                        continue
                    cursor = message.change.cursor
                    if cursor in self._seen:
                        continue  # a repeat after a resume
                    self._remember(cursor)
                    self.cursor = cursor
                    yield message
                return  # the hub ended the stream without an error: it has nothing more to say
            except grpc.RpcError as exc:
                if self._closed.is_set():
                    return
                if exc.code() not in RETRYABLE:
                    raise
                wait = random.uniform(backoff / 2, backoff)
                if self._on_retry is not None:
                    self._on_retry(exc, wait)
                self.reconnects += 1
                if self._closed.wait(wait):
                    return
                backoff = min(backoff * 2, self._max_backoff)
            finally:
                self._call = None

    def _remember(self, cursor: str) -> None:
        self._seen[cursor] = None
        while len(self._seen) > SEEN_CURSORS:
            self._seen.popitem(last=False)
