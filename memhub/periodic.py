"""One background thread that calls a function every interval until stopped: the loop the hub's
batchers and folders (recall counts, aggregated audit events, storage-usage deltas) share."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from memhub import outage_log


class Periodic:
    """Calls ``step`` every ``interval_s`` on a daemon thread; a failing step is logged and retried next time."""

    def __init__(self, step: Callable[[], object], interval_s: float, name: str, log: logging.Logger, failure: str) -> None:
        """``failure``: what the log says when a step raises (the traceback follows)."""
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self._step = step
        self._interval = interval_s
        self._name = name
        self._log = log
        self._failure = failure
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # A failing store is logged once per outage, not once per step (memhub/outage_log.py).
        self._site = outage_log.Site(name, log, depends=())

    def start(self) -> None:
        """Start the thread (again, after stop()); a running one is left alone."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the thread, waiting up to ``timeout_s`` for a step under way. The caller does any final step."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._step()
            except Exception as exc:
                self._site.failed(exc, self._failure)
            else:
                self._site.ok()
