"""Signed-in operators, held in this process's memory and keyed by a random id (the cookie's only content).

The token stays here: the browser holds an unguessable session id and
nothing it could replay against the hub. A session ends at its token's
expiry, after ``idle_timeout_s`` without use, on sign-out, or when the hub
refuses the token (revoked); the store holds at most ``max_sessions`` and
ends the least recently used past that. Only a sign-in with a token the
hub accepted creates a session, so strangers cannot fill the store.
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
        # Keyed by a hash of the id, so the dictionary's own timing and a memory dump reveal no usable id.
        self._sessions: OrderedDict[str, Session] = OrderedDict()

    def create(self, token: str, agent_id: str, groups: tuple[str, ...], is_admin: bool, expires_at: float) -> Session:
        session = Session(secrets.token_urlsafe(SESSION_ID_BYTES), token, agent_id, groups, is_admin, expires_at)
        with self._lock:
            self._drop_stale()
            self._sessions[_key(session.id)] = session
            while len(self._sessions) > self._max:
                self._sessions.popitem(last=False)
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
                del self._sessions[key]
                return None
            session.last_seen = time.monotonic()
            self._sessions.move_to_end(key)
            return session

    def end(self, session_id: str | None) -> None:
        if session_id:
            with self._lock:
                self._sessions.pop(_key(session_id), None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def _alive(self, session: Session) -> bool:
        return time.time() < session.expires_at and time.monotonic() - session.last_seen < self._idle

    def _drop_stale(self) -> None:
        for key in [k for k, s in self._sessions.items() if not self._alive(s)]:
            del self._sessions[key]


def _key(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()
