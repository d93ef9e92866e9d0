"""MemhubSession: the OpenAI Agents SDK's conversation memory (``agents.memory.Session``) in memhub's shared
session state.

    session = MemhubSession("support-4312", client=AsyncMemhubClient(address, token=agent_token),
                            namespace="agents/support-bot/conversations")
    result = await Runner.run(agent, "Where is my order?", session=session)

A conversation is working state, not lasting memory: its items must come back exactly as they were added (tool
calls included), in order, and be popped and cleared, which memhub's session state gives (exact JSON under
(namespace, session id, key), compare-and-set versions) and memories do not (the write gate filters small talk
and redacts secrets). Items live under keys ``item/<sequence>``; a counter key hands out sequence numbers with
compare-and-set, so concurrent writers to one session never overwrite each other. Entries expire (``ttl``, a day
by default, at most the hub's limit of 7 days), and a session holds at most the hub's 256 keys and 1 MiB:
``keep_last`` trims the oldest items beyond that many. Lasting facts belong in memories: see `recall_tool`.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import grpc

from memhub.aio import AsyncMemhubClient
from memhub.client import conflict_version
from memhub.v1 import session_pb2

ITEM_PREFIX = "item/"
COUNTER_KEY = "next-item"
_PAGE = 256  # the hub's page limit for session-state lists
_RETRIES = 20


def _item_key(sequence: int) -> str:
    return f"{ITEM_PREFIX}{sequence:012d}"  # fixed width: key order is insertion order


class MemhubSession:
    """One conversation's items, kept for the agent whose token the client carries."""

    session_settings: Any = None

    def __init__(
        self,
        session_id: str,
        *,
        client: AsyncMemhubClient,
        namespace: str,
        ttl: timedelta = timedelta(days=1),
        keep_last: int | None = None,
    ) -> None:
        if keep_last is not None and keep_last < 1:
            raise ValueError(f"keep_last is {keep_last}; give at least 1, or None to keep every item")
        self.session_id = session_id
        self.namespace = namespace
        self._client = client
        self._ttl = ttl
        self._keep_last = keep_last

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The conversation in order; with ``limit``, its latest ``limit`` items."""
        entries = await self._entries(keys_only=False)
        if limit is not None:
            entries = entries[-limit:] if limit > 0 else []
        return [json.loads(e.value_json) for e in entries]

    async def add_items(self, items: list[Any]) -> None:
        if not items:
            return
        first = await self._reserve(len(items))
        for offset, item in enumerate(items):
            try:
                await self._client.session_put(
                    self.namespace, self.session_id, _item_key(first + offset), item, expected_version=0, ttl=self._ttl
                )
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED:
                    raise RuntimeError(
                        f"session {self.session_id!r} is full ({exc.details()}); create the MemhubSession with keep_last "
                        "to drop the oldest items, or start a new session"
                    ) from exc
                raise
        if self._keep_last is not None:
            entries = await self._entries(keys_only=True)
            for entry in entries[: max(len(entries) - self._keep_last, 0)]:
                await self._client.session_delete(self.namespace, self.session_id, entry.key)

    async def pop_item(self) -> Any | None:
        """Remove and return the latest item (None when there is none); safe against a concurrent pop."""
        for _ in range(_RETRIES):
            entries = await self._entries(keys_only=False)
            if not entries:
                return None
            last = entries[-1]
            try:
                await self._client.session_delete(self.namespace, self.session_id, last.key, expected_version=last.version)
            except grpc.RpcError as exc:
                if conflict_version(exc) is None:
                    raise
                continue  # another writer changed it: read again
            return json.loads(last.value_json)
        raise RuntimeError(f"session {self.session_id!r} kept changing while popping its last item; try again")

    async def clear_session(self) -> None:
        await self._client.session_delete(self.namespace, self.session_id, whole_session=True)

    async def _entries(self, *, keys_only: bool) -> list[session_pb2.SessionStateEntry]:
        entries: list[session_pb2.SessionStateEntry] = []
        token = ""
        while True:
            page = await self._client.session_list(
                self.namespace, self.session_id, key_prefix=ITEM_PREFIX, keys_only=keys_only, page_size=_PAGE, page_token=token
            )
            entries.extend(page.entries)
            token = page.next_page_token
            if not token:
                return entries

    async def _reserve(self, count: int) -> int:
        """The first of ``count`` new sequence numbers, taken from the counter with compare-and-set."""
        for _ in range(_RETRIES):
            try:
                entry = await self._client.session_get(self.namespace, self.session_id, COUNTER_KEY)
                start, version = int(json.loads(entry.value_json)), entry.version
            except grpc.RpcError as exc:
                if exc.code() != grpc.StatusCode.NOT_FOUND:
                    raise
                start, version = 0, 0
            try:
                await self._client.session_put(
                    self.namespace, self.session_id, COUNTER_KEY, start + count, expected_version=version, ttl=self._ttl
                )
            except grpc.RpcError as exc:
                if conflict_version(exc) is None:
                    raise
                continue  # another writer took numbers first
            return start
        raise RuntimeError(f"session {self.session_id!r} is written by too many agents at once; try again")
