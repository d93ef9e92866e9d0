"""Resource-updated notifications, driven by one SubscribeChanges stream the bridge holds to the hub.

When the first MCP client subscribes (a 2026-07-28 `subscriptions/listen` stream registering on this
bus, or an older client's `resources/subscribe`), the bridge opens one change-feed stream for its agent,
over the bridge's narrowing roots (or every namespace the agent may read and subscribe to), and keeps
it open, resuming from its cursor after any break (memhub/client_feed.py). Each change becomes a
`ResourceUpdated` for the memory's URI and for the namespace URIs of its namespace and each ancestor
inside the narrowing; the SDK's listen streams forward only the URIs their client named, and older
clients get `notifications/resources/updated` for the URIs they subscribed to. A notification names
only a URI the client asked about, of a change the hub let this agent see: it can never tell a client
more than a resources/read would.

The stream runs in a thread (the hub client is blocking); its events are handed to the MCP server's
event loop. A subscription is acknowledged only once that stream is open, so a write made right after
the acknowledgement is always heard.

The bus exists before the hub client does: the MCP server is built with it and, under stdio, answers
`initialize` while the rest of the bridge is still being built (cli.py), so the hub client is attached
afterwards (`attach`); no request reaches the bus before that (start_gate.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import grpc
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated, ServerEvent
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    EmptyResult,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    UnsubscribeRequestParams,
)

from memhub.bridge.narrowing import Narrowing
from memhub.bridge.resource_uris import MEMORY_PREFIX, NAMESPACE_PREFIX, memory_uri, namespace_uri

if TYPE_CHECKING:  # both load memhub's gRPC client, which the bus needs only once a client subscribes
    from memhub.bridge.hub_client import BridgeHubClient
    from memhub.client_feed import FeedFollower

log = logging.getLogger("memhub.bridge.resources")

MAX_LEGACY_SUBSCRIPTIONS = 1024
"""resources/subscribe entries (URI and session) a bridge keeps at most; further ones are refused."""
OPEN_TIMEOUT_S = 15.0
"""How long a subscription waits for the hub's stream to open before it is acknowledged anyway."""


def affected_uris(namespace: str, memory_id: str, narrowing: Narrowing) -> list[str]:
    """The resource URIs a change to memory ``memory_id`` in ``namespace`` updates: the memory's, and the namespace
    resources of ``namespace`` and of each ancestor this bridge may serve."""
    segments = namespace.split("/")
    prefixes = ["/".join(segments[: i + 1]) for i in range(len(segments))]
    return [memory_uri(memory_id), *(namespace_uri(p) for p in prefixes if narrowing.allows(p))]


