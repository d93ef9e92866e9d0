"""The ids of the tokens the hub accepts, with their first and last use, recorded without a write per call.

The verifier calls ``seen`` for every call it lets in; that only updates a dictionary in memory (one lock,
no I/O). Every ``interval_s`` a background thread writes what it holds in one upsert
(memhub/auth/token_records.py), so a hub serving a thousand calls a second writes one statement every
few seconds, and a token's last use is exact to that interval. At most ``max_pending`` distinct tokens
are held between two flushes; the ones beyond are counted and left for a later interval (a token in use
is seen again), so an issuer that mints a token per call costs bounded memory and bounded work.

Tokens without an id (jti) are not recorded: nothing could list or revoke them by id.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone

from memhub.auth.token_records import Sighting, TokenRecords
from memhub.auth.verifier import Identity
from memhub.periodic import Periodic

log = logging.getLogger(__name__)

FLUSH_INTERVAL_S = 5.0
MAX_PENDING = 10_000
PURGE_INTERVAL_S = 3600.0


class _Held:
    """One token's uses since the last flush (mutable: a repeated use only moves ``last``)."""

    __slots__ = ("identity", "first", "last")

    def __init__(self, identity: Identity, first: float, last: float) -> None:
        self.identity = identity
        self.first = first
        self.last = last

    def sighting(self) -> Sighting:
        i = self.identity
        at = datetime.fromtimestamp
        return Sighting(i.token_id, i.agent_id, i.groups, i.expires_at, at(self.first, timezone.utc), at(self.last, timezone.utc))


class TokenUseRecorder:
    def __init__(self, records: TokenRecords, *, interval_s: float = FLUSH_INTERVAL_S, max_pending: int = MAX_PENDING) -> None:
        self._records = records
        self._max_pending = max_pending
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._pending: dict[str, _Held] = {}
        self._skipped = 0
        self._last_purge = 0.0
        self._periodic = Periodic(self._step, interval_s, "memhub-token-use", log, "could not record token uses; will retry")

    def seen(self, identity: Identity) -> None:
        """One accepted call made with ``identity``'s token (the request path: memory only, a few microseconds)."""
        if not identity.token_id:
            return
        now = time.time()
        with self._lock:
            held = self._pending.get(identity.token_id)
            if held is not None:
                held.last = now
            elif len(self._pending) < self._max_pending:
                self._pending[identity.token_id] = _Held(identity, now, now)
            else:
                self._skipped += 1

    @property
    def skipped(self) -> int:
        """Uses not held because ``max_pending`` tokens were already waiting (since start)."""
        with self._lock:
            return self._skipped

    def flush(self) -> int:
        """Write the uses held so far; returns the rows written. On failure they are kept for the next try."""
        with self._flush_lock:
            with self._lock:
                batch, self._pending = self._pending, {}
            try:
                return self._records.record_uses([held.sighting() for held in batch.values()])
            except Exception:
                with self._lock:  # merge back what arrived meanwhile, keeping the earliest first use
                    for token_id, old in batch.items():
                        new = self._pending.get(token_id)
                        if new is not None:
                            old.last = max(old.last, new.last)
                        self._pending[token_id] = old
                raise

    def _step(self) -> None:
        self.flush()
        now = time.time()
        if now - self._last_purge >= PURGE_INTERVAL_S:
            self._last_purge = now
            self._records.purge_expired()

    def start(self) -> None:
        self._periodic.start()

    def stop(self) -> None:
        """Stop the thread and write what is held."""
        self._periodic.stop()
        try:
            self.flush()
        except Exception as exc:
            log.warning("could not record the last token uses at shutdown: %s", exc)
