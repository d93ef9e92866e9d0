"""The policies in force (GetPolicyInfo) and "may agent X do Y on Z?" answered by the engine (CheckAccess)."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from memhub.console.params import FieldError
from memhub.console.view import View, page
from memhub.policy.model import REQUIRED_ACTIONS
from memhub.v1 import admin_pb2 as apb

MAX_GROUPS = 32


def routes() -> list[Route]:
    return [
        Route("/policies", policies, methods=["GET"]),
        Route("/policies/check", check, methods=["POST"]),
    ]


async def _info(view: View) -> apb.PolicyInfo:
    return await view.call(lambda c: c.call_admin("GetPolicyInfo", apb.GetPolicyInfoRequest()))


@page("policies")
async def policies(view: View) -> Response:
    info = await _info(view)
    return view.render("policies.html", info=info, actions=tuple(REQUIRED_ACTIONS), form={}, answer=None)


@page("policies", accepted=("agent", "groups", "action", "ns"))
async def check(view: View) -> Response:
    p = view.params
    agent = p.text("agent", 128, required=True)
    groups = [g.strip() for g in p.text("groups", MAX_GROUPS * 129).split(",") if g.strip()]
    if len(groups) > MAX_GROUPS:
        raise FieldError("groups", f"names {len(groups)} groups; the limit is {MAX_GROUPS}")
    for g in groups:
        if len(g) > 128:
            raise FieldError("groups", f"{g[:32]!r}... is longer than 128 characters")
    action = p.text("action", 32, required=True)
    ns = p.namespace("ns")
    request = apb.CheckAccessRequest(agent_id=agent, groups=groups, action=action, namespace=ns)
    answer = await view.call(lambda c: c.call_admin("CheckAccess", request))
    info = await _info(view)
    form = {"agent": agent, "groups": ",".join(groups), "action": action, "ns": ns}
    return view.render("policies.html", info=info, actions=tuple(REQUIRED_ACTIONS), form=form, answer=answer)
