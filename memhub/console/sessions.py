"""Signed-in operators, held in this process's memory and keyed by a random id (the cookie's only content).

The token stays here: the browser holds an unguessable session id and
nothing it could replay against the hub. A session has a second random
value, its page key, which is the first segment of every page's URL
(``/s/<key>/...``, memhub/console/binding.py): the cookie alone never
authenticates, because every port of a host receives and may set the
host's cookies. A session ends at its token's expiry, after
``idle_timeout_s`` without use, on sign-out, when the hub refuses the
token (revoked), or when its browser presents it in a way that shows
another site wrote the console's cookies; the store holds at most
``max_sessions`` and ends the least recently used past that. Only a
sign-in with a token the hub accepted creates a session, so strangers
cannot fill the store.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

SESSION_ID_BYTES = 32


@dataclass
class Session:
    """One signed-in operator. ``token`` never leaves the server."""

    id: str
    token: str = field(repr=False)
    url_key: str = field(repr=False)
    """The page key: the session's pages live under /s/<url_key>/ and its cookie's Path is that prefix."""
    agent_id: str
    groups: tuple[str, ...]
    is_admin: bool
    expires_at: float
    """Epoch seconds: the token's exp."""
    last_seen: float = field(default_factory=time.monotonic)


class SessionStore:
    def __init__(self, *, idle_timeout_s: float, max_sessions: int) -> None:
        self._idle = idle_timeout_s
        self._max = max_sessions
        self._lock = threading.Lock()
        # Keyed by a hash of the id (and of the page key), so the dictionaries' own timing and a memory dump
        # reveal no usable id.
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._by_url_key: dict[str, str] = {}

    def create(self, token: str, agent_id: str, groups: tuple[str, ...], is_admin: bool, expires_at: float) -> Session:
        session = Session(
            secrets.token_urlsafe(SESSION_ID_BYTES),
            token,
            secrets.token_urlsafe(SESSION_ID_BYTES),
            agent_id,
            groups,
            is_admin,
            expires_at,
        )
        with self._lock:
            self._drop_stale()
            self._sessions[_key(session.id)] = session
            self._by_url_key[_key(session.url_key)] = _key(session.id)
            while len(self._sessions) > self._max:
                self._remove(next(iter(self._sessions)))
        return session

    def get(self, session_id: str | None) -> Session | None:
        """The live session with this id (refreshing its idle timer), or None."""
        if not session_id or len(session_id) > 128:
            return None
        key = _key(session_id)
        with self._lock:
            session = self._sessions.get(key)
            if session is None:
                return None
            if not self._alive(session):
                self._remove(key)
                return None
            session.last_seen = time.monotonic()
            self._sessions.move_to_end(key)
            return session

    def end(self, session_id: str | None) -> None:
        if session_id and len(session_id) <= 128:
            with self._lock:
                self._remove(_key(session_id))

    def end_by_url_key(self, url_key: str) -> bool:
        """End the session with this page key (its browser's cookies were written by another site); True if one was."""
        if not url_key or len(url_key) > 128:
            return False
        with self._lock:
            key = self._by_url_key.get(_key(url_key))
            return key is not None and self._remove(key)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def _remove(self, key: str) -> bool:
        session = self._sessions.pop(key, None)
        if session is not None:
            self._by_url_key.pop(_key(session.url_key), None)
        return session is not None

    def _alive(self, session: Session) -> bool:
        return time.time() < session.expires_at and time.monotonic() - session.last_seen < self._idle

    def _drop_stale(self) -> None:
        for key in [k for k, s in self._sessions.items() if not self._alive(s)]:
            self._remove(key)


def _key(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()
