"""Index health (GetIndexHealth and the gRPC health service) and recent retrieval activity (ListRetrievalLog)."""

from __future__ import annotations

import asyncio

from starlette.responses import Response
from starlette.routing import Route

from memhub.console.view import View, page
from memhub.v1 import admin_pb2 as apb

SERVICES = ("memhub.v1.MemoryService", "memhub.v1.AdminService")
RETRIEVAL_PAGE = 20


def routes() -> list[Route]:
    return [
        Route("/health", health, methods=["GET"]),
        Route("/retrieval", retrieval, methods=["GET"]),
    ]


@page("health")
async def health(view: View) -> Response:
    report = await view.call(lambda c: c.call_admin("GetIndexHealth", apb.GetIndexHealthRequest()))
    serving = await asyncio.gather(*(view.console.gateway.healthy(s) for s in SERVICES))
    return view.render("health.html", report=report, services=list(zip(SERVICES, serving, strict=True)))


@page("retrieval", accepted=("agent", "scope", "since", "page_token"))
async def retrieval(view: View) -> Response:
    p = view.params
    agent = p.text("agent", 128)
    scope = p.choice("scope", ("mine", "all")) or ("all" if view.session.is_admin and not agent else "mine")
    since = p.when("since")
    token = p.page_token()
    everyone = scope == "all" and not agent
    reply = await view.call(
        lambda c: c.retrieval_log(agent_id=agent, all_agents=everyone, since=since, page_size=RETRIEVAL_PAGE, page_token=token)
    )
    filters = {"agent": agent, "scope": scope, "since": p.raw("since")}
    return view.render(
        "retrieval.html",
        entries=list(reply.entries),
        filters=filters,
        query_pairs=[(k, v) for k, v in filters.items() if v],
        next_page_token=reply.next_page_token,
        paged=bool(token),
    )
