"""Where a followed change feed stands: the cursor to resume from, the events already delivered, the back-off.

Shared by the synchronous follower (memhub/client_feed.py, a thread blocking on a stream) and the asyncio one
(memhub/aio/feed.py), which differ only in how they wait and read.
"""

from __future__ import annotations

import random
from collections import OrderedDict

import grpc

from memhub.v1 import changes_pb2

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
"""Ends of a stream that opening it again can fix: the hub restarting or unreachable, a replica stopping, the
idle timeout, a slow-consumer drop, the agent's stream limit for now. Any other end (rights taken away, the
token expired or revoked, a cursor past the retention, a malformed request) is the caller's to handle."""

SEEN_CURSORS = 4096
"""Cursors of recent events remembered to skip repeats; a resume repeats at most a few."""

FIRST_BACKOFF_S = 0.5


class FeedProgress:
    """The cursor of the last message passed on, the recent events' cursors and the next wait before a retry."""

    def __init__(self, cursor: str = "", max_backoff_s: float = 10.0) -> None:
        self.cursor = cursor
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._backoff = FIRST_BACKOFF_S
        self._max_backoff = max_backoff_s

    def accept(self, message: changes_pb2.ChangeFeedMessage) -> bool:
        """Record ``message``; False when it is an event already passed on (delivery is at least once)."""
        self._backoff = FIRST_BACKOFF_S  # the stream works again
        if message.WhichOneof("message") == "heartbeat":
            self.cursor = message.heartbeat.cursor
            return True
        cursor = message.change.cursor
        if cursor in self._seen:
            return False
        self._seen[cursor] = None
        while len(self._seen) > SEEN_CURSORS:
            self._seen.popitem(last=False)
        self.cursor = cursor
        return True

    def retry_wait(self, code: grpc.StatusCode) -> float | None:
        """Seconds to wait before opening the stream again after it ended with ``code``; None: do not retry."""
        if code not in RETRYABLE:
            return None
        wait = random.uniform(self._backoff / 2, self._backoff)
        self._backoff = min(self._backoff * 2, self._max_backoff)
        return wait
