"""Two AutoGen assistant agents on one hub, each with memhub as its memory and its own token.

With the hub running (`memhub serve`, the shipped default policy: an agent owns agents/<its id>/** and
nothing else) and AutoGen installed beside memhub without its protobuf pin (docs/integrations/autogen.md):

    pip install --no-deps autogen-core==0.7.5 autogen-agentchat==0.7.5 autogen-ext==0.7.5 jsonref~=1.1 pillow
    python examples/autogen_memory.py

No LLM is called: the agents run on AutoGen's own ReplayChatCompletionClient, which replays a fixed answer.
What the memory recalls for the task comes from the hub: alice's agent recalls her preference; bob's, given
the same namespaces to search, recalls nothing, because his token may read only his own; and bob may not add
to alice's memory.
"""

from __future__ import annotations

import asyncio
import sys

import grpc
from agent_tokens import agent_token, hub_address
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import MemoryQueryEvent
from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_ext.models.replay import ReplayChatCompletionClient

from memhub.aio import AsyncMemhubClient
from memhub.integrations.autogen import MemhubMemory

# Both agents' memories search both namespaces: each agent's token decides which of them it may read.
NOTES = ["agents/alice/autogen/notes", "agents/bob/autogen/notes"]
TASK = "How should I scale the latency chart?"


def recalled(messages: list[object]) -> list[str]:
    """What the agent's memory put into its model context for the task (AutoGen reports it as an event)."""
    return [str(item.content) for m in messages if isinstance(m, MemoryQueryEvent) for item in m.content]


async def main() -> int:
    address = hub_address()
    async with (
        AsyncMemhubClient(address, token=agent_token("alice")) as alice,
        AsyncMemhubClient(address, token=agent_token("bob")) as bob,
    ):
        # --8<-- [start:alice]
        alice_memory = MemhubMemory(alice, namespace="agents/alice/autogen/notes", search_namespaces=NOTES)
        preference = "The analyst prefers latency charts with a log scale"
        await alice_memory.add(MemoryContent(content=preference, mime_type=MemoryMimeType.TEXT, metadata={"type": "preference"}))
        model = ReplayChatCompletionClient(["I will draw it with a log scale."])  # stands in for an LLM
        agent = AssistantAgent("analyst", model_client=model, memory=[alice_memory])
        result = await agent.run(task=TASK)
        print(f"[alice] memory recalled: {recalled(list(result.messages))}")
        # --8<-- [end:alice]

        # --8<-- [start:bob]
        bob_memory = MemhubMemory(bob, namespace="agents/bob/autogen/notes", search_namespaces=NOTES)
        model = ReplayChatCompletionClient(["Linear, I suppose."])
        agent = AssistantAgent("analyst", model_client=model, memory=[bob_memory])
        result = await agent.run(task=TASK)
        print(f"[bob]   memory recalled: {recalled(list(result.messages))}")
        try:
            intruder = MemhubMemory(bob, namespace="agents/alice/autogen/notes")
            await intruder.add(MemoryContent(content="The analyst prefers linear charts", mime_type=MemoryMimeType.TEXT))
        except grpc.aio.AioRpcError as exc:
            print(f"[bob]   adding to alice's memory: {exc.code().name}")
        # --8<-- [end:bob]

        # --8<-- [start:clear]
        await alice_memory.clear()  # forgets the namespace's memories (alice may forget her own)
        print(f"[alice] after clear, a query finds {len((await alice_memory.query(TASK)).results)} memories")
        # --8<-- [end:clear]
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
