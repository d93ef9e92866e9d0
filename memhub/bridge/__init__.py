"""memhub's MCP bridge: one process per agent, giving any MCP client memory tools on the hub.

It holds that agent's hub token, exposes memory tools (narrowing.TOOL_NAMES:
write, search, forget, preferences, context, marking what was used,
consolidation, history, lineage and shared session state; `--tools core` for
the first five) over stdio or streamable HTTP, may narrow the agent's reach
(namespaces, tools) but never widen it, and traces every tool call into the
hub. See memhub/bridge/README.md.

    from memhub.bridge import BridgeSettings, build_bridge
    with build_bridge(BridgeSettings(hub_address="127.0.0.1:50051", token=token)) as bridge:
        ...  # bridge.server is an mcp.server.MCPServer

The public names load lazily: `memhub --help` imports memhub.bridge.cli and
should not pay for the MCP SDK and gRPC stubs.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Bridge": "memhub.bridge.server",
    "build_bridge": "memhub.bridge.server",
    "BridgeSettings": "memhub.bridge.config",
    "SettingsError": "memhub.bridge.config",
    "RetryPolicy": "memhub.bridge.hub_options",
    "HubTls": "memhub.bridge.hub_options",
    "ConfigError": "memhub.bridge.narrowing",
    "Narrowing": "memhub.bridge.narrowing",
    "load_narrowing": "memhub.bridge.narrowing",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'memhub.bridge' has no attribute {name!r}")
