"""When a reader of the feed stops waiting for the whole server's oldest transaction (memhub/db/changes.py).

Held back for a moment is normal (a write commits while an older one is still running); held back for
longer than ``SCOPED_AFTER_S`` usually means a transaction left open somewhere, perhaps in another
database. Then reads use this database's own bound until nothing is held back any more.
"""

from __future__ import annotations

import time

SCOPED_AFTER_S = 1.0


class HoldBack:
    """Tracks one reader's held-back time; not thread-safe (one reader uses it)."""

    def __init__(self) -> None:
        self._since: float | None = None

    @property
    def scoped(self) -> bool:
        """Read with this database's own bound (costs a pg_locks scan per read)."""
        return self._since is not None and time.monotonic() - self._since > SCOPED_AFTER_S

    def saw(self, held_back: bool) -> None:
        if not held_back:
            self._since = None
        elif self._since is None:
            self._since = time.monotonic()
