"""Memories of a namespace (ListMemories with filters, paged) and one memory in full
(GetMemory, GetMemoryHistory): content, provenance, links, history, tombstone."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from memhub.console import policy_note
from memhub.console.gateway import HubCallError
from memhub.console.params import FieldError
from memhub.console.view import View, page
from memhub.core import validation
from memhub.errors import InvalidArgument
from memhub.v1 import memory_pb2 as pb

KINDS = ("episodic", "semantic", "procedural")
TYPES = ("event", "fact", "preference", "correction", "rule", "lesson", "outcome", "note")
STATUSES = ("active", "superseded", "forgotten", "expired", "quarantined", "archived")
HISTORY_LIMIT = 50


def routes() -> list[Route]:
    return [
        Route("/memories", memories, methods=["GET"]),
        Route("/memory/{memory_id}", memory, methods=["GET"]),
    ]


@page(
    "memories",
    accepted=("ns", "kind", "type", "tag", "status", "created_from", "created_to", "page_size", "page_token"),
    repeatable=("kind", "type", "status"),
)
async def memories(view: View) -> Response:
    p = view.params
    ns = p.namespace("ns")
    kinds, types, statuses = p.choices("kind", KINDS), p.choices("type", TYPES), p.choices("status", STATUSES)
    tags = p.tags("tag")
    start, end = p.when("created_from"), p.when("created_to")
    if start and end and start >= end:
        raise FieldError("created_to", "must be later than created_from")
    page_size = p.integer("page_size", 1, 500, 50)
    token = p.page_token()
    reply = await view.call(
        lambda c: c.list(
            [ns] if ns else [],
            page_size=page_size,
            page_token=token,
            kinds=kinds,
            types=types,
            tags=tags,
            statuses=statuses,
            created_start=start,
            created_end=end,
        )
    )
    filters = {
        "ns": ns,
        "kind": kinds,
        "type": types,
        "status": statuses,
        "tag": ",".join(tags),
        "created_from": p.raw("created_from"),
        "created_to": p.raw("created_to"),
        "page_size": page_size,
    }
    empty = not reply.memories and not token
    return view.render(
        "memories.html",
        why_empty=await policy_note.why_empty(view, [ns] if ns else []) if empty else "",
        memories=list(reply.memories),
        filters=filters,
        query_pairs=_pairs(filters),
        next_page_token=reply.next_page_token,
        kinds=KINDS,
        types=TYPES,
        statuses=STATUSES,
        paged=bool(token),
    )


def _pairs(filters: dict) -> list[tuple[str, str]]:
    """The filters as repeated query pairs, for the next page's link (page tokens only fit the same filters)."""
    out: list[tuple[str, str]] = []
    for name, value in filters.items():
        for item in value if isinstance(value, list) else [value]:
            if item not in ("", None):
                out.append((name, str(item)))
    return out


@page("memories")
async def memory(view: View) -> Response:
    try:
        memory_id = validation.memory_id(view.request.path_params["memory_id"], "memory id")
    except InvalidArgument as exc:
        raise FieldError("memory id", exc.problem) from None
    found: pb.Memory = await view.call(lambda c: c.get(memory_id))
    history_error = ""
    try:
        history = await view.call(lambda c: c.history(memory_id, limit=HISTORY_LIMIT))
    except HubCallError as exc:  # the memory is readable; its history may not be (e.g. a tombstone's)
        history, history_error = None, f"{exc.code.name}: {exc.details}"
    return view.render("memory.html", memory=found, history=history, history_error=history_error)
