"""The current policy engine, reloaded without a restart.

`PolicyStore` loads the policy directory at construction (an invalid set
raises PolicyError: the hub refuses to start rather than run open or closed).
Afterwards:

- `reload()` (the admin RPC) re-reads the files; if their version changed it
  builds and validates a new engine and swaps it in atomically. An invalid new
  set raises PolicyError and the previous engine stays in force: never fail
  open, never fail closed by surprise.
- `start()` runs a daemon thread that polls every `poll_interval_s`: it
  re-reads and hashes the files (they are small) and reloads when the hash
  differs from the current version. Hashing content rather than comparing
  mtimes catches same-second, same-size edits and ignores `touch`. A set that
  failed to load is logged once and not retried until the files change again
  (an editor saving half a file is fixed by its next save).

Every successful reload and every refused one is logged.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memhub.policy.engine import PolicyEngine
from memhub.policy.model import DEFAULT_CACHE_SIZE, PolicyError
from memhub.policy.sources import read_sources

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReloadResult:
    """changed: a new engine is now in force; version: the version in force; previous_version: the one before."""

    changed: bool
    version: str
    previous_version: str = ""


class PolicyStore:
    """Holds the current PolicyEngine for a policy directory and reloads it when the files change."""

    def __init__(
        self,
        directory: Path | str,
        files: Sequence[str] | None = None,
        poll_interval_s: float = 2.0,
        *,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        self.directory = Path(directory)
        self.files = list(files) if files is not None else None
        self.poll_interval_s = poll_interval_s
        self.cache_size = cache_size
        self._lock = threading.Lock()
        self._engine = PolicyEngine.from_dir(self.directory, files=self.files, cache_size=cache_size)
        self._failed_version: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        log.info("policies loaded", extra=self._describe(self._engine))

    def current(self) -> PolicyEngine:
        """The engine in force (a plain attribute read: safe from any thread)."""
        return self._engine

    def reload(self) -> ReloadResult:
        """Re-read the directory; swap in a new engine if the files changed. Raises PolicyError (old engine kept)."""
        with self._lock:
            old = self._engine
            try:
                sources = read_sources(self.directory, self.files)
                if sources.version == old.version:
                    return ReloadResult(changed=False, version=old.version, previous_version=old.version)
                engine = PolicyEngine(sources, cache_size=self.cache_size)
            except PolicyError as exc:
                log.error(
                    "policy reload refused; keeping the policies in force",
                    extra={"policy_version": old.version, "errors": exc.errors},
                )
                raise PolicyError(
                    [*exc.errors, f"the policies in force are unchanged (version {old.version[:12]})"], source=exc.source
                ) from None
            self._engine = engine
            self._failed_version = None
        log.info("policies reloaded", extra={**self._describe(engine), "previous_version": old.version})
        return ReloadResult(changed=True, version=engine.version, previous_version=old.version)

    def poll_once(self) -> ReloadResult | None:
        """One step of the background watcher: reload if the files changed. Returns None when nothing was done."""
        try:
            version = read_sources(self.directory, self.files).version
        except PolicyError as exc:
            version = "unreadable:" + "|".join(exc.errors)
        if version == self._engine.version or version == self._failed_version:
            return None
        try:
            return self.reload()
        except PolicyError:
            self._failed_version = version  # logged by reload(); wait for the next edit
            return None

    def start(self) -> None:
        """Start the background watcher (idempotent)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="policy-watcher", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop the background watcher and wait for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.poll_interval_s):
            try:
                self.poll_once()
            except Exception:  # the watcher must survive anything (e.g. a vanished directory)
                log.exception("policy watcher error")

    @staticmethod
    def _describe(engine: PolicyEngine) -> dict:
        return {
            "policy_version": engine.version,
            "policy_dir": str(engine.directory),
            "policy_files": list(engine.files),
            "policy_ids": list(engine.policy_ids),
        }
