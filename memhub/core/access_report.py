"""What the caller's own policies let it do under some namespaces (AdminService.ExplainAccess).

An operator whose pages come back empty needs to know whether nothing is there or nothing is readable:
"your policies let you read 0 of 13 namespaces under agents/ (default deny)". It is an admin call
because its counts are what the admin right already shows (ListNamespaces lists every namespace with its
memories), and it answers only about the caller itself. The namespaces are decided one by one in name
order, at most MAX_EXPLAINED, without the decision cache (a report must not evict the decisions agents'
calls reuse); one "check" audit entry records what was asked and the counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Engine, select

from memhub.audit.writer import AuditEntry, AuditWriter
from memhub.core.access import Action, Authorizer, require
from memhub.core.model import Caller
from memhub.core.namespaces import minimal_roots
from memhub.db.memory_rows import subtree_condition
from memhub.db.schema import namespaces as namespaces_table
from memhub.errors import InvalidArgument
from memhub.policy import PolicyStore, Principal
from memhub.policy.model import NAMESPACE_TYPE

MAX_EXPLAINED = 5_000
CHECK_AUDIT_ACTION = "check"


@dataclass(frozen=True)
class AccessReport:
    action: str
    namespaces: int
    """Namespaces that exist under the roots (at most MAX_EXPLAINED: ``capped`` says there are more)."""
    capped: bool
    allowed: int
    allowing: tuple[str, ...]
    """The permits that allowed at least one of them."""
    forbidden: int
    forbidding: tuple[str, ...]
    """The forbids that denied at least one."""
    default_denied: int
    """Denied with no policy applying."""
    version: str


class AccessReporter:
    def __init__(self, engine: Engine, authorizer: Authorizer, policies: PolicyStore, audit: AuditWriter | None) -> None:
        self._engine = engine
        self._authorizer = authorizer
        self._policies = policies
        self._audit = audit

    def explain(self, caller: Caller, roots: Sequence[str], action: str) -> AccessReport:
        """Requires admin; ``caller``'s own rights for ``action`` on the namespaces under ``roots`` (everywhere if empty)."""
        require(self._authorizer, caller, Action.ADMIN, None)
        policies = self._policies.current()
        if NAMESPACE_TYPE not in policies.actions.get(action, frozenset()):
            known = ", ".join(sorted(a for a, kinds in policies.actions.items() if NAMESPACE_TYPE in kinds))
            raise InvalidArgument("action", f"{action[:40]!r} is not a namespace action of the policy schema; use one of {known}")
        wanted = minimal_roots(list(roots))
        query = select(namespaces_table.c.name).order_by(namespaces_table.c.name).limit(MAX_EXPLAINED + 1)
        if wanted:
            query = query.where(subtree_condition(namespaces_table.c.name, wanted))
        with self._engine.connect() as conn:
            names = [row[0] for row in conn.execute(query)]
        capped = len(names) > MAX_EXPLAINED
        names = names[:MAX_EXPLAINED]
        decisions = policies.decide_many(Principal(caller.agent_id, caller.groups), action, names, cache=False)
        allowing = sorted({pid for d in decisions if d.allowed for pid in d.policy_ids})
        forbidding = sorted({pid for d in decisions if not d.allowed for pid in d.policy_ids})
        report = AccessReport(
            action=action,
            namespaces=len(names),
            capped=capped,
            allowed=sum(d.allowed for d in decisions),
            allowing=tuple(allowing),
            forbidden=sum(not d.allowed and bool(d.policy_ids) for d in decisions),
            forbidding=tuple(forbidding),
            default_denied=sum(not d.allowed and not d.policy_ids for d in decisions),
            version=policies.version,
        )
        self._record(caller, wanted, report)
        return report

    def _record(self, caller: Caller, roots: Sequence[str], report: AccessReport) -> None:
        if self._audit is None:
            return
        detail: dict[str, str | int] = {
            "agent": caller.agent_id,
            "action": report.action,
            "namespaces": report.namespaces,
            "allowed": report.allowed,
            "explained": "own rights",
        }
        if roots:
            detail["roots"] = ",".join(roots[:8]) + ("..." if len(roots) > 8 else "")
        self._audit.record(
            AuditEntry(
                agent_id=caller.agent_id,
                groups=caller.groups,
                action=CHECK_AUDIT_ACTION,
                namespace=roots[0] if len(roots) == 1 else "",
                decision="allow",  # the report itself was allowed; what it found is in detail
                policy_ids=report.allowing,
                policy_version=report.version,
                rpc=caller.rpc,
                trace_id=caller.trace_id,
                hub_request_id=caller.hub_request_id,
                trace_id_from_caller=caller.trace_id_from_caller,
                detail=detail,
            )
        )
