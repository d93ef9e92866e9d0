"""The tokens the hub knows by id: those it issued (AdminService.IssueToken) and those it accepted.

The hub did not know its tokens: `memhub token issue` signs locally with the HS256 secret, and an external
issuer signs elsewhere. So the verifier reports every token it accepts (memhub/auth/token_use.py) and this
store keeps one row per token id: agent, groups, expiry, when the hub first knew it, first and last use, and
for tokens issued through the hub who issued them and why. The token text itself is never stored: a row
cannot be turned back into a credential.

Bounded: rows go ``keep_expired`` after their token's expiry (a token past it is refused anyway), at most
``max_rows`` are kept, and at most ``max_per_agent`` of one agent: past either bound new ids are not recorded
(their uses still reach known rows' last use), so an issuer minting a token per call cannot grow the table
without end, and one agent's stream of tokens cannot fill it and keep every other agent's new tokens out.
Replicas flushing at the same moment may each add a batch: the bounds hold within one flush's rows.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, Interval, Row, bindparam, delete, func, select, tuple_
from sqlalchemy.dialects.postgresql import insert as pg_insert

from memhub.db.schema import revoked_tokens, token_records

log = logging.getLogger(__name__)

MAX_ROWS = 100_000
"""Token ids recorded at most; past it only known ids are updated."""
MAX_PER_AGENT = 1_000
"""Token ids of one agent recorded at most (its share of MAX_ROWS: a hundred agents fill it only together)."""
_WARNED_AGENTS_MAX = 1_000  # agents whose full share was logged, remembered so it is logged once each
KEEP_EXPIRED = timedelta(days=7)
"""How long a row stays after its token expired (the list shows recently expired tokens)."""
MAX_PAGE = 1000


@dataclass(frozen=True)
class TokenRecord:
    token_id: str
    agent_id: str
    groups: tuple[str, ...]
    expires_at: datetime
    recorded_at: datetime
    """When the hub first knew it: issued, or first accepted."""
    issued_at: datetime | None
    """Set when the hub issued it (IssueToken)."""
    issued_by: str
    """The admin who issued it through the hub; "" for a token the hub only saw."""
    note: str
    first_used_at: datetime | None
    last_used_at: datetime | None
    """As of the last flush of the replicas' use recorders (every few seconds)."""
    revoked_at: datetime | None
    """When it was revoked (RevokeToken), None if it was not."""


@dataclass(frozen=True)
class Sighting:
    """Uses of one accepted token since the last flush."""

    token_id: str
    agent_id: str
    groups: tuple[str, ...]
    expires_at: datetime
    first_at: datetime
    last_at: datetime


@dataclass(frozen=True)
class TokenQuery:
    agent_id: str | None = None
    include_expired: bool = False
    """Expired tokens too (until their rows go, KEEP_EXPIRED after expiry)."""


_t, _r = token_records.c, revoked_tokens.c
_COLUMNS = (
    _t.token_id,
    _t.agent_id,
    _t.groups,
    _t.expires_at,
    _t.recorded_at,
    _t.issued_at,
    _t.issued_by,
    _t.note,
    _t.first_used_at,
    _t.last_used_at,
    _r.revoked_at,
)


