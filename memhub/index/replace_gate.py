"""Searches never run while a row they could return is being replaced.

Milvus Lite 2.5.1 carries out an upsert of a row it already holds as a delete
followed by an insert, and a search that runs between the two does not see
the row: with 300 rows re-upserted in a loop, 40% of concurrent searches for
one of them missed it (``tests/test_index_replace.py`` reproduces it). The hub
replaces rows in normal operation: a turn's keyword context changes when the
next turn of its session arrives (memhub/db/context.py), rows Lite failed to
persist are written again (memhub/core/indexer.py), and ``memhub reindex``
applies recent changes again after the switch. Without this gate, the turn
before the one just written would vanish from search for the length of an
upsert.

So in one process a replacing upsert takes the gate alone and searches share
it. Writers go first: a search that arrives while a replacement waits, waits
behind it, so a steady stream of searches cannot starve the indexer. Writes
of rows the index does not hold yet need no gate (nothing can be missed).
A search waits at most ``timeout_s`` and then runs anyway: a replacement that
hangs (the engine restarting) must not hold every search with it, and a
search that might miss the one row being replaced beats no answer.

It guards one process. Other processes writing to the same collection (hub
replicas sharing a Milvus server) are not covered; ``memhub reindex`` skips
rows that did not change (memhub/core/index_rebuild.py) so it replaces only
what must be.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class ReplaceGate:
    """A writer-preferring shared/exclusive lock: ``search()`` is shared, ``replace()`` exclusive."""

    def __init__(self, timeout_s: float) -> None:
        self._timeout_s = timeout_s
        self._cond = threading.Condition()
        self._searching = 0
        self._replacing = False
        self._waiting_replacements = 0

    @contextmanager
    def search(self) -> Iterator[bool]:
        """Hold the gate shared for one search; yields False if it ran without it after waiting ``timeout_s``."""
        deadline = time.monotonic() + self._timeout_s
        with self._cond:
            while self._replacing or self._waiting_replacements:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            gated = not (self._replacing or self._waiting_replacements)
            if gated:
                self._searching += 1
        try:
            yield gated
        finally:
            if gated:
                with self._cond:
                    self._searching -= 1
                    if not self._searching:
                        self._cond.notify_all()

    @contextmanager
    def replace(self) -> Iterator[None]:
        """Hold the gate alone while rows the index holds are replaced; waits for running searches to end."""
        with self._cond:
            self._waiting_replacements += 1
            try:
                while self._replacing or self._searching:
                    self._cond.wait()
            finally:
                self._waiting_replacements -= 1
            self._replacing = True
        try:
            yield
        finally:
            with self._cond:
                self._replacing = False
                self._cond.notify_all()
