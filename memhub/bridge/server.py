"""Assemble one agent's bridge: the hub client, the operations, the MCP server with its tools.

Tracing needs nothing here. MCPServer's low-level server ships the SDK's
OpenTelemetryMiddleware on by default: every request gets a SERVER span
(`tools/call write_memory`, with mcp.method.name, gen_ai.tool.name,
gen_ai.operation.name=execute_tool, jsonrpc.request.id, and error.type on
protocol errors and on `is_error` results), parented on the W3C trace
context found in the request's `_meta` when there is one. The tools run
inside that span, the hub calls inherit it (hub_calls.py), and the hub
client's interceptor carries it to the hub.

Built in two steps. `prepare_bridge` makes what answers `initialize`: the
server with its name, version, instructions and capabilities (which follow
from the handlers it registers, the subscription ones included), and the
start gate. `PreparedBridge.finish` builds the rest: the hub client, the
operations, the tools and resources. `build_bridge` does both at once;
under stdio the bridge answers `initialize` between the two and finishes in
a thread meanwhile (cli.py), the gate holding other requests until then.
What `finish` needs is imported there, so preparing loads none of it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from mcp_types import SubscribeRequestParams, SubscriptionsListenRequestParams, UnsubscribeRequestParams

from memhub.bridge.arguments import MemhubServer
from memhub.bridge.config import BridgeSettings
from memhub.bridge.resource_updates import ResourceUpdates
from memhub.bridge.start_gate import StartGate

if TYPE_CHECKING:
    import grpc

    from memhub.bridge.hub_client import BridgeHubClient

log = logging.getLogger("memhub.bridge")

# The server's instructions, a sentence per group of tools, each only when this bridge exposes one of them
# (--tools, narrowing): a model is never pointed at a tool it does not have.
_GUIDE: tuple[tuple[tuple[str, ...], str], ...] = (
    (("recall_context",), "Before a task, recall what bears on it ({tools})."),
    (("search_memories", "get_preferences"), "Recall before you answer when earlier context could matter ({tools})."),
    (("mark_used",), "Afterwards say which recalled memories you used ({tools})."),
    (("write_memory",), "Remember what will matter later ({tools})."),
    (("summarize_episodes",), "Turn piled-up episodes into lessons ({tools})."),
    (("memory_history", "explain_memory"), "See how a memory changed and why it says what it says ({tools})."),
    (("forget_memory",), "Forget what is wrong or unwanted ({tools})."),
    (
        ("session_state_list", "session_state_get", "session_state_put", "session_state_delete"),
        "The state of a task in progress that agents work on together (the plan, claimed steps, intermediate "
        "results) goes in its session state ({tools}): shared, short-lived, not searched.",
    ),
)


def instructions(tools: Sequence[str]) -> str:
    """What the bridge tells an MCP client's model at initialize, for the tools it exposes."""
    lines = ["Long-term memory shared with other agents through memhub."]
    for group, sentence in _GUIDE:
        present = [name for name in group if name in tools]
        if present:
            lines.append(sentence.format(tools=", ".join(present)))
    lines.append(
        "Namespaces are also resources (memhub://ns/<namespace>): subscribe to one to hear when a teammate changes "
        "a memory there. What this agent may read, write and forget is decided by the hub's policies: a refusal "
        "names what was denied, so choose another namespace or go on without it."
    )
    return " ".join(lines)


def _version() -> str:
    from memhub import __version__  # not importlib.metadata: reading the installed metadata costs the bridge's start

    return __version__


@dataclass
class Bridge:
    """A ready bridge: `server` is the MCPServer to run or to hand to an in-memory `mcp.Client`."""

    settings: BridgeSettings
    server: MemhubServer
    hub: BridgeHubClient
    tools: list[str]
    updates: ResourceUpdates
    """Resource-updated notifications, from the change-feed stream the bridge holds once a client subscribes."""
    resources: list[str]
    """The resource URIs resources/list shows (templates cover every namespace and memory)."""

    def close(self) -> None:
        self.updates.close()
        self.hub.close()

    def __enter__(self) -> Bridge:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


