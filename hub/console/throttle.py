"""A bound on failed sign-ins per console process, so the sign-in form cannot be used to guess tokens fast
(the hub also audits every refused token, aggregated per client address)."""

from __future__ import annotations

import threading
import time
from collections import deque


class FailureWindow:
    def __init__(self, limit: int = 20, window_s: float = 60.0) -> None:
        self._limit = limit
        self._window = window_s
        self._times: deque[float] = deque()
        self._lock = threading.Lock()

    def blocked(self) -> bool:
        with self._lock:
            self._expire()
            return len(self._times) >= self._limit

    def record(self) -> None:
        with self._lock:
            self._expire()
            self._times.append(time.monotonic())

    def _expire(self) -> None:
        cutoff = time.monotonic() - self._window
        while self._times and self._times[0] < cutoff:
            self._times.popleft()
