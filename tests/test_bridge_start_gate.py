"""Under stdio the bridge answers `initialize` before its tools exist and builds them meanwhile (memhub/bridge/cli.py):
what it answers must not depend on that order. The real server (prepare_bridge, then PreparedBridge.finish) with the
SDK's in-memory client: the handshake is answered at once, every other request waits at the start gate until the
bridge is built and then gets the answer a bridge built first gives; a build that failed is reported to them.
"""

from __future__ import annotations

import asyncio

import jwt
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from memhub.bridge import BridgeSettings, build_bridge
from memhub.bridge.server import prepare_bridge

pytestmark = pytest.mark.anyio

NO_HUB = "127.0.0.1:9"  # listing tools and resources never calls the hub
TOKEN = jwt.encode({"sub": "gate-tester"}, "not-a-hub-secret-" * 2, algorithm="HS256")
# Long enough for a request the gate failed to hold to have been answered (an in-memory call takes milliseconds).
HELD_S = 0.5


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def answers(client: Client) -> tuple[object, ...]:
    tools = await client.list_tools()
    resources = await client.list_resources()
    templates = await client.list_resource_templates()
    return tuple(x.model_dump(mode="json") for x in (tools, resources, templates))


async def test_initialize_is_answered_before_the_build_and_the_rest_waits_for_it() -> None:
    settings = BridgeSettings(hub_address=NO_HUB, token=TOKEN)
    with build_bridge(settings) as built_first:
        async with Client(built_first.server) as client:
            expected_init = (client.server_info, client.server_capabilities, client.instructions)
            expected = await answers(client)

    prepared = prepare_bridge(settings)
    async with Client(prepared.server) as client:  # the handshake: answered with nothing built yet
        assert (client.server_info, client.server_capabilities, client.instructions) == expected_init
        held = asyncio.ensure_future(answers(client))
        await asyncio.sleep(HELD_S)
        assert not held.done(), "tools/list was answered before the bridge had its tools"
        bridge = await asyncio.to_thread(prepared.finish)
        prepared.gate.open()
        try:
            assert await held == expected
            assert [tool["name"] for tool in expected[0]["tools"]] == bridge.tools
        finally:
            bridge.close()


async def test_a_build_that_failed_is_the_answer_to_what_waited_for_it() -> None:
    prepared = prepare_bridge(BridgeSettings(hub_address=NO_HUB, token=TOKEN))
    async with Client(prepared.server) as client:
        held = asyncio.ensure_future(client.list_tools())
        await asyncio.sleep(HELD_S)
        prepared.gate.fail("RuntimeError: no tools today")
        with pytest.raises(MCPError, match="the memhub bridge failed to start: RuntimeError: no tools today"):
            await held
        with pytest.raises(MCPError, match="failed to start"):
            await client.call_tool("search_memories", {"query": "x"})
    prepared.updates.close()