@dataclass
class PreparedBridge:
    """The part of a bridge that answers `initialize`; `finish` builds the rest."""

    settings: BridgeSettings
    server: MemhubServer
    updates: ResourceUpdates
    gate: StartGate
    """Holds requests other than the handshake until the server's loop calls `gate.open()` (cli.py)."""

    def finish(self, channel: grpc.Channel | None = None) -> Bridge:
        """Build the hub client, the operations, the tools and the resources. `channel`: the raw channel to the
        hub the start-up check connected (hub_options.open_channel), for the hub client to adopt."""
        # Imported here, not at the top: these load memhub's gRPC client with its OpenTelemetry instrumentation
        # and pydantic models for every tool's arguments and results, which `initialize` does not need.
        from memhub.bridge.hub_calls import HubCaller
        from memhub.bridge.hub_client import BridgeHubClient
        from memhub.bridge.lifecycle_ops import LifecycleOperations
        from memhub.bridge.operations import MemoryOperations
        from memhub.bridge.resources import ResourceReader, register_resources
        from memhub.bridge.session_ops import SessionOperations
        from memhub.bridge.tools import register_tools

        settings, server = self.settings, self.server
        hub = BridgeHubClient(settings.hub_address, token=settings.token, tls=settings.hub_tls, channel=channel)
        self.updates.attach(hub)
        call = HubCaller(settings.hub_address, settings.retry)
        ops = MemoryOperations(hub, call, settings.narrowing, settings.default_namespace)
        lifecycle = LifecycleOperations(hub, call, settings.narrowing, settings.default_namespace, settings.agent_id or "")
        sessions = SessionOperations(hub, call, settings.narrowing, settings.default_namespace)
        tools = register_tools(server, ops, lifecycle, settings.narrowing.tools, sessions)
        roots = settings.narrowing.namespaces or tuple(
            ns for ns in (settings.default_namespace, f"agents/{settings.agent_id}" if settings.agent_id else None) if ns
        )
        resources = register_resources(server, ResourceReader(hub, call, settings.narrowing), roots)
        log.info(
            "bridge ready",
            extra={
                "agent": settings.agent_id,
                "hub": settings.hub_address,
                "hub_tls": settings.hub_tls is not None,
                "tools": tools,
                "namespaces": list(settings.narrowing.namespaces) or "all the agent may use",
                "default_namespace": settings.default_namespace,
                "resources": resources,
            },
        )
        return Bridge(settings, server, hub, tools, self.updates, resources)


def prepare_bridge(settings: BridgeSettings) -> PreparedBridge:
    """The server that answers `initialize` for the agent whose token is in `settings`, without its tools yet."""
    updates = ResourceUpdates(None, settings.narrowing)
    gate = StartGate()
    server = MemhubServer(
        name="memhub",
        title="memhub memory",
        version=_version(),
        instructions=instructions(settings.narrowing.tools),
        subscriptions=updates,
        middleware=[gate],
    )
    # Clients on protocol versions before 2026-07-28 subscribe with resources/subscribe (the SDK's MCPServer
    # serves only subscriptions/listen; its low-level server takes the older method's handlers). Listen streams
    # are acknowledged once the hub's change-feed stream is open (ResourceUpdates.on_listen). Registered here,
    # not in `finish`: the capabilities `initialize` announces follow from the handlers registered.
    lowlevel = server._lowlevel_server  # noqa: SLF001 - no public accessor
    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, updates.on_subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, updates.on_unsubscribe)
    lowlevel.add_request_handler("subscriptions/listen", SubscriptionsListenRequestParams, updates.on_listen)
    return PreparedBridge(settings, server, updates, gate)


def build_bridge(settings: BridgeSettings) -> Bridge:
    """Build (but do not start) the bridge for the agent whose token is in `settings`."""
    prepared = prepare_bridge(settings)
    prepared.gate.open()
    return prepared.finish()
