"""Cedar-backed authorization with an audit entry for every decision."""

from __future__ import annotations

from collections.abc import Sequence

from hub.audit.writer import AuditEntry, AuditWriter
from hub.core.access import Action
from hub.core.model import Caller
from hub.policy import Decision, PolicyStore, Principal


class PolicyAuthorizer:
    def __init__(self, store: PolicyStore, audit: AuditWriter) -> None:
        self._store = store
        self._audit = audit

    def allowed(self, caller: Caller, action: Action, namespace: str | None) -> bool:
        decision = self._store.current().decide(Principal(caller.agent_id, caller.groups), action.value, namespace)
        self._record(caller, action, namespace, decision)
        return decision.allowed

    def allowed_many(self, caller: Caller, action: Action, namespaces: Sequence[str]) -> list[bool]:
        if not namespaces:
            return []
        # One Cedar call for all uncached namespaces: about half the cost of one call each.
        decisions = self._store.current().decide_many(Principal(caller.agent_id, caller.groups), action.value, list(namespaces))
        for ns, decision in zip(namespaces, decisions, strict=True):
            self._record(caller, action, ns, decision)
        return [d.allowed for d in decisions]

    def _record(self, caller: Caller, action: Action, namespace: str | None, decision: Decision) -> None:
        self._audit.record(
            AuditEntry(
                agent_id=caller.agent_id,
                groups=caller.groups,
                action=action.value,
                namespace=namespace or "",
                decision="allow" if decision.allowed else "deny",
                policy_ids=decision.policy_ids,
                policy_version=decision.version,
                rpc=caller.rpc,
                request_id=caller.request_id,
                trace_id=caller.trace_id,
            )
        )
