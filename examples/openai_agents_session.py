"""Two agents of the OpenAI Agents SDK on one hub, each with its own token: conversations kept in memhub,
lasting facts remembered and recalled through memhub as function tools.

With the hub running (`memhub serve`, the shipped default policy: an agent owns agents/<its id>/** and
nothing else) and the SDK installed (`pip install "memhub[openai-agents]"`):

    python examples/openai_agents_session.py

No LLM is called: the agents run on the SDK's own ScriptedModel, which makes the tool calls a model would
make. What the tools answer comes from the hub. alice's agent remembers a fact and recalls it on the next
turn; bob's agent, given the same recall tool over the same namespaces, finds nothing, because his token may
read only his own; and bob cannot open alice's conversation.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid

import grpc
from agent_tokens import agent_token, hub_address
from agents import Agent, Runner, RunResult, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from memhub.aio import AsyncMemhubClient
from memhub.integrations.openai_agents import MemhubSession, recall_tool, remember_tool

# The same namespaces for both agents' recall tools: each agent's token decides which of them it may read.
FACTS = ["agents/alice/support/facts", "agents/bob/support/facts"]


def tool_outputs(result: RunResult) -> list[object]:
    """What the tools answered during a run, as the model received it."""
    return [json.loads(item.output) for item in result.new_items if item.type == "tool_call_output_item"]


async def main() -> int:
    set_tracing_disabled(True)  # the SDK would otherwise try to send its traces to OpenAI
    address = hub_address()
    conversation = f"support-{uuid.uuid4().hex[:8]}"  # a new conversation each run
    # --8<-- [start:alice]
    async with AsyncMemhubClient(address, token=agent_token("alice")) as alice:
        model = ScriptedModel(  # stands in for an LLM: the calls it makes, turn by turn
            [
                [function_call("remember", {"fact": "Alice's locker code is 4417"}, call_id="call-1")],
                [assistant_message("Noted.")],
                [function_call("recall_memories", {"query": "locker code"}, call_id="call-2")],
                [assistant_message("Your locker code is 4417.")],
            ]
        )
        agent = Agent(
            name="support",
            model=model,
            tools=[recall_tool(alice, FACTS), remember_tool(alice, "agents/alice/support/facts")],
        )
        session = MemhubSession(conversation, client=alice, namespace="agents/alice/support/conversations")
        first = await Runner.run(agent, "Please remember my locker code: 4417", session=session)
        print(f"[alice] remember answered: {tool_outputs(first)}")
        second = await Runner.run(agent, "What is my locker code?", session=session)
        recalled = [m["content"] for output in tool_outputs(second) for m in output["memories"]]  # type: ignore[index]
        print(f"[alice] recall_memories found: {recalled}")
        print(f"[alice] the conversation in memhub holds {len(await session.get_items())} items")
    # --8<-- [end:alice]

    # --8<-- [start:bob]
    async with AsyncMemhubClient(address, token=agent_token("bob")) as bob:
        model = ScriptedModel(
            [
                [function_call("recall_memories", {"query": "locker code"}, call_id="call-1")],
                [assistant_message("I don't know that locker code.")],
            ]
        )
        agent = Agent(name="support", model=model, tools=[recall_tool(bob, FACTS)])
        result = await Runner.run(agent, "What is Alice's locker code?")
        print(f"[bob]   recall_memories found: {tool_outputs(result)[0]['memories']}")  # type: ignore[index]
        try:
            await MemhubSession(conversation, client=bob, namespace="agents/alice/support/conversations").get_items()
        except grpc.aio.AioRpcError as exc:
            print(f"[bob]   reading alice's conversation: {exc.code().name}")
    # --8<-- [end:bob]
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
