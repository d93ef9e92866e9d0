"""The audit log (AdminService.QueryAuditLog): every decision with the policies that made it, newest first,
filtered by agent, action, decision, namespace (with descendants), time, policy and call."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from memhub.console.params import FieldError
from memhub.console.view import View, page
from memhub.v1 import admin_pb2 as apb

ACTIONS = (
    "read",
    "write",
    "forget",
    "consolidate",
    "subscribe",
    "write_unfiltered",
    "admin",
    "authenticate",
    "limit",
    "quota",
    "release",
    "filter",
    "check",
    "issue_token",
)
DECISIONS = {"allow": apb.DECISION_ALLOW, "deny": apb.DECISION_DENY}
PAGE_SIZE = 100
FIELDS = ("agent", "action", "decision", "ns", "since", "until", "policy_id", "hub_request_id")


def routes() -> list[Route]:
    return [Route("/audit", audit, methods=["GET"])]


@page("audit", accepted=(*FIELDS, "page_token"))
async def audit(view: View) -> Response:
    p = view.params
    agent = p.text("agent", 128)
    action = p.choice("action", ACTIONS)
    decision = p.choice("decision", DECISIONS)
    ns = p.namespace("ns")
    since, until = p.when("since"), p.when("until")
    if since and until and since >= until:
        raise FieldError("until", "must be later than since")
    policy_id = p.text("policy_id", 128)
    hub_request_id = p.memory_id("hub_request_id")  # a UUID, like a memory id
    token = p.page_token()
    request = apb.QueryAuditLogRequest(
        agent_id=agent,
        action=action,
        namespace=ns,
        decision=DECISIONS.get(decision, apb.DECISION_UNSPECIFIED),
        page_size=PAGE_SIZE,
        page_token=token,
        policy_id=policy_id,
        hub_request_id=hub_request_id,
    )
    if since:
        request.since.FromDatetime(since)
    if until:
        request.until.FromDatetime(until)
    reply = await view.call(lambda c: c.call_admin("QueryAuditLog", request))
    filters = {name: p.raw(name) for name in FIELDS}
    return view.render(
        "audit.html",
        entries=list(reply.entries),
        filters=filters,
        actions=ACTIONS,
        query_pairs=[(k, v) for k, v in filters.items() if v],
        next_page_token=reply.next_page_token,
        paged=bool(token),
    )
