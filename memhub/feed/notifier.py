"""Waking the feed when any replica commits a change: LISTEN memhub_changes on one connection per hub.

The triggers send ``NOTIFY memhub_changes`` in the changing transaction, so Postgres delivers it at
commit, to every listening session of every replica. A notification carries nothing: it only says
"read the table again" (the table is the truth, and a notification can be lost while the listener
reconnects, which is why streams also poll, ChangeFeedConfig.poll_interval_s). After a reconnect
every subscriber is woken, since notifications sent meanwhile were lost.

A notification goes to ``on_notify`` (the feed's tail, memhub/feed/tail.py, which reads the new changes
once for the whole hub); the streams wait on asyncio events on the gRPC server's loop, which
``wake_all`` sets with ``call_soon_threadsafe`` once there is something new to take.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable

import psycopg

from memhub import outage_log
from memhub.db.listen import WakeableEvent, next_notifications

log = logging.getLogger(__name__)
_LISTENER = outage_log.Site("change-feed listener", log)  # one line per outage (memhub/outage_log.py)

CHANNEL = "memhub_changes"


class ChangeNotifier:
    """One LISTEN connection, fanned out to every open stream of this process."""

    def __init__(self, listen_url: str | None, on_notify: Callable[[], None] = lambda: None) -> None:
        """``listen_url``: a libpq URL; None listens to nothing (the feed then relies on polling alone).
        ``on_notify``: called from the listener thread at every notification and after every reconnect."""
        self._url = listen_url
        self._on_notify = on_notify
        self._waiters: dict[object, tuple[asyncio.AbstractEventLoop, asyncio.Event]] = {}
        self._lock = threading.Lock()
        self._stop = WakeableEvent()  # a stop wakes the listener at once (memhub/db/listen.py)
        self._listening = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def listening(self) -> bool:
        return self._listening.is_set()

    def register(self, event: asyncio.Event) -> Callable[[], None]:
        """Set ``event`` (on the calling loop) at every notification; returns the function that stops it."""
        key = object()
        with self._lock:
            self._waiters[key] = (asyncio.get_running_loop(), event)

        def unregister() -> None:
            with self._lock:
                self._waiters.pop(key, None)

        return unregister

    def wake_all(self) -> None:
        """Wake every subscriber now (a notification arrived, the listener reconnected, or the hub is stopping)."""
        with self._lock:
            waiters = list(self._waiters.values())
        for loop, event in waiters:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:  # that loop is closed: the server has stopped
                pass

    def start(self) -> None:
        if self._url is None or (self._thread is not None and self._thread.is_alive()):
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._listen, name="memhub-changes-listen", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def _listen(self) -> None:
        backoff = 0.5
        while not self._stop.is_set():
            try:
                with psycopg.connect(
                    self._url,  # type: ignore[arg-type]  # set whenever this thread runs
                    autocommit=True,
                    connect_timeout=5,
                    application_name="memhub-changes",
                ) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    _LISTENER.ok()
                    self._listening.set()
                    self._on_notify()  # whatever was committed while we were not listening
                    backoff = 0.5
                    while not self._stop.is_set():
                        if next_notifications(conn, self._stop):
                            self._on_notify()
            except Exception as exc:  # Postgres restarting: streams poll meanwhile
                _LISTENER.failed(exc, "change-feed listener lost its connection; reconnecting")
            finally:
                self._listening.clear()
            self._stop.wait(backoff)
            backoff = min(backoff * 2, 10.0)
