"""The blackboard in Postgres: two UNLOGGED tables (memhub/db/schema.py), every change in one short transaction.

Concurrency. Every put or delete first locks its session's row
(``FOR UPDATE``), so changes to one session take turns: the compare-and-set
reads the key and writes it with nothing in between, and the per-session
limits (keys, bytes) are counted over exactly the rows that will be there
at commit. Creating a session (or reviving an expired one) also takes two
advisory locks, the namespace's and the creating agent's, always in that
order, so the per-namespace and per-agent session counts are exact under
concurrent creators and no two transactions can wait on each other in a
cycle. Gets and lists lock nothing.

Expiry. An entry whose ``expires_at`` has passed is treated as absent by
every statement here (``expires_at > now()``), whether or not the pruner
has deleted it yet; a session's ``expires_at`` is the latest expiry of its
live keys, kept up to date by every put and delete, so a session counts
against the quotas exactly while it has a live key.

A common put is three statements and a commit: lock the session; read the
key and sum the session's other live keys; write the key and the session's
expiry.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, text

from memhub.errors import Aborted, FailedPrecondition, ResourceExhausted
from memhub.session_state.config import SessionStateConfig
from memhub.session_state.records import Entry, PutRequest, PutResult

log = logging.getLogger(__name__)

_ENTRY_COLUMNS = "key, value, value_bytes, version, updated_at, updated_by, expires_at"

# Two statements, not one join: under READ COMMITTED a join that waits for the session's lock would return
# the key's row as it was before the wait (only the locked row is re-read), and a compare-and-set would then
# match a version another put had just replaced. The key is read after the lock is held.
_LOCK_SESSION = text(
    "SELECT expires_at > now() AS live FROM session_state_sessions WHERE namespace = :ns AND session_id = :sid FOR UPDATE"
)

_READ_KEY = text(
    "SELECT key, value, value_bytes, version, updated_at, updated_by, expires_at, request_id FROM session_state "
    "WHERE namespace = :ns AND session_id = :sid AND key = :key AND expires_at > now()"
)

# The key and the session's other live keys (count, bytes, latest expiry; and the part the writing agent wrote
# last), in one round trip.
_READ_KEY_AND_OTHERS = text(
    "SELECT k.key, k.value, k.value_bytes, k.version, k.updated_at, k.updated_by, k.expires_at, k.request_id, "
    "o.keys AS other_keys, o.bytes AS other_bytes, o.expires AS other_expires, o.my_keys, o.my_bytes "
    "FROM (SELECT count(*) AS keys, coalesce(sum(value_bytes + octet_length(key)), 0) AS bytes, max(expires_at) AS expires, "
    "             count(*) FILTER (WHERE updated_by = :agent) AS my_keys, "
    "             coalesce(sum(value_bytes + octet_length(key)) FILTER (WHERE updated_by = :agent), 0) AS my_bytes "
    "      FROM session_state WHERE namespace = :ns AND session_id = :sid AND key <> :key AND expires_at > now()) o "
    "LEFT JOIN session_state k ON k.namespace = :ns AND k.session_id = :sid AND k.key = :key AND k.expires_at > now()"
)

_CREATION_LOCKS = text(
    "SELECT pg_advisory_xact_lock(hashtextextended('memhub.session-ns:' || :ns, 0)), "
    "pg_advisory_xact_lock(hashtextextended('memhub.session-agent:' || :agent, 0))"
)

_LIVE_SESSIONS = text(
    "SELECT n.total, n.mine, (SELECT count(*) FROM session_state_sessions WHERE created_by = :agent AND expires_at > now()) "
    "FROM (SELECT count(*) AS total, count(*) FILTER (WHERE created_by = :agent) AS mine "
    "      FROM session_state_sessions WHERE namespace = :ns AND expires_at > now()) n"
)

# Who holds the most of a full quota: told to admins only (``put``'s may_see_holders).
_TOP_SESSION_CREATOR = text(
    "SELECT created_by, count(*) FROM session_state_sessions WHERE namespace = :ns AND expires_at > now() "
    "GROUP BY created_by ORDER BY count(*) DESC, created_by LIMIT 1"
)
_TOP_KEY_WRITER = text(
    "SELECT updated_by, count(*), sum(value_bytes + octet_length(key)) FROM session_state "
    "WHERE namespace = :ns AND session_id = :sid AND expires_at > now() "
    "GROUP BY updated_by ORDER BY {order} DESC, updated_by LIMIT 1"
)

# Keys of an expired session are all expired (its expiry is their latest): clear them before it is reused.
_CLEAR_SESSION_KEYS = text("DELETE FROM session_state WHERE namespace = :ns AND session_id = :sid")

_CREATE_SESSION = text(
    "INSERT INTO session_state_sessions (namespace, session_id, created_by, created_at, expires_at) "
    "VALUES (:ns, :sid, :agent, now(), now()) "
    "ON CONFLICT (namespace, session_id) DO UPDATE "
    "SET created_by = EXCLUDED.created_by, created_at = now(), expires_at = now()"
)

_WRITE_KEY = text(
    "WITH put AS ("
    "  INSERT INTO session_state (namespace, session_id, key, value, value_bytes, version, updated_at, updated_by,"
    "                             expires_at, request_id)"
    "  VALUES (:ns, :sid, :key, :value, :value_bytes, nextval('session_state_version_seq'), now(), :agent,"
    "          now() + make_interval(secs => :ttl_s), :request_id)"
    "  ON CONFLICT (namespace, session_id, key) DO UPDATE SET value = EXCLUDED.value, value_bytes = EXCLUDED.value_bytes,"
    "    version = EXCLUDED.version, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by,"
    "    expires_at = EXCLUDED.expires_at, request_id = EXCLUDED.request_id"
    f"  RETURNING {_ENTRY_COLUMNS}"
    "), session AS ("
    "  UPDATE session_state_sessions SET expires_at = greatest(CAST(:others_expire AS timestamptz), (SELECT expires_at FROM put))"
    "  WHERE namespace = :ns AND session_id = :sid"
    f") SELECT {_ENTRY_COLUMNS} FROM put"
)

_DELETE_KEY = text("DELETE FROM session_state WHERE namespace = :ns AND session_id = :sid AND key = :key")

_DELETE_KEYS = text("DELETE FROM session_state WHERE namespace = :ns AND session_id = :sid RETURNING expires_at > now()")

_LATEST_EXPIRY = text(
    "SELECT max(expires_at) FROM session_state WHERE namespace = :ns AND session_id = :sid AND expires_at > now()"
)

_SET_SESSION_EXPIRY = text("UPDATE session_state_sessions SET expires_at = :expires WHERE namespace = :ns AND session_id = :sid")

_DELETE_SESSION = text("DELETE FROM session_state_sessions WHERE namespace = :ns AND session_id = :sid")

_GET = text(
    f"SELECT {_ENTRY_COLUMNS} FROM session_state "
    "WHERE namespace = :ns AND session_id = :sid AND key = :key AND expires_at > now()"
)

_PRUNE_KEYS = text(
    "DELETE FROM session_state t USING ("
    "  SELECT namespace, session_id, key FROM session_state WHERE expires_at <= now() LIMIT :limit FOR UPDATE SKIP LOCKED"
    ") x WHERE t.namespace = x.namespace AND t.session_id = x.session_id AND t.key = x.key AND t.expires_at <= now()"
)

_PRUNE_SESSIONS = text(
    "DELETE FROM session_state_sessions t USING ("
    "  SELECT namespace, session_id FROM session_state_sessions WHERE expires_at <= now() LIMIT :limit FOR UPDATE SKIP LOCKED"
    ") x WHERE t.namespace = x.namespace AND t.session_id = x.session_id AND t.expires_at <= now()"
)


def _entry(namespace: str, session_id: str, row: Any) -> Entry:
    m = row._mapping
    return Entry(
        namespace=namespace,
        session_id=session_id,
        key=m["key"],
        value_json=m["value"],
        value_bytes=m["value_bytes"],
        version=m["version"],
        updated_at=m["updated_at"],
        updated_by=m["updated_by"],
        expires_at=m["expires_at"],
    )


def _where(namespace: str, session_id: str) -> str:
    return f"session {session_id!r} of namespace {namespace!r}"


class SessionStore:
    """Reads and changes of the blackboard. Permissions are the caller's business (service.py)."""

    def __init__(self, engine: Engine, config: SessionStateConfig) -> None:
        self._engine = engine
        self._config = config

    # -- reads ----------------------------------------------------------------------------------------------

    def get(self, namespace: str, session_id: str, key: str) -> Entry | None:
        with self._engine.connect() as conn:
            row = conn.execute(_GET, {"ns": namespace, "sid": session_id, "key": key}).first()
        return None if row is None else _entry(namespace, session_id, row)

    def list(
        self, namespace: str, session_id: str, *, key_prefix: str, after: str | None, limit: int, keys_only: bool
    ) -> list[Entry]:
        """Live keys in key order (byte-wise), after ``after``, at most ``limit``."""
        value = "''" if keys_only else "value"
        query = (
            f"SELECT key, {value} AS value, value_bytes, version, updated_at, updated_by, expires_at FROM session_state "
            "WHERE namespace = :ns AND session_id = :sid AND expires_at > now()"
        )
        params: dict[str, Any] = {"ns": namespace, "sid": session_id, "limit": limit}
        if key_prefix:
            query += " AND starts_with(key, :prefix)"
            params["prefix"] = key_prefix
        if after is not None:
            query += " AND key > :after"
            params["after"] = after
        query += " ORDER BY key LIMIT :limit"
        with self._engine.connect() as conn:
            rows = conn.execute(text(query), params).all()
        return [_entry(namespace, session_id, row) for row in rows]

    # -- changes --------------------------------------------------------------------------------------------

    def put(self, agent_id: str, req: PutRequest, may_see_holders: Callable[[], bool] = lambda: False) -> PutResult:
        """Set the key (compare-and-set when ``req.expected_version`` is set), within the quotas.

        Raises Aborted (version mismatch), FailedPrecondition (request_id reused for another value),
        ResourceExhausted (a quota). A refusal for a full shared quota names the agent holding most of it only
        when ``may_see_holders()`` (asked only then: an admin's right); otherwise it says nothing of other agents.
        """
        ids = {"ns": req.namespace, "sid": req.session_id, "key": req.key}
        with self._engine.begin() as conn:
            live = self._lock(conn, ids)
            if not live:
                self._create_session(conn, agent_id, ids, exists=live is not None, may_see_holders=may_see_holders)
            row = conn.execute(_READ_KEY_AND_OTHERS, ids | {"agent": agent_id}).one()
            current = row if row.key is not None else None
            if current is not None and self._is_retry(req, current):
                return PutResult(_entry(req.namespace, req.session_id, current), replayed=True)
            version = current.version if current is not None else 0
            if req.expected_version is not None and req.expected_version != version:
                raise _conflict(req.key, req.expected_version, version)
            self._check_session_limits(conn, agent_id, req, row, may_see_holders)
            written = conn.execute(
                _WRITE_KEY,
                ids
                | {
                    "value": req.value_json,
                    "value_bytes": req.value_bytes,
                    "agent": agent_id,
                    "ttl_s": req.ttl_s,
                    "request_id": req.request_id,
                    "others_expire": row.other_expires,
                },
            ).one()
        return PutResult(_entry(req.namespace, req.session_id, written), replayed=False)

    def delete(self, namespace: str, session_id: str, key: str, expected_version: int | None) -> int:
        """Delete one key; returns 1 if a live key was deleted, else 0. Raises Aborted on a version mismatch."""
        ids = {"ns": namespace, "sid": session_id, "key": key}
        with self._engine.begin() as conn:
            live = self._lock(conn, ids)
            current = conn.execute(_READ_KEY, ids).first() if live else None
            version = current.version if current is not None else 0
            if expected_version is not None and expected_version != version:
                raise _conflict(key, expected_version, version)
            if live is None:
                return 0
            conn.execute(_DELETE_KEY, ids)
            self._refresh_session_expiry(conn, ids)
        return 1 if current is not None else 0

    def delete_session(self, namespace: str, session_id: str) -> int:
        """Delete every key of the session and the session itself; returns the live keys deleted."""
        ids = {"ns": namespace, "sid": session_id}
        with self._engine.begin() as conn:
            if self._lock(conn, ids) is None:
                return 0
            deleted = conn.execute(_DELETE_KEYS, ids).scalars().all()
            conn.execute(_DELETE_SESSION, ids)
        return sum(1 for live in deleted if live)

    def prune(self, batch: int = 5_000, max_batches: int = 20) -> int:
        """Delete expired entries and sessions, ``batch`` rows a transaction; returns the rows deleted.

        Safe beside other replicas and beside puts (SKIP LOCKED: a row being changed is left for later).
        """
        total = 0
        for statement in (_PRUNE_KEYS, _PRUNE_SESSIONS):
            for _ in range(max_batches):
                with self._engine.begin() as conn:
                    count = conn.execute(statement, {"limit": batch}).rowcount or 0
                total += count
                if count < batch:
                    break
        return total

    # -- internals ------------------------------------------------------------------------------------------

    def _lock(self, conn: Connection, ids: dict[str, str]) -> bool | None:
        """Lock the session's row for this transaction: None when there is none, else whether it is live."""
        return conn.execute(_LOCK_SESSION, ids).scalar()

    def _create_session(
        self, conn: Connection, agent_id: str, ids: dict[str, str], *, exists: bool, may_see_holders: Callable[[], bool]
    ) -> None:
        """Create the session (or revive the expired one this transaction has locked) within the session quotas."""
        conn.execute(_CREATION_LOCKS, {"ns": ids["ns"], "agent": agent_id})
        if not exists:
            # Another put may have created it while this one waited for the namespace's lock; if it did, it is
            # live, or (expired since) locked now by this transaction like any expired session.
            if self._lock(conn, ids):
                return
        in_namespace, mine_here, by_agent = conn.execute(_LIVE_SESSIONS, {"ns": ids["ns"], "agent": agent_id}).one()
        c = self._config
        if mine_here >= c.agent_sessions_per_namespace:
            raise ResourceExhausted(
                f"session quota (agent-sessions-per-namespace): agent {agent_id!r} created {mine_here:,} of the live "
                f"sessions of namespace {ids['ns']!r}, the most one agent may hold there ({_share_of(c)} of "
                f"MEMHUB_SESSIONS_PER_NAMESPACE={c.sessions_per_namespace:,}: the rest is left to other agents); "
                "delete finished sessions (DeleteSessionState whole_session) or wait for them to expire"
            )
        if in_namespace >= c.sessions_per_namespace:
            holder = ""
            if may_see_holders():
                top = conn.execute(_TOP_SESSION_CREATOR, {"ns": ids["ns"]}).first()
                holder = f"; agent {top[0]!r} created the most of them ({top[1]:,})" if top else ""
            raise ResourceExhausted(
                f"session quota (sessions-per-namespace): namespace {ids['ns']!r} has {in_namespace:,} live sessions, "
                f"the most it may hold (MEMHUB_SESSIONS_PER_NAMESPACE={c.sessions_per_namespace:,}){holder}; delete "
                "finished sessions (DeleteSessionState whole_session) or wait for them to expire"
            )
        if by_agent >= c.sessions_per_agent:
            raise ResourceExhausted(
                f"session quota (sessions-per-agent): agent {agent_id!r} created {by_agent:,} live sessions, the most "
                f"one agent may have (MEMHUB_SESSIONS_PER_AGENT={c.sessions_per_agent:,}); delete finished sessions "
                "(DeleteSessionState whole_session) or wait for them to expire"
            )
        conn.execute(_CLEAR_SESSION_KEYS, ids)
        # No other put can create it meanwhile (they wait for the namespace's lock), and an expired row is
        # locked by this transaction already: the session is ours, with no key set.
        conn.execute(_CREATE_SESSION, ids | {"agent": agent_id})

    def _is_retry(self, req: PutRequest, current: Any) -> bool:
        """True when ``req`` retries the put that set the key's current value (same request_id and value)."""
        if not req.request_id or current.request_id != req.request_id:
            return False
        if current.value != req.value_json:
            raise FailedPrecondition(
                f"request_id: {req.request_id!r} was already used for another value of key {req.key!r}; "
                "use a new request_id for a new put"
            )
        return True

    def _check_session_limits(
        self, conn: Connection, agent_id: str, req: PutRequest, row: Any, may_see_holders: Callable[[], bool]
    ) -> None:
        """The session's quotas as they will be at commit: the agent's share first, then the whole."""
        c = self._config
        where = _where(req.namespace, req.session_id)
        entry_bytes = req.value_bytes + len(req.key.encode())
        if row.my_keys + 1 > c.agent_max_keys:
            raise ResourceExhausted(
                f"session quota (agent-session-keys): agent {agent_id!r} wrote {row.my_keys:,} other live keys of "
                f"{where}, the most one agent may hold in a session ({_share_of(c)} of MEMHUB_SESSION_MAX_KEYS="
                f"{c.max_keys:,}: the rest is left to other agents); delete keys it no longer needs or let them expire"
            )
        mine = row.my_bytes + entry_bytes
        if mine > c.agent_max_session_bytes:
            raise ResourceExhausted(
                f"session quota (agent-session-bytes): with this value agent {agent_id!r} would hold {mine:,} bytes of "
                f"keys and values of {where}, more than one agent may hold in a session ({_share_of(c)} of "
                f"MEMHUB_SESSION_MAX_BYTES={c.max_session_bytes:,}: the rest is left to other agents); store less, or "
                "delete keys it no longer needs"
            )
        if row.other_keys + 1 > c.max_keys:
            raise ResourceExhausted(
                f"session quota (session-keys): {where} holds {row.other_keys:,} other live keys, the most one session "
                f"may hold (MEMHUB_SESSION_MAX_KEYS={c.max_keys:,}){self._top_writer(conn, req, 'count(*)', may_see_holders)}; "
                "delete keys it no longer needs or let them expire"
            )
        size = row.other_bytes + entry_bytes
        if size > c.max_session_bytes:
            raise ResourceExhausted(
                f"session quota (session-bytes): with this value {where} would hold {size:,} bytes of keys and values, "
                f"more than one session may hold (MEMHUB_SESSION_MAX_BYTES={c.max_session_bytes:,})"
                f"{self._top_writer(conn, req, 'sum(value_bytes + octet_length(key))', may_see_holders)}; store less, or "
                "delete keys it no longer needs"
            )

    def _top_writer(self, conn: Connection, req: PutRequest, order: str, may_see_holders: Callable[[], bool]) -> str:
        """'; agent X wrote the most of them (...)' for a caller allowed to know, else ''."""
        if not may_see_holders():
            return ""
        statement = text(_TOP_KEY_WRITER.text.format(order=order))
        row = conn.execute(statement, {"ns": req.namespace, "sid": req.session_id}).first()
        if row is None:
            return ""
        top, keys, size = row
        return f"; agent {top!r} wrote the most of them ({keys:,} keys, {size:,} bytes)"

    def _refresh_session_expiry(self, conn: Connection, ids: dict[str, str]) -> None:
        """After a delete: the session lives until its latest live key expires; with none left it is gone."""
        latest: datetime | None = conn.execute(_LATEST_EXPIRY, ids).scalar()
        if latest is None:
            conn.execute(_CLEAR_SESSION_KEYS, ids)
            conn.execute(_DELETE_SESSION, ids)
        else:
            conn.execute(_SET_SESSION_EXPIRY, ids | {"expires": latest})


def _share_of(c: SessionStateConfig) -> str:
    return f"MEMHUB_SESSION_AGENT_SHARE={c.agent_share:g}"


def _conflict(key: str, expected: int, current: int) -> Aborted:
    state = f"is at current version {current}" if current else "is not set (current version 0)"
    wanted = "it to be unset (expected version 0)" if expected == 0 else f"version {expected}"
    return Aborted(f"version conflict: key {key!r} {state}, but the request expected {wanted}; read it again and retry")
