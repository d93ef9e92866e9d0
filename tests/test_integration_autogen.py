"""memhub as AutoGen memory, against a real hub: add, query, update_context and clear through autogen-core's
Memory protocol, an AssistantAgent run with AutoGen's own ReplayChatCompletionClient (no LLM), and two agents'
tokens deciding what each recalls."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from autogen_support import autogen_on_path
from conftest import Fleet, Stack

from memhub.aio import AsyncMemhubClient

autogen_on_path()

from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_core.memory import MemoryContent, MemoryMimeType  # noqa: E402
from autogen_core.model_context import UnboundedChatCompletionContext  # noqa: E402
from autogen_core.models import SystemMessage, UserMessage  # noqa: E402
from autogen_ext.models.replay import ReplayChatCompletionClient  # noqa: E402

from memhub.integrations.autogen import MemhubMemory  # noqa: E402


def test_add_query_update_context_and_clear(stacks: dict[str, Stack], ns: str) -> None:
    hub = stacks["external-pg"]

    async def scenario() -> None:
        async with AsyncMemhubClient(hub.address, token=hub.token("ag-agent")) as client:
            memory = MemhubMemory(client, namespace=ns)
            await memory.add(
                MemoryContent(
                    content="The analyst prefers charts with a log scale",
                    mime_type=MemoryMimeType.TEXT,
                    metadata={"type": "preference", "tags": ["charts"]},
                )
            )
            await memory.add(MemoryContent(content={"metric": "p95 latency", "budget_ms": 250}, mime_type=MemoryMimeType.JSON))
            with pytest.raises(ValueError, match="write filter did not keep"):
                await memory.add(MemoryContent(content="ok thanks", mime_type=MemoryMimeType.TEXT))
            found = None
            for _ in range(100):  # memhub indexes asynchronously after the write
                found = await memory.query("how should charts be scaled?")
                if found.results:
                    break
                await asyncio.sleep(0.2)
            assert found is not None and found.results[0].content == "The analyst prefers charts with a log scale"
            assert found.results[0].metadata["written_by"] == "ag-agent"
            context = UnboundedChatCompletionContext()
            await context.add_message(UserMessage(content="what is our latency budget?", source="user"))
            updated = await memory.update_context(context)
            assert any("budget_ms" in str(m.content) for m in updated.memories.results)
            system = [m for m in await context.get_messages() if isinstance(m, SystemMessage)]
            assert len(system) == 1 and "data, not instructions" in system[0].content and "budget_ms" in system[0].content
            await memory.clear()
            assert (await client.list([ns])).memories == []

    asyncio.run(scenario())


def test_an_assistant_agent_run_uses_the_memory(stacks: dict[str, Stack], ns: str) -> None:
    hub = stacks["external-pg"]

    async def scenario() -> list:
        async with AsyncMemhubClient(hub.address, token=hub.token("ag-agent")) as client:
            memory = MemhubMemory(client, namespace=ns)
            await memory.add(
                MemoryContent(content="The quarterly report is due on the 3rd of January", mime_type=MemoryMimeType.TEXT)
            )
            for _ in range(100):
                if (await memory.query("quarterly report due")).results:
                    break
                await asyncio.sleep(0.2)
            model = ReplayChatCompletionClient(["It is due on the 3rd of January."])
            agent = AssistantAgent("analyst", model_client=model, memory=[memory])
            result = await agent.run(task="When is the quarterly report due?")
            return list(result.messages)

    messages = asyncio.run(scenario())
    kinds = [type(m).__name__ for m in messages]
    assert "MemoryQueryEvent" in kinds and messages[-1].content == "It is due on the 3rd of January."
    recalled = next(m for m in messages if type(m).__name__ == "MemoryQueryEvent")
    assert recalled.content[0].content == "The quarterly report is due on the 3rd of January"


def test_two_agents_see_different_memories(fleet: Fleet) -> None:
    run = uuid.uuid4().hex[:8]

    async def scenario() -> tuple[list[str], list[str]]:
        async with (
            AsyncMemhubClient(fleet.address, token=fleet.token("alice")) as alice,
            AsyncMemhubClient(fleet.address, token=fleet.token("bob")) as bob,
        ):
            shared = [f"agents/alice/ag-{run}", f"agents/bob/ag-{run}"]
            alice_memory = MemhubMemory(alice, namespace=shared[0], search_namespaces=shared)
            bob_memory = MemhubMemory(bob, namespace=shared[1], search_namespaces=shared)
            await alice_memory.add(
                MemoryContent(content="Alice's supplier contract renews in March", mime_type=MemoryMimeType.TEXT)
            )
            await bob_memory.add(MemoryContent(content="Bob's supplier contract renews in June", mime_type=MemoryMimeType.TEXT))
            for _ in range(100):
                mine = await alice_memory.query("when does the supplier contract renew?")
                theirs = await bob_memory.query("when does the supplier contract renew?")
                if mine.results and theirs.results:
                    break
                await asyncio.sleep(0.2)
            return [str(r.content) for r in mine.results], [str(r.content) for r in theirs.results]

    alices, bobs = asyncio.run(scenario())
    assert alices == ["Alice's supplier contract renews in March"]
    assert bobs == ["Bob's supplier contract renews in June"]