class TokenRecords:
    def __init__(
        self,
        engine: Engine,
        *,
        max_rows: int = MAX_ROWS,
        max_per_agent: int = MAX_PER_AGENT,
        keep_expired: timedelta = KEEP_EXPIRED,
    ) -> None:
        if max_rows < 1 or max_per_agent < 1:
            raise ValueError("max_rows and max_per_agent: must be at least 1")
        self._engine = engine
        self._max_rows = max_rows
        self._max_per_agent = max_per_agent
        self._keep_expired = keep_expired
        self._warned_agents: set[str] = set()

    def add_issued(
        self, token_id: str, agent_id: str, groups: Sequence[str], expires_at: datetime, issued_by: str, note: str
    ) -> TokenRecord:
        """Record a token the hub has just issued (before it is handed out: an issued token is always listed)."""
        stmt = (
            pg_insert(token_records)
            .values(
                token_id=token_id,
                agent_id=agent_id,
                groups=list(groups),
                expires_at=expires_at,
                issued_at=func.now(),
                issued_by=issued_by,
                note=note,
            )
            .returning(token_records.c.recorded_at, token_records.c.issued_at)
        )
        with self._engine.begin() as conn:
            recorded_at, issued_at = conn.execute(stmt).one()
        return TokenRecord(
            token_id, agent_id, tuple(groups), expires_at, recorded_at, issued_at, issued_by, note, None, None, None
        )

    def record_uses(self, sightings: Sequence[Sighting]) -> int:
        """Upsert the uses of accepted tokens in one statement: first use kept, last use moved forward. New ids are
        recorded only while fewer than ``max_rows`` rows exist and their agent holds fewer than ``max_per_agent``.
        Returns the rows written."""
        if not sightings:
            return 0
        rows = [
            {
                "token_id": s.token_id,
                "agent_id": s.agent_id,
                "groups": list(s.groups),
                "expires_at": s.expires_at,
                "first_used_at": s.first_at,
                "last_used_at": s.last_at,
            }
            for s in sightings
        ]
        with self._engine.begin() as conn:
            known = set(conn.execute(select(_t.token_id).where(_t.token_id.in_([r["token_id"] for r in rows]))).scalars())
            new = [r for r in rows if r["token_id"] not in known]
            if new:
                admitted = {id(r) for r in self._admit(conn, new)}
                rows = [r for r in rows if r["token_id"] in known or id(r) in admitted]
                if not rows:
                    return 0
            stmt = pg_insert(token_records).values(rows)
            stmt = stmt.on_conflict_do_update(
                index_elements=[_t.token_id],
                set_={
                    # least/greatest ignore NULLs in Postgres: a first use fills an issued token's empty columns.
                    "first_used_at": func.least(_t.first_used_at, stmt.excluded.first_used_at),
                    "last_used_at": func.greatest(_t.last_used_at, stmt.excluded.last_used_at),
                },
            )
            return len(conn.execute(stmt.returning(_t.token_id)).all())  # rowcount is -1 for a multi-row VALUES

    def _admit(self, conn: Connection, new: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows of ``new`` (ids not recorded yet) that the table's bound and their agents' shares leave room for."""
        held = conn.execute(select(func.count()).select_from(select(_t.token_id).limit(self._max_rows).subquery())).scalar_one()
        agents = sorted({r["agent_id"] for r in new})
        # Counted up to the share only (an index range scan per agent, ix_token_records_agent).
        capped = select(_t.agent_id).where(_t.agent_id == bindparam("agent")).limit(self._max_per_agent).subquery()
        count_one = select(func.count()).select_from(capped)
        per_agent = {agent: conn.execute(count_one, {"agent": agent}).scalar_one() for agent in agents}
        admitted, refused = [], set()
        for row in new:
            agent = row["agent_id"]
            if held >= self._max_rows:
                break
            if per_agent[agent] >= self._max_per_agent:
                refused.add(agent)
                continue
            admitted.append(row)
            held += 1
            per_agent[agent] += 1
        for agent in sorted(refused - self._warned_agents):
            if len(self._warned_agents) >= _WARNED_AGENTS_MAX:
                break  # past this many agents, later ones are not logged: else each flush would log them again
            self._warned_agents.add(agent)
            log.warning(
                "token records: agent %s holds %d token ids, its share: its new tokens are accepted but not listed "
                "until some expire (an issuer minting a token per call?)",
                agent,
                self._max_per_agent,
            )
        return admitted

    def page(self, query: TokenQuery, limit: int, after: tuple[datetime, str] | None) -> list[TokenRecord]:
        """Up to ``limit`` records, most recently recorded first (keyset on recorded_at, token_id)."""
        if not 1 <= limit <= MAX_PAGE + 1:
            raise ValueError(f"limit: must be 1 to {MAX_PAGE + 1}")
        stmt = select(*_COLUMNS).select_from(token_records.outerjoin(revoked_tokens, _r.jti == _t.token_id))
        if query.agent_id is not None:
            stmt = stmt.where(_t.agent_id == query.agent_id)
        if not query.include_expired:
            stmt = stmt.where(_t.expires_at > func.now())
        if after is not None:
            stmt = stmt.where(tuple_(_t.recorded_at, _t.token_id) < tuple_(bindparam("at", after[0]), bindparam("id", after[1])))
        stmt = stmt.order_by(_t.recorded_at.desc(), _t.token_id.desc()).limit(limit)
        with self._engine.connect() as conn:
            return [_record(row) for row in conn.execute(stmt)]

    def get(self, token_id: str) -> TokenRecord | None:
        stmt = (
            select(*_COLUMNS)
            .select_from(token_records.outerjoin(revoked_tokens, _r.jti == _t.token_id))
            .where(_t.token_id == token_id)
        )
        with self._engine.connect() as conn:
            row = conn.execute(stmt).first()
        return _record(row) if row is not None else None

    def purge_expired(self) -> int:
        """Delete the rows of tokens that expired more than ``keep_expired`` ago."""
        cutoff = func.now() - bindparam("keep", self._keep_expired, type_=Interval)
        with self._engine.begin() as conn:
            deleted = conn.execute(delete(token_records).where(_t.expires_at <= cutoff)).rowcount
        if deleted:
            log.info("token records: deleted %d of tokens expired more than %s ago", deleted, self._keep_expired)
        return deleted


def _record(row: Row[Any, *tuple[Any, ...]]) -> TokenRecord:
    """A row of _COLUMNS."""
    return TokenRecord(
        token_id=row.token_id,
        agent_id=row.agent_id,
        groups=tuple(row.groups),
        expires_at=row.expires_at,
        recorded_at=row.recorded_at,
        issued_at=row.issued_at,
        issued_by=row.issued_by,
        note=row.note,
        first_used_at=row.first_used_at,
        last_used_at=row.last_used_at,
        revoked_at=row.revoked_at,
    )
