"""The URIs of the bridge's MCP resources: `memhub://ns/<namespace>` and `memhub://memory/<id>`.

Apart from resources.py, which reads them through the hub, so that the subscription bus
(resource_updates.py) can be built before the bridge answers `initialize` without loading the hub
client and the result models; resources.py re-exports these names.
"""

from __future__ import annotations

SCHEME = "memhub"
NAMESPACE_PREFIX = f"{SCHEME}://ns/"
MEMORY_PREFIX = f"{SCHEME}://memory/"


def namespace_uri(namespace: str) -> str:
    return NAMESPACE_PREFIX + namespace


def memory_uri(memory_id_: str) -> str:
    return MEMORY_PREFIX + memory_id_
