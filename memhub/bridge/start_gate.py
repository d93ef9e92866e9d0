"""Hold an MCP client's requests, all but the handshake, until the bridge has finished building.

Under stdio the bridge answers `initialize` as soon as its server exists and
builds the rest (the hub client with its tracing, the tools' argument and
result models, the resources; about a third of its start) in a thread while
the handshake goes on; see cli.py. A request that needs any of that waits
here until it is there, so it is answered exactly as if the bridge had been
built first, only later. The handshake (`initialize`, `server/discover`)
and `ping` need none of it and pass at once; so do notifications.

It runs inside the SDK's OpenTelemetry middleware, so the wait is part of
the request's span.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

# What an MCP server answers from its name, version, instructions and capabilities alone.
HANDSHAKE_METHODS = frozenset({"initialize", "server/discover", "ping"})


class StartGate:
    """Middleware (MCPServer(middleware=...)): requests other than the handshake wait until `open` or `fail`."""

    def __init__(self) -> None:
        self._done = asyncio.Event()
        self._failure = ""

    @property
    def is_open(self) -> bool:
        return self._done.is_set() and not self._failure

    def open(self) -> None:
        """The bridge is built: let every request through (call on the server's event loop)."""
        self._done.set()

    def fail(self, why: str) -> None:
        """The bridge could not be built: answer every held and later request with an error naming why."""
        self._failure = why
        self._done.set()

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is not None and ctx.method not in HANDSHAKE_METHODS and not self._done.is_set():
            await self._done.wait()
        if self._failure and ctx.request_id is not None and ctx.method not in HANDSHAKE_METHODS:
            raise MCPError(INTERNAL_ERROR, f"the memhub bridge failed to start: {self._failure}")
        return await call_next(ctx)