class ResourceUpdates(InMemorySubscriptionBus):
    """The bridge MCPServer's subscription bus, fed by the hub's change feed; also serves resources/subscribe."""

    def __init__(self, hub: BridgeHubClient | None, narrowing: Narrowing) -> None:
        """`hub`: None while the bridge is being built; `attach` gives it before any request arrives."""
        super().__init__()
        self._hub = hub
        self._narrowing = narrowing
        self._legacy: dict[str, set[ServerSession]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._follower: FeedFollower | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._open: asyncio.Event | None = None
        self._listen = ListenHandler(self)
        self.failure = ""
        """Why the hub refused the stream for good ("" while it runs or has not started)."""
        self.cursor = ""
        """The feed cursor of the last change announced."""

    def attach(self, hub: BridgeHubClient) -> None:
        """The hub client the change-feed stream runs on, once the bridge has built it."""
        self._hub = hub

    # -- who listens ----------------------------------------------------------------------------

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        """A `subscriptions/listen` stream registers (the SDK calls this on the server's loop)."""
        self._start()
        return super().subscribe(listener)

    async def on_listen(
        self, ctx: ServerRequestContext[Any, Any], params: SubscriptionsListenRequestParams
    ) -> SubscriptionsListenResult:
        """`subscriptions/listen` (2026-07-28): the SDK's own handler, once the hub's stream is open."""
        await self._opened()
        return await self._listen(ctx, params)

    async def on_subscribe(self, ctx: ServerRequestContext[Any, Any], params: SubscribeRequestParams) -> EmptyResult:
        """`resources/subscribe` of clients on protocol versions before 2026-07-28."""
        uri = str(params.uri)
        if not uri.startswith((NAMESPACE_PREFIX, MEMORY_PREFIX)):
            raise MCPError(
                INVALID_PARAMS, f"{uri}: not a memhub resource; subscribe to memhub://ns/<namespace> or memhub://memory/<id>"
            )
        with self._lock:
            if sum(len(s) for s in self._legacy.values()) >= MAX_LEGACY_SUBSCRIPTIONS:
                raise MCPError(INVALID_PARAMS, f"this bridge already holds {MAX_LEGACY_SUBSCRIPTIONS} subscriptions")
        await self._opened()
        with self._lock:
            self._legacy.setdefault(uri, set()).add(ctx.session)
        return EmptyResult()

    async def on_unsubscribe(self, ctx: ServerRequestContext[Any, Any], params: UnsubscribeRequestParams) -> EmptyResult:
        with self._lock:
            sessions = self._legacy.get(str(params.uri))
            if sessions is not None:
                sessions.discard(ctx.session)
                if not sessions:
                    del self._legacy[str(params.uri)]
        return EmptyResult()

    # -- the hub's stream -------------------------------------------------------------------------

    async def _opened(self) -> None:
        """Start the hub's stream if needed and wait until it is open; MCPError if the hub refused it for good."""
        self._start()
        assert self._open is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._open.wait(), OPEN_TIMEOUT_S)
        if self.failure:
            raise MCPError(INTERNAL_ERROR, f"the hub refused this agent's change feed: {self.failure}")

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            if self._hub is None:
                raise RuntimeError("ResourceUpdates has no hub client yet: attach() it before serving requests")
            from memhub.client_feed import FeedFollower

            self._loop = asyncio.get_running_loop()
            self._open = asyncio.Event()
            self._follower = FeedFollower(self._hub, self._narrowing.namespaces, on_retry=self._retrying)
            self._thread = threading.Thread(target=self._run, name="memhub-bridge-feed", daemon=True)
            self._thread.start()

    @staticmethod
    def _retrying(error: grpc.RpcError, wait_s: float) -> None:
        log.warning("change feed interrupted (%s: %s); resubscribing in %.1f s", error.code().name, error.details(), wait_s)

    def _run(self) -> None:
        assert self._follower is not None and self._loop is not None and self._open is not None
        try:
            for message in self._follower:
                if message.WhichOneof("message") != "change":
                    self._loop.call_soon_threadsafe(self._open.set)  # a heartbeat: the stream is open
                    continue
                event = message.change
                uris = affected_uris(event.memory.namespace, event.memory.id, self._narrowing)
                self.cursor = event.cursor
                asyncio.run_coroutine_threadsafe(self._announce(uris), self._loop)
        except grpc.RpcError as exc:
            self.failure = f"{exc.code().name}: {exc.details()}"
            log.error("the hub ended this agent's change feed; no more resource updates: %s", self.failure)
            self._loop.call_soon_threadsafe(self._open.set)  # waiting subscribers learn of the failure
        except RuntimeError:  # the server's loop closed under us: the bridge is stopping
            pass

    async def _announce(self, uris: list[str]) -> None:
        for uri in uris:
            await self.publish(ResourceUpdated(uri=uri))
            with self._lock:
                sessions = list(self._legacy.get(uri, ()))
            for session in sessions:
                try:
                    await session.send_resource_updated(uri)
                except Exception:  # noqa: BLE001 - a client that went away; forget its subscriptions
                    self._drop(session)

    def _drop(self, session: object) -> None:
        with self._lock:
            for uri in list(self._legacy):
                self._legacy[uri].discard(session)
                if not self._legacy[uri]:
                    del self._legacy[uri]

    def close(self) -> None:
        if self._follower is not None:
            self._follower.close()
        if self._thread is not None:
            self._thread.join(10)
