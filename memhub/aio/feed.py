"""Following the change feed from asyncio, across disconnects and hub restarts (memhub/client_feed.py's
FeedFollower for an event loop).

    async with AsyncMemhubClient(address, token=token) as hub:
        async for message in hub.follow_changes(["teams/research"]):   # an AsyncFeedFollower
            if message.WhichOneof("message") == "change":
                handle(message.change)

Retries, the back-off and skipping redelivered events are the synchronous follower's (FeedProgress): a stream
that ends for a reason retrying can fix is opened again from the last cursor; any other end raises the hub's
AioRpcError. Cancel the task iterating it, or call ``close()``, to stop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING

import grpc

from memhub.client_feed_progress import FeedProgress
from memhub.v1 import changes_pb2

if TYPE_CHECKING:  # the client imports this module for follow_changes
    from memhub.aio.client import AioFeedCall, AsyncMemhubClient


class AsyncFeedFollower:
    """One subscription followed until ``close()``, cancellation or an error retrying cannot fix. Iterate it once."""

    def __init__(
        self,
        client: AsyncMemhubClient,
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
        self._closed = asyncio.Event()
        self._call: AioFeedCall | None = None
        self.reconnects = 0

    @property
    def cursor(self) -> str:
        """The cursor of the last message received: resuming from it (another process, later) misses nothing."""
        return self._progress.cursor

    def close(self) -> None:
        """Stop following: the iteration ends."""
        self._closed.set()
        if self._call is not None:
            self._call.cancel()

    def __aiter__(self) -> AsyncIterator[changes_pb2.ChangeFeedMessage]:
        return self._follow()

    async def _follow(self) -> AsyncIterator[changes_pb2.ChangeFeedMessage]:
        while not self._closed.is_set():
            kinds, types, tags, changes = self._filters
            call = self._call = self._client.subscribe_changes(
                self._namespaces, cursor=self.cursor, kinds=kinds, types=types, tags=tags, changes=changes
            )
            try:
                async for message in call:
                    if self._progress.accept(message):
                        yield message
                return  # the hub ended the stream without an error: it has nothing more to say
            except asyncio.CancelledError:
                # grpc.aio reports a call cancelled by close() as cancellation; a task's own cancellation goes on.
                if self._closed.is_set():
                    return
                raise
            except grpc.RpcError as exc:
                if self._closed.is_set():
                    return
                wait = self._progress.retry_wait(exc.code())
                if wait is None:
                    raise
                if self._on_retry is not None:
                    self._on_retry(exc, wait)
                self.reconnects += 1
                try:
                    await asyncio.wait_for(self._closed.wait(), wait)
                    return
                except TimeoutError:
                    pass
            finally:
                call.cancel()  # a consumer that stops iterating (break, cancellation) must not leave the stream open
                self._call = None
