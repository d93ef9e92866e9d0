"""Namespaces as a tree, with the memories each one stores (AdminService.ListNamespaces with usage).

The hub lists namespaces that hold or held memories; their parents appear
in the tree even when they hold nothing themselves, with the totals of
what is below them on this page. A page holds up to PAGE_SIZE namespaces;
the next page continues in name order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from starlette.responses import Response
from starlette.routing import Route

from memhub.console import policy_note
from memhub.console.view import View, page
from memhub.v1 import admin_pb2 as apb

PAGE_SIZE = 500


@dataclass
class Node:
    segment: str
    path: str
    memories: int | None = None
    """Stored in this namespace itself; None when it is only a parent of listed namespaces."""
    bytes: int = 0
    created_by: str = ""
    children: list[Node] = field(default_factory=list)
    total: int = 0
    """Memories in this namespace and every listed descendant."""


def build_tree(usage: list[apb.NamespaceUsage]) -> list[Node]:
    roots: list[Node] = []
    index: dict[str, Node] = {}
    for entry in usage:
        parts = entry.namespace.split("/")
        siblings = roots
        for depth in range(len(parts)):
            path = "/".join(parts[: depth + 1])
            node = index.get(path)
            if node is None:
                node = index[path] = Node(parts[depth], path)
                siblings.append(node)
            siblings = node.children
        leaf = index[entry.namespace]
        leaf.memories, leaf.bytes, leaf.created_by = entry.memories, entry.bytes, entry.created_by
    for node in roots:
        _total(node)
    return roots


def _total(node: Node) -> int:
    node.total = (node.memories or 0) + sum(_total(child) for child in node.children)
    return node.total


def routes() -> list[Route]:
    return [Route("/namespaces", namespaces, methods=["GET"])]


@page("namespaces", accepted=("under", "page_token"))
async def namespaces(view: View) -> Response:
    under = view.params.namespace("under")
    token = view.params.page_token()
    reply = await view.call(
        lambda c: c.call_admin(
            "ListNamespaces", apb.ListNamespacesRequest(under=under, page_size=PAGE_SIZE, page_token=token, with_usage=True)
        )
    )
    tree = build_tree(list(reply.usage))
    # What the operator may read here: the tree counts memories it may not be able to open (issue 24).
    readable = await policy_note.why_empty(view, [under] if under else []) if tree and not token else ""
    return view.render(
        "namespaces.html",
        readable=readable,
        tree=tree,
        under=under,
        count=len(reply.usage),
        total=sum(n.total for n in tree),
        query_pairs=[("under", under)] if under else [],
        next_page_token=reply.next_page_token,
        paged=bool(token),
    )
