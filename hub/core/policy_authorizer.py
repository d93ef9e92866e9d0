"""Cedar-backed authorization with an audit entry and a trace span for every decision."""

from __future__ import annotations

from collections.abc import Sequence

from hub import telemetry
from hub.audit.writer import AuditEntry, AuditWriter
from hub.core.access import Action
from hub.core.model import Caller
from hub.policy import Decision, PolicyStore, Principal

_tracer = telemetry.tracer(__name__)

SPAN_NAME = "policy.authorize"
# A search over the whole hub decides per namespace; a span lists at most this many by name.
MAX_LISTED_NAMESPACES = 50


class PolicyAuthorizer:
    def __init__(self, store: PolicyStore, audit: AuditWriter) -> None:
        self._store = store
        self._audit = audit

    def allowed(self, caller: Caller, action: Action, namespace: str | None) -> bool:
        with _tracer.start_as_current_span(SPAN_NAME, attributes={"memhub.action": action.value}) as span:
            decision = self._store.current().decide(Principal(caller.agent_id, caller.groups), action.value, namespace)
            if span.is_recording():
                span.set_attributes(
                    {
                        "memhub.namespace": namespace if namespace is not None else "",
                        "memhub.decision": "allow" if decision.allowed else "deny",
                        "memhub.policy_ids": list(decision.policy_ids),
                        "memhub.policy_version": decision.version,
                    }
                )
                if decision.errors:
                    span.set_attribute("memhub.policy_errors", len(decision.errors))
            self._record(caller, action, namespace, decision)
        return decision.allowed

    def allowed_many(self, caller: Caller, action: Action, namespaces: Sequence[str]) -> list[bool]:
        if not namespaces:
            return []
        with _tracer.start_as_current_span(SPAN_NAME, attributes={"memhub.action": action.value}) as span:
            # One Cedar call for all uncached namespaces: about half the cost of one call each.
            decisions = self._store.current().decide_many(
                Principal(caller.agent_id, caller.groups), action.value, list(namespaces)
            )
            if span.is_recording():
                _describe_many(span, namespaces, decisions)
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


def _describe_many(span, namespaces: Sequence[str], decisions: Sequence[Decision]) -> None:  # noqa: ANN001
    allowed = [ns for ns, d in zip(namespaces, decisions, strict=True) if d.allowed]
    denied = [ns for ns, d in zip(namespaces, decisions, strict=True) if not d.allowed]
    span.set_attributes(
        {
            "memhub.namespace_count": len(namespaces),
            "memhub.allowed_count": len(allowed),
            "memhub.denied_count": len(denied),
            "memhub.namespaces_allowed": allowed[:MAX_LISTED_NAMESPACES],
            "memhub.namespaces_denied": denied[:MAX_LISTED_NAMESPACES],
            "memhub.decision": "allow" if not denied else "deny" if not allowed else "mixed",
            "memhub.policy_ids": sorted({pid for d in decisions for pid in d.policy_ids}),
            "memhub.policy_version": decisions[0].version,
        }
    )
    errors = sum(len(d.errors) for d in decisions)
    if errors:
        span.set_attribute("memhub.policy_errors", errors)
