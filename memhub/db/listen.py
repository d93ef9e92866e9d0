"""Waiting for Postgres notifications in a way a stop ends at once.

The hub's LISTEN threads (the indexer's outbox, the revocation list, the change feed) used to wait in
``conn.notifies(timeout=1.0)`` and look at their stop flag between waits, so each held a hub's shutdown for
up to a second: a stopped `memhub serve` took ~3 s in its listeners alone. Here a stop is a byte on a pipe
that the same ``select`` watches, so a listener returns the moment its hub stops, and waits as long as it
likes otherwise.
"""

from __future__ import annotations

import os
import select
import threading
import weakref

import psycopg

IDLE_WAIT_S = 60.0
"""Longest single wait: a listener wakes this often with nothing to do (to notice a stop even without the pipe)."""


class WakeableEvent(threading.Event):
    """A threading.Event whose ``set`` also makes ``fileno()`` readable, so ``select`` can wait for it."""

    def __init__(self) -> None:
        super().__init__()
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)
        weakref.finalize(self, _close, self._read, self._write)

    def fileno(self) -> int:
        return self._read

    def set(self) -> None:
        super().set()
        try:
            os.write(self._write, b"x")
        except BlockingIOError:  # the pipe is full of earlier wake-ups: it is readable already
            pass

    def clear(self) -> None:
        super().clear()
        try:
            while os.read(self._read, 4096):
                pass
        except BlockingIOError:
            pass


def next_notifications(conn: psycopg.Connection, stop: WakeableEvent, timeout_s: float | None = IDLE_WAIT_S) -> int:
    """How many notifications arrived on ``conn`` (a LISTENing autocommit connection), waiting up to ``timeout_s``
    for the first (None: for ever); 0 when none came or ``stop`` is set (at once, whichever thread sets it)."""
    # Those already received (with the reply to an earlier statement, or read by libpq) first: select would not
    # see them, as they are no longer on the socket. A zero timeout polls without blocking.
    waiting = sum(1 for _ in conn.notifies(timeout=0))
    if waiting or stop.is_set():
        return waiting
    ready, _, _ = select.select([conn.fileno(), stop.fileno()], [], [], timeout_s)
    if conn.fileno() not in ready:
        return 0
    return sum(1 for _ in conn.notifies(timeout=0))


def _close(*fds: int) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass
