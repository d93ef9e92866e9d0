"""Whether the retrieval index answers right now, shared by searches, the indexer and the health monitor.

A search that finds Milvus unreachable marks it down; while it is down,
searches skip Milvus (answering from Postgres, marked degraded) instead of
each waiting out a timeout, and the health monitor probes it until it
answers again. Listeners (the gRPC health service) hear every change.

Separately, the index may answer but fail to keep what it answers with: an
embedded Milvus Lite on a full disk serves rows it never wrote to its file
(memhub/index/lite_durability.py), so they would vanish at the next start.
Searches still use it (it is right until then), but ``healthy`` is false,
health says NOT_SERVING and GetIndexHealth says why, until the rows are
written again (the indexer re-queues them; a restart's reconciliation
re-indexes them from Postgres).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from memhub import outage_log
from memhub.index.errors import IndexUnavailable

log = logging.getLogger(__name__)

Listener = Callable[[bool, str], None]


class IndexHealth:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._reason = ""
        self._listeners: list[Listener] = []
        self._changed = threading.Event()
        self._not_durable = ""

    @property
    def ok(self) -> bool:
        """The index answers (searches may use it)."""
        return self._down_since is None

    @property
    def healthy(self) -> bool:
        """It answers and keeps what it answers with: what health checks report."""
        return self._down_since is None and not self._not_durable

    @property
    def reason(self) -> str:
        """Why the index is down or not durable ("" when it is healthy)."""
        return self._reason or self._not_durable

    def mark_not_durable(self, reason: str) -> None:
        """The index serves rows it did not persist (``reason`` says how many and why); logged once per episode."""
        with self._lock:
            first = not self._not_durable
            self._not_durable = reason
            listeners = list(self._listeners) if first else []
        if first:
            log.error("retrieval index is not durable: %s", reason)
            self._changed.set()
        for listener in listeners:
            listener(self.ok, reason)

    def mark_durable(self) -> None:
        with self._lock:
            if not self._not_durable:
                return
            self._not_durable = ""
            listeners = list(self._listeners)
        log.warning("retrieval index persists its rows again")
        self._changed.set()
        for listener in listeners:
            listener(self.ok, self.reason)

    def down_for_s(self) -> float:
        since = self._down_since
        return 0.0 if since is None else time.monotonic() - since

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener(ok, reason)`` now and on every change."""
        with self._lock:
            self._listeners.append(listener)
            ok, reason = self.ok, self._reason
        listener(ok, reason)

    def mark_down(self, reason: str) -> None:
        with self._lock:
            if self._down_since is not None:
                return
            self._down_since = time.monotonic()
            self._reason = reason
            listeners = list(self._listeners)
        outage_log.outage("milvus").failed(IndexUnavailable(reason), "index health", log)
        self._changed.set()
        for listener in listeners:
            listener(False, reason)

    def mark_up(self) -> None:
        with self._lock:
            if self._down_since is None:
                return
            down = time.monotonic() - self._down_since
            self._down_since = None
            self._reason = ""
            listeners = list(self._listeners)
        log.info("retrieval index answers again (it was down for %.1f s)", down)
        outage_log.outage("milvus").ok("index health", log)
        self._changed.set()
        for listener in listeners:
            listener(True, "")

    def wake(self) -> None:
        """End a ``wait_change`` early (used when stopping)."""
        self._changed.set()

    def wait_change(self, timeout_s: float) -> None:
        """Sleep until the state changes or ``timeout_s`` passes (the monitor probes at once after a search saw a failure)."""
        self._changed.wait(timeout_s)
        self._changed.clear()
