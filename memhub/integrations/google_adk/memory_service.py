"""MemhubMemoryService: Google ADK's long-term memory (``google.adk.memory.BaseMemoryService``) on memhub.

    memory = MemhubMemoryService(AsyncMemhubClient(address, token=agent_token), root="agents/travel-bot")
    runner = Runner(agent=agent, app_name="travel", session_service=sessions, memory_service=memory)

``add_session_to_memory`` stores each text event of a session as an episodic memory in
``<root>/<app_name>/<user_id>`` (names outside memhub's alphabet are encoded, memhub/integrations/segments.py),
with the session id as provenance, the event's author as its first entity and its time as the event time. Adding a
session again adds nothing twice: the hub folds repeats within a session into the memory they repeat. The hub's
write gate applies: small talk ("ok, thanks") is not kept, and secrets are redacted. ``search_memory`` is memhub
recall over that namespace, with the rights of the agent whose token the client carries.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions import Session
from google.genai import types

from memhub.aio import AsyncMemhubClient
from memhub.client import memory_input
from memhub.core.namespaces import validate_namespace
from memhub.errors import InvalidArgument
from memhub.integrations.segments import segment

_BATCH = 100  # the hub's limit of memories per write
MAX_CONTENT_CHARS = 16_384


class MemhubMemoryService(BaseMemoryService):
    """ADK memory for the agent whose token ``client`` carries; ``top_k``: memories a search returns.

    ``wait_indexed``: `add_session_to_memory` returns once the session's memories are searchable, as with ADK's
    own in-memory service (without it the index follows within moments, and a search at once can miss them).
    """

    def __init__(self, client: AsyncMemhubClient, *, root: str, top_k: int = 10, wait_indexed: bool = True) -> None:
        try:
            validate_namespace(root, "root")
        except InvalidArgument as exc:
            raise ValueError(str(exc)) from None
        if not 1 <= top_k <= 100:
            raise ValueError(f"top_k is {top_k}; use 1 to 100")
        self._client = client
        self._root = root
        self._top_k = top_k
        self._wait_indexed = wait_indexed

    def namespace(self, app_name: str, user_id: str) -> str:
        """Where the memories of ``user_id`` in ``app_name`` live."""
        return f"{self._root}/{segment(app_name, 'app name')}/{segment(user_id, 'user id')}"

    async def add_session_to_memory(self, session: Session) -> None:
        where = self.namespace(session.app_name, session.user_id)
        memories = []
        for event in session.events:
            text = _text(event.content)
            if not text:
                continue  # function calls and empty turns carry nothing to recall
            occurred = datetime.fromtimestamp(event.timestamp, UTC) if event.timestamp else None
            # The author is the memory's first entity, so the content is the turn's own words (what the write gate
            # judges and recall embeds).
            author = [event.author[:128]] if event.author else []
            memories.append(memory_input(where, text[:MAX_CONTENT_CHARS], type="event", occurred_at=occurred, entities=author))
        for start in range(0, len(memories), _BATCH):
            batch = memories[start : start + _BATCH]
            await self._client.write(batch, session_id=_session_ref(session.id), wait_indexed=self._wait_indexed)

    async def search_memory(self, *, app_name: str, user_id: str, query: str) -> SearchMemoryResponse:
        reply = await self._client.search(query, [self.namespace(app_name, user_id)], top_k=self._top_k)
        entries = []
        for hit in reply.hits:
            author = hit.memory.entities[0] if hit.memory.entities else ""
            text = hit.memory.content
            occurred = hit.memory.occurred_at.ToDatetime(tzinfo=UTC).isoformat()
            role = "user" if author == "user" else "model"
            content = types.Content(role=role, parts=[types.Part(text=text)])
            entries.append(MemoryEntry(content=content, author=author or None, timestamp=occurred))
        return SearchMemoryResponse(memories=entries)


def _text(content: Any) -> str:
    if content is None or not content.parts:
        return ""
    return "\n".join(part.text for part in content.parts if getattr(part, "text", None)).strip()


def _session_ref(session_id: str) -> str:
    """ADK session ids are UUIDs by default, within memhub's session id alphabet; others are made to fit."""
    safe = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "._:/@+-") else "-" for ch in session_id)
    return (safe if safe[:1].isalnum() else f"s{safe}")[:128]
