"""Revoked token ids: stored in Postgres, answered from memory on every call.

Each hub replica keeps the unexpired revoked jtis in a frozenset that a
background thread reloads every `refresh_interval_s` and immediately when a
`NOTIFY memhub_revocations` arrives (revoke() sends one at commit). So
is_revoked() does no I/O on the request path, and a revocation made on one
replica is effective on all of them within about one round trip, or one
refresh interval if notifications are lost (e.g. while Postgres restarts).

Rows are kept for `grace_s` after the token's own expiry: the verifier
accepts a token up to its leeway past `exp`, and a revoked token must stay
refused for that whole time.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import psycopg
from sqlalchemy import Engine, Interval, bindparam, delete, func, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert

from memhub import outage_log
from memhub.auth.config import MAX_LEEWAY_S
from memhub.auth.names import TOKEN_ID_RULE, is_token_id
from memhub.db.listen import WakeableEvent, next_notifications
from memhub.db.schema import revoked_tokens

log = logging.getLogger(__name__)
_LISTENER = outage_log.Site("revocation listener", log)  # one line per outage (memhub/outage_log.py)

CHANNEL = "memhub_revocations"
"""The Postgres NOTIFY channel; the payload is the revoked jti (listeners reload everything anyway)."""

MAX_LIST = 1000


@dataclass(frozen=True)
class RevokedToken:
    """One row of revoked_tokens."""

    jti: str
    agent_id: str
    expires_at: datetime
    revoked_at: datetime
    revoked_by: str
    reason: str


# `RevocationList.list` shadows the builtin inside the class body; name the return type out here.
RevokedTokens = list[RevokedToken]


class RevocationList:
    """The set of revoked, unexpired token ids, shared by every replica through Postgres."""

    def __init__(
        self,
        engine: Engine,
        refresh_interval_s: float = 2.0,
        *,
        grace_s: float = 2 * MAX_LEEWAY_S,
        purge_interval_s: float | None = 3600.0,
        listen: bool = True,
    ) -> None:
        """`engine`: a postgresql+psycopg engine. `grace_s` must exceed the verifier's leeway.

        `purge_interval_s` runs purge_expired() from the background thread
        (None: never; several replicas doing it is harmless). `listen=False`
        skips LISTEN and relies on polling alone.
        """
        if refresh_interval_s <= 0:
            raise ValueError("refresh_interval_s: must be positive")
        if grace_s < MAX_LEEWAY_S:
            raise ValueError(f"grace_s: must be at least {MAX_LEEWAY_S:g} (the largest allowed leeway)")
        self._engine = engine
        self._interval = float(refresh_interval_s)
        self._grace = timedelta(seconds=grace_s)
        self._purge_interval = purge_interval_s
        self._listen_url = (
            engine.url.render_as_string(hide_password=False).replace("postgresql+psycopg://", "postgresql://") if listen else None
        )
        # Replaced, never mutated: readers on the request path take no lock.
        self._revoked: frozenset[str] = frozenset()
        # Revoked here but not yet seen in a refresh: a refresh that read the table just before our
        # commit must not drop them (jti -> token expiry).
        self._local: dict[str, datetime] = {}
        self._lock = threading.Lock()
        self._stop = WakeableEvent()  # a stop wakes the listener at once (memhub/db/listen.py)
        self._wake = threading.Event()
        self._listening = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- the request path --------------------------------------------------------

    def is_revoked(self, jti: str) -> bool:
        """True if `jti` was revoked (as of the last refresh or a local revoke). Memory only."""
        return jti in self._revoked

    # -- background ----------------------------------------------------------------

    def start(self) -> None:
        """Load the list now (errors propagate: never serve with an unknown list), then keep it fresh."""
        if self._threads:
            return
        self.refresh()
        self._stop.clear()
        self._threads = [threading.Thread(target=self._run, name="memhub-revocations", daemon=True)]
        if self._listen_url:
            self._threads.append(threading.Thread(target=self._listen, name="memhub-revocations-listen", daemon=True))
        for thread in self._threads:
            thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the background threads (the in-memory list stays as it was)."""
        self._stop.set()
        self._wake.set()
        for thread in self._threads:
            thread.join(timeout_s)
        self._threads = []

    @property
    def listening(self) -> bool:
        """True while the LISTEN connection is up (notifications arrive without waiting for a poll)."""
        return self._listening.is_set()

    def _run(self) -> None:
        failing = False
        last_purge = time.monotonic()
        while not self._stop.is_set():
            self._wake.wait(self._interval)
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                self.refresh()
                if self._purge_interval is not None and time.monotonic() - last_purge >= self._purge_interval:
                    last_purge = time.monotonic()
                    self.purge_expired()
                if failing:
                    log.info("revocation list refreshed again")
                failing = False
            except Exception as exc:  # Postgres down or restarting: keep the last list, retry next interval
                if not failing:
                    log.warning("cannot refresh the revocation list (%s); keeping the last one and retrying", exc)
                failing = True

    def _listen(self) -> None:
        """LISTEN for revocations from other replicas; reconnect with back-off when the connection drops."""
        backoff = 0.5
        while not self._stop.is_set():
            try:
                with psycopg.connect(
                    self._listen_url,  # type: ignore[arg-type]  # set whenever this thread runs
                    autocommit=True,
                    connect_timeout=5,
                    application_name="memhub-revocations",
                ) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    _LISTENER.ok()
                    self._listening.set()
                    # Anything revoked while we were not listening is picked up by a refresh now.
                    self._wake.set()
                    backoff = 0.5
                    while not self._stop.is_set():
                        if next_notifications(conn, self._stop):
                            self._wake.set()
            except Exception as exc:
                _LISTENER.failed(exc, "revocation listener lost its connection; reconnecting")
            finally:
                self._listening.clear()
            self._stop.wait(backoff)
            backoff = min(backoff * 2, 10.0)

    # -- database ------------------------------------------------------------------

    def refresh(self) -> int:
        """Reload the unexpired revoked jtis from Postgres; return how many are now held."""
        query = select(revoked_tokens.c.jti).where(
            revoked_tokens.c.expires_at > func.now() - bindparam("grace", self._grace, type_=Interval)
        )
        with self._engine.connect() as conn:
            stored = {row[0] for row in conn.execute(query)}
        cutoff = datetime.now(timezone.utc) - self._grace
        with self._lock:
            for jti in [j for j, exp in self._local.items() if j in stored or exp <= cutoff]:
                del self._local[jti]
            self._revoked = frozenset(stored.union(self._local))
            return len(self._revoked)

    def revoke(
        self,
        jti: str,
        *,
        agent_id: str,
        expires_at: datetime,
        revoked_by: str,
        reason: str = "",
    ) -> bool:
        """Record `jti` as revoked and tell every replica; False if it was already revoked.

        `expires_at` is the token's own expiry (the row is purged some time
        after it). Effective in this process at once, elsewhere on NOTIFY.
        Raises ValueError naming a malformed argument.
        """
        if not is_token_id(jti):
            raise ValueError(f"jti: must be {TOKEN_ID_RULE}")
        if not isinstance(expires_at, datetime) or expires_at.tzinfo is None:
            raise ValueError("expires_at: must be a timezone-aware datetime")
        if not isinstance(agent_id, str) or len(agent_id) > 255:
            raise ValueError("agent_id: must be a string of at most 255 characters")
        if not isinstance(revoked_by, str) or not 1 <= len(revoked_by) <= 255:
            raise ValueError("revoked_by: must be 1 to 255 characters")
        if not isinstance(reason, str) or len(reason) > 2000:
            raise ValueError("reason: must be at most 2000 characters")
        stmt = (
            pg_insert(revoked_tokens)
            .values(jti=jti, agent_id=agent_id, expires_at=expires_at, revoked_by=revoked_by, reason=reason)
            .on_conflict_do_nothing(index_elements=[revoked_tokens.c.jti])
            .returning(revoked_tokens.c.jti)
        )
        with self._engine.begin() as conn:
            inserted = conn.execute(stmt).first() is not None
            if inserted:
                # Delivered at commit, so no replica reloads before the row is visible.
                conn.execute(text("SELECT pg_notify(:channel, :jti)"), {"channel": CHANNEL, "jti": jti})
        with self._lock:
            self._local[jti] = expires_at.astimezone(timezone.utc)
            self._revoked = self._revoked | {jti}
        return inserted

    def list(self, limit: int = 100) -> RevokedTokens:
        """The most recently revoked tokens first (expired ones included until purged)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST:
            raise ValueError(f"limit: must be 1 to {MAX_LIST}")
        t = revoked_tokens.c
        query = (
            select(t.jti, t.agent_id, t.expires_at, t.revoked_at, t.revoked_by, t.reason)
            .order_by(t.revoked_at.desc(), t.jti)
            .limit(limit)
        )
        with self._engine.connect() as conn:
            return [RevokedToken(*row) for row in conn.execute(query)]

    def purge_expired(self) -> int:
        """Delete rows whose token expired more than grace_s ago (they are refused as expired anyway)."""
        stmt = delete(revoked_tokens).where(
            revoked_tokens.c.expires_at <= func.now() - bindparam("grace", self._grace, type_=Interval)
        )
        with self._engine.begin() as conn:
            deleted = conn.execute(stmt).rowcount
        if deleted:
            log.info("purged %d expired revocations", deleted)
        return deleted
