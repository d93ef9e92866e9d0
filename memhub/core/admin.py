"""Hub administration in plain Python: namespaces, policies, token revocation, audit.

Every method first requires the `admin` action on the hub (Cedar resource
Hub::"memhub"), so the admin service is exactly as open as the policies say.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from sqlalchemy import Engine, select

from memhub.audit.writer import AuditEntry, AuditWriter
from memhub.auth import RevocationList
from memhub.auth.names import is_token_id
from memhub.auth.token_records import TokenRecords
from memhub.core import paging
from memhub.core.access import Action, Authorizer, require
from memhub.core.index_report import IndexReport, IndexReporter
from memhub.core.model import Caller
from memhub.core.namespaces import validate_namespace
from memhub.db import audit_queries, namespace_usage, quarantine
from memhub.db.memory_rows import subtree_condition
from memhub.db.schema import namespaces
from memhub.errors import FailedPrecondition, InvalidArgument
from memhub.policy import Decision, PolicyStore, Principal
from memhub.policy.model import HUB_TYPE, NAMESPACE_TYPE

DEFAULT_REVOCATION_TTL = timedelta(days=366)
CHECK_AUDIT_ACTION = "check"
"""The audit action of a CheckAccess answer (the caller's own admin decision is audited as "admin")."""
MAX_CHECK_ERRORS = 16
MAX_CHECK_ERROR_CHARS = 512


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
        *,
        audit: AuditWriter | None = None,
        index_reporter: IndexReporter | None = None,
        token_records: TokenRecords | None = None,
    ) -> None:
        self._engine = engine
        self._nudge = nudge
        self._audit = audit
        self._index_reporter = index_reporter
        self._authorizer = authorizer
        self._policies = policies
        self._revocations = revocations
        self._token_records = token_records

    def list_namespaces(self, caller: Caller, under: str | None, page_size: int, page_token: str) -> tuple[list[str], str]:
        names, token, _ = self.list_namespaces_with_usage(caller, under, page_size, page_token, with_usage=False)
        return names, token

    def list_namespaces_with_usage(
        self, caller: Caller, under: str | None, page_size: int, page_token: str, *, with_usage: bool
    ) -> tuple[list[str], str, dict[str, namespace_usage.Usage]]:
        """A page of namespace names, and with ``with_usage`` each one's storage use (one query for the page)."""
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
            usage = namespace_usage.usage_many(conn, page) if with_usage else {}
        token = paging.encode_key(page[-1], fp) if len(names) > page_size else ""
        return page, token, usage

    def check_access(self, caller: Caller, principal: Principal, action: str, namespace: str | None) -> Decision:
        """Requires admin; what the policies in force answer for ``principal`` (nothing is performed).

        Audited as one "check" entry naming what was asked and the answer, so that probing the
        policies leaves a trace like any other admin call.
        """
        require(self._authorizer, caller, Action.ADMIN, None)
        engine = self._policies.current()
        applies_to = engine.actions.get(action)
        if applies_to is None:
            known = ", ".join(sorted(engine.actions))
            raise InvalidArgument("action", f"{action!r} is not an action of the policy schema; use one of {known}")
        if namespace is None and HUB_TYPE not in applies_to:
            raise InvalidArgument("namespace", f"is empty; action {action!r} applies to a namespace: name one")
        if namespace is not None and NAMESPACE_TYPE not in applies_to:
            raise InvalidArgument("namespace", f"must be empty: action {action!r} is hub-wide")
        try:
            decision = engine.decide(principal, action, namespace)
        except ValueError as exc:  # the engine's own request checks, should the schema change under us
            raise InvalidArgument("action", str(exc)) from None
        if self._audit is not None:
            self._audit.record(
                AuditEntry(
                    agent_id=caller.agent_id,
                    groups=caller.groups,
                    action=CHECK_AUDIT_ACTION,
                    namespace=namespace or "",
                    decision="allow",  # the check itself was allowed; its answer is in detail
                    policy_ids=decision.policy_ids,
                    policy_version=decision.version,
                    rpc=caller.rpc,
                    trace_id=caller.trace_id,
                    hub_request_id=caller.hub_request_id,
                    trace_id_from_caller=caller.trace_id_from_caller,
                    detail={
                        "agent": principal.agent_id,
                        "groups": ",".join(principal.groups),
                        "action": action,
                        "answer": "allow" if decision.allowed else "deny",
                    },
                )
            )
        errors = tuple(e[:MAX_CHECK_ERROR_CHARS] for e in decision.errors[:MAX_CHECK_ERRORS])
        return Decision(decision.allowed, decision.policy_ids, decision.version, errors)

    def policy_actions(self) -> dict[str, tuple[str, ...]]:
        """The actions the policy schema in force declares, each with the resource types it applies to."""
        return {name: tuple(kinds) for name, kinds in self._policies.current().actions.items()}

    def index_report(self, caller: Caller) -> IndexReport:
        """Requires admin; the retrieval index's state and the outbox backlog."""
        require(self._authorizer, caller, Action.ADMIN, None)
        if self._index_reporter is None:
            raise FailedPrecondition("this hub was started without an index reporter")
        return self._index_reporter.report()

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
        # A token the hub knows (issued or seen) gives its agent and expiry to the revocation record.
        known = self._token_records.get(token_id) if self._token_records is not None and is_token_id(token_id) else None
        expiry = expires_at or (known.expires_at if known else datetime.now(timezone.utc) + DEFAULT_REVOCATION_TTL)
        agent = known.agent_id if known else ""
        try:
            return self._revocations.revoke(
                token_id, agent_id=agent, expires_at=expiry, revoked_by=caller.agent_id, reason=reason
            )
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
