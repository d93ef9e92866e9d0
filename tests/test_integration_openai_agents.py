"""memhub in the OpenAI Agents SDK, against a real hub: MemhubSession honours the Session contract (order, limit,
pop, clear, concurrent writers), a Runner run with the SDK's own ScriptedModel keeps its conversation there and
calls memhub recall as a function tool, and two agents' tokens decide what each sees."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest
from agents import Agent, Runner
from agents.testing import ScriptedModel, assistant_message, function_call
from conftest import Fleet, Stack

from memhub.aio import AsyncMemhubClient
from memhub.client import memory_input
from memhub.integrations.openai_agents import MemhubSession, recall_tool, remember_tool

T = TypeVar("T")


@pytest.fixture
def hub(stacks: dict[str, Stack]) -> Stack:
    return stacks["external-pg"]


def run(address: str, token: str, scenario: Callable[[AsyncMemhubClient], Awaitable[T]]) -> T:
    async def main() -> T:
        async with AsyncMemhubClient(address, token=token) as client:
            return await scenario(client)

    return asyncio.run(main())


def test_the_session_keeps_items_in_order_and_pops_and_clears(hub: Stack, ns: str) -> None:
    async def scenario(client: AsyncMemhubClient) -> None:
        session = MemhubSession("conv-1", client=client, namespace=ns)
        assert await session.get_items() == []
        items = [
            {"role": "user", "content": "ok"},  # small talk a memory write would filter: kept exactly here
            {"role": "assistant", "content": [{"type": "output_text", "text": "Hello!"}]},
            {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"id": 7}'},
        ]
        await session.add_items(items[:2])
        await session.add_items(items[2:])
        assert await session.get_items() == items
        assert await session.get_items(limit=2) == items[1:]
        assert await session.pop_item() == items[2]
        assert await session.get_items() == items[:2]
        # Two writers at once never overwrite each other.
        other = MemhubSession("conv-1", client=client, namespace=ns)
        await asyncio.gather(
            *(s.add_items([{"role": "user", "content": f"message {i}"}]) for i, s in enumerate([session, other] * 4))
        )
        assert len(await session.get_items()) == 10
        await session.clear_session()
        assert await session.get_items() == [] and await session.pop_item() is None

    run(hub.address, hub.token("oa-agent"), scenario)


def test_keep_last_trims_the_oldest_items(hub: Stack, ns: str) -> None:
    async def scenario(client: AsyncMemhubClient) -> list:
        session = MemhubSession("conv-trim", client=client, namespace=ns, keep_last=3)
        for i in range(5):
            await session.add_items([{"role": "user", "content": f"turn {i}"}])
        return await session.get_items()

    assert [i["content"] for i in run(hub.address, hub.token("oa-agent"), scenario)] == ["turn 2", "turn 3", "turn 4"]
    with pytest.raises(ValueError, match="keep_last is 0"):
        MemhubSession("x", client=None, namespace=ns, keep_last=0)  # type: ignore[arg-type]


def test_a_run_keeps_its_conversation_in_the_session_and_recalls_through_the_tool(hub: Stack, ns: str) -> None:
    hub.client.write(
        [memory_input(ns, "The customer's order 4312 ships from the Leeds warehouse", type="fact")], wait_indexed=True
    )

    async def scenario(client: AsyncMemhubClient) -> tuple[str, list, str]:
        model = ScriptedModel(
            [
                [function_call("recall_memories", {"query": "where does order 4312 ship from"}, call_id="call-1")],
                [assistant_message("It ships from Leeds.")],
                [assistant_message("You asked where order 4312 ships from.")],
            ]
        )
        agent = Agent(name="support", model=model, tools=[recall_tool(client, [ns]), remember_tool(client, ns)])
        session = MemhubSession("conv-run", client=client, namespace=ns)
        first = await Runner.run(agent, "Where does my order 4312 ship from?", session=session)
        second = await Runner.run(agent, "What did I just ask?", session=session)
        assert second.final_output == "You asked where order 4312 ships from."
        # The second model call was given the whole first exchange, read back from memhub.
        return first.final_output, await session.get_items(), json.dumps(model.calls[-1].input, default=str)

    final, items, second_call = run(hub.address, hub.token("oa-agent"), scenario)
    assert final == "It ships from Leeds."
    tool_output = next(i for i in items if i.get("type") == "function_call_output")
    assert "Leeds warehouse" in tool_output["output"]
    assert [i.get("role") for i in items if i.get("role")] == ["user", "assistant", "user", "assistant"]
    assert "Where does my order 4312 ship from?" in second_call


def test_two_agents_see_different_memories_through_the_tool(fleet: Fleet) -> None:
    run_id = uuid.uuid4().hex[:8]
    alice_ns, bob_ns = f"agents/alice/oa-{run_id}", f"agents/bob/oa-{run_id}"
    with fleet.client("alice") as alice:
        alice.write([memory_input(alice_ns, "Alice's locker code is 4417", type="fact")], wait_indexed=True)

    async def recall(client: AsyncMemhubClient) -> list[dict]:
        tool = recall_tool(client, [alice_ns, bob_ns])
        answer = await tool.on_invoke_tool(None, json.dumps({"query": "locker code"}))  # type: ignore[arg-type]
        return json.loads(answer).get("memories", [])

    assert [m["content"] for m in run(fleet.address, fleet.token("alice"), recall)] == ["Alice's locker code is 4417"]
    assert run(fleet.address, fleet.token("bob"), recall) == []

    async def read_alices_session(client: AsyncMemhubClient) -> str:
        try:
            await MemhubSession("s", client=client, namespace=alice_ns).get_items()
        except Exception as exc:  # noqa: BLE001 - the refusal is what is checked
            return type(exc).__name__ + str(getattr(exc, "code", lambda: "")())
        return "read"

    assert "PERMISSION_DENIED" in run(fleet.address, fleet.token("bob"), read_alices_session)
