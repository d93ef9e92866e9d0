"""Memories as MCP resources: `memhub://ns/<namespace>` (its most recent memories, and those below it) and
`memhub://memory/<id>` (one memory), read through the hub with the agent's own rights and the bridge's
narrowing, rendered as the same delimited blocks the tools return.

Clients that subscribe to one of these URIs (2026-07-28 `subscriptions/listen`, or the older
`resources/subscribe`) hear `notifications/resources/updated` when a memory there changes, teammates'
writes included: memhub/bridge/resource_updates.py.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError

from memhub.bridge.hub_calls import HubCaller, hub_error
from memhub.bridge.hub_client import BridgeHubClient
from memhub.bridge.narrowing import Narrowing, OutsideNarrowing
from memhub.bridge.operations import missing_memory_details
from memhub.bridge.resource_uris import MEMORY_PREFIX as MEMORY_PREFIX  # re-exported: the URIs are defined there
from memhub.bridge.resource_uris import NAMESPACE_PREFIX as NAMESPACE_PREFIX
from memhub.bridge.resource_uris import SCHEME as SCHEME
from memhub.bridge.resource_uris import memory_uri as memory_uri
from memhub.bridge.resource_uris import namespace_uri as namespace_uri
from memhub.bridge.results import count_of, memory_block, memory_record
from memhub.core.validation import memory_id
from memhub.errors import InvalidArgument
from memhub.memory_text import READING_NOTE
from memhub.v1 import memory_pb2 as pb

_Reply = TypeVar("_Reply")

RECENT = 20
"""Memories a namespace resource shows, newest first (a resource is read whole; search is for the rest)."""

NAMESPACE_DESCRIPTION = (
    f"The {RECENT} most recent active memories of a namespace and the namespaces below it, newest first, as "
    "<memory> blocks. Subscribe to hear when a memory there is written, superseded, forgotten or expires, "
    "by this agent or a teammate."
)
MEMORY_DESCRIPTION = "One memory by id, as it is now (a forgotten one is its tombstone). Subscribe to hear when it changes."


class ResourceReader:
    """Reads the resources for one agent's bridge."""

    def __init__(self, hub: BridgeHubClient, call: HubCaller, narrowing: Narrowing) -> None:
        self._hub = hub
        self._call = call
        self._narrowing = narrowing

    async def namespace_text(self, namespace: str) -> str:
        try:
            self._narrowing.check(namespace, "namespace")
        except (InvalidArgument, OutsideNarrowing) as exc:
            raise ResourceNotFoundError(f"{namespace_uri(namespace)}: {exc}") from None
        reply = await self._hub_call(lambda: self._hub.list([namespace], page_size=RECENT))
        records = [memory_record(m) for m in reply.memories]
        lines = [
            f"{count_of(len(records), 'memory', 'memories')} in {namespace} and below, newest first"
            + (" (older ones: search_memories)" if reply.next_page_token else "")
            + ".",
            READING_NOTE,
        ]
        for n, record in enumerate(records, 1):
            lines += memory_block(n, record, extra=[("status", record.status)])
        return "\n".join(lines)

    async def memory_text(self, raw_id: str) -> str:
        try:
            mid = memory_id(raw_id, "id")
        except InvalidArgument as exc:
            raise ResourceNotFoundError(f"{memory_uri(raw_id)}: {exc}") from None
        memory: pb.Memory = await self._hub_call(lambda: self._hub.get(mid))
        if not self._narrowing.allows(memory.namespace):
            # Outside this bridge: the very answer a missing id gets (operations.fenced_get), or it is an oracle.
            raise ResourceError(str(hub_error(grpc.StatusCode.NOT_FOUND, missing_memory_details(mid))))
        record = memory_record(memory)
        return "\n".join([READING_NOTE, *memory_block(1, record, extra=[("status", record.status)])])

    async def _hub_call(self, fn: Callable[[], _Reply]) -> _Reply:
        """A blocking MemhubClient call's reply; the hub's refusal as a ResourceError."""
        try:
            return await self._call(fn)
        except ToolError as exc:  # the hub's refusal, in the words the tools use
            raise ResourceError(str(exc)) from None


def register_resources(server: MCPServer, reader: ResourceReader, roots: tuple[str, ...]) -> list[str]:
    """The two resource templates, plus a listed resource for each of ``roots`` (the namespaces this bridge is
    about: its narrowing, default namespace or the agent's own); returns the listed URIs."""

    @server.resource(
        NAMESPACE_PREFIX + "{+namespace}", name="namespace", description=NAMESPACE_DESCRIPTION, mime_type="text/plain"
    )
    async def namespace_resource(namespace: str) -> str:
        return await reader.namespace_text(namespace)

    @server.resource(MEMORY_PREFIX + "{id}", name="memory", description=MEMORY_DESCRIPTION, mime_type="text/plain")
    async def memory_resource(id: str) -> str:  # noqa: A002 - the template's variable
        return await reader.memory_text(id)

    listed = []
    for root in dict.fromkeys(roots):

        async def read(root: str = root) -> str:
            return await reader.namespace_text(root)

        uri = namespace_uri(root)
        server.resource(uri, name=root, description=NAMESPACE_DESCRIPTION, mime_type="text/plain")(_no_args(read))
        listed.append(uri)
    return listed


def _no_args(fn: Callable[[], Awaitable[str]]) -> Callable[[], Awaitable[str]]:
    """A static resource's function takes no parameters (the root is bound by the closure)."""

    async def read() -> str:
        return await fn()

    return read
