"""Hub administration in plain Python: namespaces, policies, token revocation, audit.

Every method first requires the `admin` action on the hub (Cedar resource
Hub::"memhub"), so the admin service is exactly as open as the policies say.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from sqlalchemy import Engine, select

from hub.auth import RevocationList
from hub.core import paging
from hub.core.access import Action, Authorizer, require
from hub.core.model import Caller
from hub.core.namespaces import validate_namespace
from hub.db import audit_queries, namespace_usage, quarantine
from hub.db.memories import subtree_condition
from hub.db.schema import namespaces
from hub.errors import InvalidArgument
from hub.policy import PolicyStore

DEFAULT_REVOCATION_TTL = timedelta(days=366)


@dataclass(frozen=True)
class PolicyInfo:
    version: str
    policy_ids: tuple[str, ...]
    files: tuple[str, ...]
    loaded_at: datetime


class AdminService:
    def __init__(
        self,
        engine: Engine,
        authorizer: Authorizer,
        policies: PolicyStore,
        revocations: RevocationList,
        nudge: Callable[[], None] | None = None,
    ) -> None:
        self._engine = engine
        self._nudge = nudge
        self._authorizer = authorizer
        self._policies = policies
        self._revocations = revocations

    def list_namespaces(self, caller: Caller, under: str | None, page_size: int, page_token: str) -> tuple[list[str], str]:
        require(self._authorizer, caller, Action.ADMIN, None)
        fp = paging.fingerprint("namespaces", under)
        after = paging.decode_key(page_token, fp, validate_namespace)
        query = select(namespaces.c.name).order_by(namespaces.c.name).limit(page_size + 1)
        if under:
            query = query.where(subtree_condition(namespaces.c.name, [under]))
        if after is not None:
            query = query.where(namespaces.c.name > after)
        with self._engine.connect() as conn:
            names = [r[0] for r in conn.execute(query)]
        page = names[:page_size]
        token = paging.encode_key(page[-1], fp) if len(names) > page_size else ""
        return page, token

    def policy_info(self, caller: Caller) -> PolicyInfo:
        require(self._authorizer, caller, Action.ADMIN, None)
        return self._info()

    def reload_policies(self, caller: Caller) -> tuple[bool, PolicyInfo]:
        require(self._authorizer, caller, Action.ADMIN, None)
        result = self._policies.reload()
        return result.changed, self._info()

    def _info(self) -> PolicyInfo:
        engine = self._policies.current()
        return PolicyInfo(engine.version, tuple(engine.policy_ids), tuple(engine.files), engine.loaded_at)

    def revoke_token(self, caller: Caller, token_id: str, reason: str, expires_at: datetime | None) -> bool:
        require(self._authorizer, caller, Action.ADMIN, None)
        expiry = expires_at or datetime.now(timezone.utc) + DEFAULT_REVOCATION_TTL
        try:
            return self._revocations.revoke(token_id, agent_id="", expires_at=expiry, revoked_by=caller.agent_id, reason=reason)
        except ValueError as exc:  # "field: problem" from the revocation list's own checks
            field, _, problem = str(exc).partition(": ")
            raise InvalidArgument({"jti": "token_id"}.get(field, field), problem or str(exc)) from None

    def release(self, caller: Caller, ids: Sequence[str], reason: str) -> list[str]:
        """Requires admin; makes quarantined memories active (all or none) and audits each release."""
        require(self._authorizer, caller, Action.ADMIN, None)
        with self._engine.begin() as conn:
            released = quarantine.release(conn, ids, caller, reason)
        if self._nudge is not None:
            self._nudge()  # the indexer picks the released memories up now, not at its next poll
        return released

    def namespace_usage(self, caller: Caller, namespace: str | None) -> namespace_usage.Usage | None:
        """Requires admin; a namespace's storage use (None when none was asked for)."""
        require(self._authorizer, caller, Action.ADMIN, None)
        if namespace is None:
            return None
        with self._engine.connect() as conn:
            return namespace_usage.usage(conn, namespace)

    def query_audit(self, caller: Caller, q: audit_queries.AuditQuery, page_size: int, page_token: str) -> tuple[Sequence, str]:
        require(self._authorizer, caller, Action.ADMIN, None)
        fp = paging.fingerprint("audit", q)
        before_id = paging.decode_key(page_token, fp, paging.audit_id)
        with self._engine.connect() as conn:
            rows = audit_queries.query(conn, q, page_size + 1, before_id)
        page = rows[:page_size]
        token = paging.encode_key(str(page[-1]._mapping["id"]), fp) if len(rows) > page_size else ""
        return list(page), token
