"""memhub as Google ADK's memory service, against a real hub: sessions made by ADK's own session service go in,
search_memory recalls them as MemoryEntry objects, and two agents' tokens decide what each finds."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from conftest import Fleet, Stack
from google.adk.events import Event
from google.adk.sessions import InMemorySessionService, Session
from google.genai import types

from memhub.aio import AsyncMemhubClient
from memhub.integrations.google_adk import MemhubMemoryService


async def _session(app: str, user: str, turns: list[tuple[str, str]]) -> Session:
    sessions = InMemorySessionService()
    session = await sessions.create_session(app_name=app, user_id=user)
    for author, text in turns:
        event = Event(
            author=author, content=types.Content(role="user" if author == "user" else "model", parts=[types.Part(text=text)])
        )
        await sessions.append_event(session, event)
    return session


TRIP = [
    ("user", "I'm flying to Lisbon on the 14th and I need a hotel near the Alfama district"),
    ("travel_agent", "Booked the Memmo Alfama hotel for three nights from the 14th"),
    ("user", "ok thanks"),  # small talk: the hub's write gate does not keep it
]


def test_a_session_is_remembered_once_and_recalled_as_memory_entries(stacks: dict[str, Stack], ns: str) -> None:
    hub = stacks["external-pg"]

    async def scenario() -> None:
        async with AsyncMemhubClient(hub.address, token=hub.token("adk-agent")) as client:
            memory = MemhubMemoryService(client, root=ns)
            session = await _session("Travel App", "user-7", TRIP)
            await memory.add_session_to_memory(session)
            await memory.add_session_to_memory(session)  # a session may be added again: nothing is stored twice
            where = memory.namespace("Travel App", "user-7")
            assert where.startswith(f"{ns}/x.") and where.endswith("/user-7")
            stored = await client.list([where])
            assert sorted((m.entities[0], m.content) for m in stored.memories) == sorted(TRIP[:2])
            assert all(m.source.session_id == session.id for m in stored.memories)
            found = None
            for _ in range(100):  # memhub indexes asynchronously after the write
                found = await memory.search_memory(app_name="Travel App", user_id="user-7", query="which hotel in Lisbon?")
                if found.memories:
                    break
                await asyncio.sleep(0.2)
            assert found is not None and found.memories
            recalled = {(m.author, m.content.parts[0].text) for m in found.memories}
            assert set(TRIP[:2]) <= recalled and all(m.timestamp for m in found.memories)
            other_user = await memory.search_memory(app_name="Travel App", user_id="user-8", query="which hotel in Lisbon?")
            assert other_user.memories == []

    asyncio.run(scenario())


def test_bad_settings_are_refused(stacks: dict[str, Stack]) -> None:
    with pytest.raises(ValueError, match="root"):
        MemhubMemoryService(None, root="Bad Root")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="top_k is 0"):
        MemhubMemoryService(None, root="agents/a", top_k=0)  # type: ignore[arg-type]


def test_two_agents_see_different_memories(fleet: Fleet) -> None:
    run = uuid.uuid4().hex[:8]

    async def scenario() -> tuple[int, int, int]:
        async with (
            AsyncMemhubClient(fleet.address, token=fleet.token("alice")) as alice,
            AsyncMemhubClient(fleet.address, token=fleet.token("bob")) as bob,
        ):
            alice_memory = MemhubMemoryService(alice, root=f"agents/alice/adk-{run}")
            await alice_memory.add_session_to_memory(await _session("travel", "u1", TRIP[:2]))
            for _ in range(100):
                mine = await alice_memory.search_memory(app_name="travel", user_id="u1", query="hotel in Lisbon")
                if mine.memories:
                    break
                await asyncio.sleep(0.2)
            # Bob's service pointed at Alice's root: the hub shows him nothing there.
            spying = MemhubMemoryService(bob, root=f"agents/alice/adk-{run}")
            theirs = await spying.search_memory(app_name="travel", user_id="u1", query="hotel in Lisbon")
            own = await MemhubMemoryService(bob, root=f"agents/bob/adk-{run}").search_memory(
                app_name="travel", user_id="u1", query="hotel"
            )
            return len(mine.memories), len(theirs.memories), len(own.memories)

    assert asyncio.run(scenario()) == (2, 0, 0)
