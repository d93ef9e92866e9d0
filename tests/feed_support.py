"""Reading a SubscribeChanges stream in tests: a thread pumps the real gRPC stream into a queue."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from typing import Any

import grpc
import pytest

from memhub.client import MemhubClient, change_name
from memhub.v1 import changes_pb2 as cpb

WAIT_S = 60.0
"""How long a test waits for a message before it fails (the machine is shared and slow at times)."""


class Watcher:
    """One open stream; messages arrive in order, the stream's end (an RpcError) last."""

    def __init__(self, client: MemhubClient, namespaces: Sequence[str] = (), **options: Any) -> None:
        self.call = client.subscribe_changes(namespaces, **options)
        self._queue: queue.Queue[cpb.ChangeFeedMessage | BaseException | None] = queue.Queue()
        self.received: list[cpb.ChangeFeedMessage] = []
        self._thread = threading.Thread(target=self._pump, name="feed-watcher", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        try:
            for message in self.call:
                self._queue.put(message)
            self._queue.put(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self._queue.put(exc)

    def next(self, timeout_s: float = WAIT_S) -> cpb.ChangeFeedMessage:
        """The next message; fails the test when the stream ended or nothing came in time."""
        try:
            item = self._queue.get(timeout=timeout_s)
        except queue.Empty:
            pytest.fail(f"no change-feed message within {timeout_s:g} s")
        if item is None or isinstance(item, BaseException):
            pytest.fail(f"the stream ended instead: {item!r}")
        self.received.append(item)
        return item

    def started(self) -> str:
        """Wait for the first message (a heartbeat); its cursor."""
        first = self.next()
        assert first.WhichOneof("message") == "heartbeat", first
        return first.heartbeat.cursor

    def change(self, timeout_s: float = WAIT_S) -> cpb.ChangeEvent:
        """The next change event, skipping heartbeats."""
        deadline = time.monotonic() + timeout_s
        while True:
            message = self.next(max(deadline - time.monotonic(), 0.01))
            if message.WhichOneof("message") == "change":
                return message.change

    def changes(self, count: int, timeout_s: float = WAIT_S) -> list[cpb.ChangeEvent]:
        return [self.change(timeout_s) for _ in range(count)]

    def until(self, memory_ids: set[str], timeout_s: float = WAIT_S) -> list[cpb.ChangeEvent]:
        """Change events until every id in ``memory_ids`` was seen at least once; all of them, in order."""
        pending, seen = set(memory_ids), []
        while pending:
            event = self.change(timeout_s)
            seen.append(event)
            pending.discard(event.memory.id)
        return seen

    def ended(self, timeout_s: float = WAIT_S) -> grpc.RpcError:
        """Wait for the stream to end with an error, skipping any messages; the error."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                item = self._queue.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                pytest.fail(f"the stream did not end within {timeout_s:g} s")
            if isinstance(item, grpc.RpcError):
                return item
            if item is None:
                pytest.fail("the stream ended without an error")
            if isinstance(item, BaseException):
                raise item
            self.received.append(item)

    def quiet(self, seconds: float) -> list[cpb.ChangeFeedMessage]:
        """Whatever arrives within ``seconds`` (to show that something does NOT arrive)."""
        out = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                item = self._queue.get(timeout=left)
            except queue.Empty:
                break
            if isinstance(item, cpb.ChangeFeedMessage):
                out.append(item)
                self.received.append(item)
            else:
                self._queue.put(item)  # leave the end for ended()
                break
        return out

    def close(self) -> None:
        self.call.cancel()
        self._thread.join(10)

    def __enter__(self) -> Watcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def kinds(events: Sequence[cpb.ChangeEvent]) -> list[tuple[str, str]]:
    """(change, memory id) of each event."""
    return [(change_name(e.change), e.memory.id) for e in events]
