"""The MCP bridge's memory_history follows GetMemoryHistory's pages (issue 22): the whole chain, not 200.

Real parts: the hub over gRPC, the bridge over stdio, the MCP SDK client.
"""

from __future__ import annotations

import pytest
from conftest import Stack
from test_bridge_tools import call_ok, connected, text

from memhub.client import memory_input

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_memory_history_pages_through_a_long_chain(stack: Stack, ns: str) -> None:
    def version(i: int):  # noqa: ANN202 - a MemoryInput
        return memory_input(ns, f"the door code is {i}", kind="semantic", type="fact", subject_key="door/code")

    written = [stack.client.write([version(i)]).results[0].memory.id for i in range(205)]
    async with connected(stack.address, stack.token("tester")) as client:
        seen: list[str] = []
        token = ""
        while True:
            out = await call_ok(client, "memory_history", {"id": written[0], "limit": 100, "page_token": token})
            seen += [v["id"] for v in out["versions"]]
            token = out["next_page_token"] or ""
            if not token:
                break
        assert seen == written  # every version once, oldest first, past the old 200
        bad = await client.call_tool("memory_history", {"id": written[0], "page_token": "not-a-token"})
        assert "rejected an argument: page_token: " in text(bad), text(bad)
