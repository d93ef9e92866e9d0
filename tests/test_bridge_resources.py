"""Memories as MCP resources, and resource-updated notifications when a teammate writes, through the real mcp 2.x
SDK client: in memory on both wire eras (2026-07-28 `subscriptions/listen`, and `resources/subscribe` on a
2025-11-25 connection) and over streamable HTTP against a `memhub bridge` process.

Hubs: `stack` (open test policy) for the round trips; `fleet` (shipped default + examples/fleet) where
rights matter: dave leads support (reads and subscribes to teams/support), alice is on the team (reads
and writes it, may not subscribe), eve owns only agents/eve.
"""

from __future__ import annotations

import contextlib
import uuid
import warnings
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from conftest import Fleet, Stack
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import ResourceUpdatedNotification
from test_bridge_transports import http_bridge, http_client

from memhub.bridge import BridgeSettings, Narrowing, build_bridge
from memhub.client import MemhubClient, memory_input

pytestmark = pytest.mark.anyio
WAIT_S = 60


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@contextlib.asynccontextmanager
async def connected(address: str, token: str, **options: Any) -> AsyncIterator[Client]:
    """The SDK client, in memory, on a fresh bridge for the agent ``token`` names; ``options`` go to Client or,
    for ``narrowing``, to the bridge."""
    settings = {k: options.pop(k) for k in ("narrowing",) if k in options}
    with build_bridge(BridgeSettings(hub_address=address, token=token, **settings)) as bridge:
        async with Client(bridge.server, **options) as client:
            yield client


def _write(client: MemhubClient, ns: str, content: str) -> str:
    return client.write([memory_input(ns, content, type="fact")]).results[0].memory.id


async def _next_uri(sub: Any) -> str:
    with anyio.fail_after(WAIT_S):
        async for event in sub:
            return event.uri
    raise AssertionError("the listen stream ended")


async def test_a_listening_client_hears_a_teammates_write_and_reads_it(stack: Stack, ns: str) -> None:
    uri = f"memhub://ns/{ns}"
    teammate = stack.client_as("teammate")
    async with connected(stack.address, stack.token("reader")) as client:
        assert client.server_capabilities.resources.subscribe is True
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert templates == {"memhub://ns/{+namespace}", "memhub://memory/{id}"}
        assert "memhub://ns/agents/reader" in {str(r.uri) for r in (await client.list_resources()).resources}
        async with client.listen(resource_subscriptions=[uri]) as sub:
            mid = _write(teammate, f"{ns}/findings", "Finding: the cache hit rate fell to 40% on Monday")
            assert await _next_uri(sub) == uri  # its ancestor namespace's resource
        read = await client.read_resource(uri)
    text = read.contents[0].text
    assert f"id={mid} by=teammate" in text and "│ Finding: the cache hit rate fell to 40% on Monday" in text
    teammate.close()


async def test_a_memory_resource_updates_when_it_is_forgotten(stack: Stack, ns: str) -> None:
    teammate = stack.client_as("teammate")
    mid = _write(teammate, ns, "The build farm has 12 runners")
    uri = f"memhub://memory/{mid}"
    async with connected(stack.address, stack.token("reader")) as client:
        assert "│ The build farm has 12 runners" in (await client.read_resource(uri)).contents[0].text
        async with client.listen(resource_subscriptions=[uri]) as sub:
            teammate.forget(ids=[mid], reason="two runners were retired")
            assert await _next_uri(sub) == uri
        after = (await client.read_resource(uri)).contents[0].text
    assert "status=forgotten" in after and "12 runners" not in after  # the tombstone, never the content
    teammate.close()


async def test_an_older_client_subscribes_with_resources_subscribe(stack: Stack, ns: str) -> None:
    uri = f"memhub://ns/{ns}"
    notified: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            notified.append(str(message.params.uri))

    teammate = stack.client_as("teammate")
    async with connected(stack.address, stack.token("reader"), mode="legacy", message_handler=on_message) as client:
        assert client.protocol_version < "2026-07-28" and client.server_capabilities.resources.subscribe is True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the SDK marks resources/subscribe deprecated for new protocol versions
            await client.subscribe_resource(uri)
            with pytest.raises(MCPError, match="not a memhub resource"):
                await client.subscribe_resource("file:///etc/passwd")
        _write(teammate, ns, "Legacy clients hear about teammates' writes too")
        with anyio.fail_after(WAIT_S):
            while uri not in notified:
                await anyio.sleep(0.05)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await client.unsubscribe_resource(uri)
    teammate.close()


async def test_narrowing_bounds_what_is_read_and_what_is_announced(stack: Stack, ns: str) -> None:
    inside, outside = f"{ns}/inside", f"{ns}/outside"
    teammate = stack.client_as("teammate")
    narrowing = Narrowing(namespaces=(inside,))
    async with connected(stack.address, stack.token("reader"), narrowing=narrowing) as client:
        assert {str(r.uri) for r in (await client.list_resources()).resources} == {f"memhub://ns/{inside}"}
        with pytest.raises(MCPError, match="outside"):
            await client.read_resource(f"memhub://ns/{outside}")
        async with client.listen(resource_subscriptions=[f"memhub://ns/{outside}", f"memhub://ns/{inside}"]) as sub:
            _write(teammate, outside, "Written where this bridge may not look")
            _write(teammate, inside, "Written where this bridge may look")
            # In feed order the outside write came first: announced, it would have arrived first.
            assert await _next_uri(sub) == f"memhub://ns/{inside}"
    teammate.close()


async def test_updates_come_only_from_namespaces_the_agent_may_read_and_subscribe_to(fleet: Fleet) -> None:
    run = uuid.uuid4().hex[:8]
    team_uri, own_uri = f"memhub://ns/teams/support/{run}", f"memhub://ns/agents/eve/{run}"
    alice, eve = fleet.client("alice"), fleet.client("eve")
    async with connected(fleet.address, fleet.token("eve")) as client:
        async with client.listen(resource_subscriptions=[team_uri, own_uri]) as sub:
            _write(alice, f"teams/support/{run}", "Ticket 91 was escalated")  # eve may not read it
            _write(eve, f"agents/eve/{run}", "Eve's own draft")
            assert await _next_uri(sub) == own_uri
    alice.close()
    eve.close()


async def test_over_streamable_http_a_lead_hears_a_team_members_write(fleet: Fleet) -> None:
    run = uuid.uuid4().hex[:8]
    uri = f"memhub://ns/teams/support/{run}"
    alice = fleet.client("alice")
    with http_bridge(fleet, "dave") as bridge:
        async with http_client(bridge) as client:
            async with client.listen(resource_subscriptions=[uri]) as sub:
                mid = _write(alice, f"teams/support/{run}", "The refund queue is empty again")
                assert await _next_uri(sub) == uri
            text = (await client.read_resource(uri)).contents[0].text
    assert f"id={mid} by=alice" in text
    alice.close()
