"""Cedar-backed authorization with an audit entry and a trace span for every decision.

Which namespaces a search or list may span is decided once per request on
the policies' scope for the caller (``readable``: a predicate the database
evaluates, memhub/policy/scope.py) and audited as ONE entry with the counts:
the cost of a search and the audit rows it writes no longer grow with the
namespaces other agents create (issue 10 item 3). That entry names the policies
that decided the set (memhub/policy/attribution.py), not every policy that could.

A probe (``holds``: is this caller an admin, so that quarantined memories may be
shown?) shapes an answer and refuses nothing: its allow is audited with its
purpose, its deny is not (issue 24: every `memhub why` by an ordinary agent
logged an admin DENY).
"""

from __future__ import annotations

from collections.abc import Sequence

from memhub import telemetry
from memhub.audit.writer import AuditEntry, AuditWriter
from memhub.core.access import Action, Candidates
from memhub.core.model import Caller
from memhub.metrics import record
from memhub.policy import Decision, PolicyStore, Principal, attribution
from memhub.policy.scope import any_of

_tracer = telemetry.tracer(__name__)

SPAN_NAME = "policy.authorize"
# A search over the whole hub decides per namespace; a span lists at most this many by name.
MAX_LISTED_NAMESPACES = 50
# Roots of a request named in its audit entry (a request names at most 64).
MAX_AUDITED_ROOTS = 8


class PolicyAuthorizer:
    def __init__(self, store: PolicyStore, audit: AuditWriter) -> None:
        self._store = store
        self._audit = audit

    def allowed(self, caller: Caller, action: Action, namespace: str | None) -> bool:
        return self._decide(caller, action, namespace, purpose=None)

    def holds(self, caller: Caller, action: Action, namespace: str | None, purpose: str) -> bool:
        return self._decide(caller, action, namespace, purpose=purpose)

    def _decide(self, caller: Caller, action: Action, namespace: str | None, *, purpose: str | None) -> bool:
        """One decision; audited unless it is a probe (``purpose`` given) that denied: a probe shapes an answer
        and refuses nothing, so its deny in the audit log was a false alarm (issue 24)."""
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
                if purpose is not None:
                    span.set_attribute("memhub.policy_probe", purpose)
                if decision.errors:
                    span.set_attribute("memhub.policy_errors", len(decision.errors))
            if purpose is None or decision.allowed:
                self._record(caller, action, namespace, decision, {"purpose": purpose} if purpose else {})
        if purpose is None or decision.allowed:
            record.policy_decision(action.value, decision.allowed)
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
        allowed = [d.allowed for d in decisions]
        record.policy_decision(action.value, True, sum(allowed))
        record.policy_decision(action.value, False, len(allowed) - sum(allowed))
        return allowed

    def readable(self, caller: Caller, action: Action, roots: Sequence[str], candidates: Candidates) -> list[str]:
        with _tracer.start_as_current_span(SPAN_NAME, attributes={"memhub.action": action.value}) as span:
            engine = self._store.current()
            principal = Principal(caller.agent_id, caller.groups)
            scope = engine.scope(principal, action.value)
            detail: dict[str, str | int] = {}
            if scope.predicate is not None:
                names = candidates(scope.predicate)
                if names:
                    policy_ids = attribution.allowing(scope.permits, names)
                elif scope.permits and scope.forbids:  # was it a forbid, or did no permit apply? (deny path only)
                    permitted = candidates(any_of(p for _, p in scope.permits))
                    policy_ids = attribution.matching(scope.forbids, permitted)
                else:
                    policy_ids = ()  # the default deny
            else:  # policies the scope cannot express: decide each namespace, still one audit entry
                every = candidates(None)
                decisions = engine.decide_many(principal, action.value, every)
                names = [ns for ns, d in zip(every, decisions, strict=True) if d.allowed]
                policy_ids, _ = attribution.of_decisions(decisions)
                detail["decided_per_namespace"] = len(every)
            detail["namespaces"] = len(names)
            if roots:
                detail["roots"] = ",".join(roots[:MAX_AUDITED_ROOTS]) + ("..." if len(roots) > MAX_AUDITED_ROOTS else "")
            if span.is_recording():
                span.set_attributes(
                    {
                        "memhub.namespace_count": len(names),
                        "memhub.namespaces_allowed": names[:MAX_LISTED_NAMESPACES],
                        "memhub.decision": "allow" if names else "deny",
                        "memhub.policy_ids": list(policy_ids),
                        "memhub.policy_version": engine.version,
                        "memhub.scope": "predicate" if scope.predicate is not None else "per-namespace",
                    }
                )
            self._audit.record(
                AuditEntry(
                    agent_id=caller.agent_id,
                    groups=caller.groups,
                    action=action.value,
                    namespace=roots[0] if len(roots) == 1 else "",
                    decision="allow" if names else "deny",
                    policy_ids=policy_ids,
                    policy_version=engine.version,
                    rpc=caller.rpc,
                    request_id=caller.request_id,
                    trace_id=caller.trace_id,
                    hub_request_id=caller.hub_request_id,
                    trace_id_from_caller=caller.trace_id_from_caller,
                    detail=detail,
                )
            )
        record.policy_decision(action.value, bool(names))
        return names

    def _record(
        self,
        caller: Caller,
        action: Action,
        namespace: str | None,
        decision: Decision,
        detail: dict[str, str | int] | None = None,
    ) -> None:
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
                hub_request_id=caller.hub_request_id,
                trace_id_from_caller=caller.trace_id_from_caller,
                detail=detail or {},
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
