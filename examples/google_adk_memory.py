"""Two agents' Google ADK runners on one hub, each with a memhub memory service and its own token.

With the hub running (`memhub serve`, the shipped default policy: an agent owns agents/<its id>/** and
nothing else) and ADK installed (`pip install "memhub[google-adk]"`):

    python examples/google_adk_memory.py

No LLM is called: the agent is an ADK custom agent (a BaseAgent subclass, ADK's way to write an agent's logic
in code) that notes what it is told and answers questions from `search_memory`. ADK has no scripted model of
its own; an LlmAgent reaches the same memory service through ADK's load_memory and preload_memory tools. alice's
runner remembers a trip from one session and recalls it in the next; bob's runner, with his token, finds
nothing of it, even when his memory service is pointed at alice's namespace, and may not write there.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncGenerator

import grpc
from agent_tokens import agent_token, hub_address
from google.adk.agents import BaseAgent
from google.adk.agents.invocation_context import InvocationContext
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

from memhub.aio import AsyncMemhubClient
from memhub.integrations.google_adk import MemhubMemoryService

APP, USER = "travel", "ana"


# --8<-- [start:agent]
class Concierge(BaseAgent):
    """Answers a question with what the runner's memory service recalls for it; notes anything else."""

    async def _run_async_impl(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        said = "".join(part.text or "" for part in ctx.user_content.parts or []) if ctx.user_content else ""
        reply = "Noted."
        if said.endswith("?") and ctx.memory_service is not None:
            found = await ctx.memory_service.search_memory(app_name=ctx.app_name, user_id=ctx.user_id, query=said)
            texts = [part.text for m in found.memories for part in (m.content.parts or []) if part.text]
            reply = f"From memory: {texts[0]}" if texts else "I don't remember anything about that."
        yield Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            content=types.Content(role="model", parts=[types.Part(text=reply)]),
        )


# --8<-- [end:agent]


async def say(runner: Runner, session_id: str, text: str) -> str:
    """One user turn in ``session_id`` (created when new); the agent's reply."""
    sessions = runner.session_service
    if await sessions.get_session(app_name=APP, user_id=USER, session_id=session_id) is None:
        await sessions.create_session(app_name=APP, user_id=USER, session_id=session_id)
    message = types.Content(role="user", parts=[types.Part(text=text)])
    replies = [
        part.text
        async for event in runner.run_async(user_id=USER, session_id=session_id, new_message=message)
        for part in (event.content.parts or [] if event.content else [])
        if part.text
    ]
    return replies[-1]


async def main() -> int:
    address = hub_address()
    # --8<-- [start:alice]
    async with AsyncMemhubClient(address, token=agent_token("alice")) as alice:
        memory = MemhubMemoryService(alice, root="agents/alice/adk")
        runner = Runner(
            app_name=APP, agent=Concierge(name="concierge"), session_service=InMemorySessionService(), memory_service=memory
        )
        await say(runner, "trip-planning", "I'm flying to Lisbon on the 14th and need a hotel near the Alfama district")
        finished = await runner.session_service.get_session(app_name=APP, user_id=USER, session_id="trip-planning")
        assert finished is not None
        await memory.add_session_to_memory(finished)  # the hub keeps the facts, drops the "Noted." small talk
        print(f"[alice] concierge, next session: {await say(runner, 'next-day', 'Which district did I want a hotel in?')}")
    # --8<-- [end:alice]

    # --8<-- [start:bob]
    async with AsyncMemhubClient(address, token=agent_token("bob")) as bob:
        memory = MemhubMemoryService(bob, root="agents/bob/adk")
        runner = Runner(
            app_name=APP, agent=Concierge(name="concierge"), session_service=InMemorySessionService(), memory_service=memory
        )
        print(f"[bob]   concierge: {await say(runner, 'next-day', 'Which district did I want a hotel in?')}")
        spying = MemhubMemoryService(bob, root="agents/alice/adk")  # bob's token on alice's namespace
        found = await spying.search_memory(app_name=APP, user_id=USER, query="hotel in Lisbon")
        print(f"[bob]   searching alice's namespace finds {len(found.memories)} memories")
        session = await runner.session_service.get_session(app_name=APP, user_id=USER, session_id="next-day")
        assert session is not None
        try:
            await spying.add_session_to_memory(session)
        except grpc.aio.AioRpcError as exc:
            print(f"[bob]   adding a session to alice's namespace: {exc.code().name}")
    # --8<-- [end:bob]
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
