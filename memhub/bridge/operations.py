"""What each tool does, apart from how it is declared to MCP: narrowing checks, hub calls, result building.

Nothing here widens what the agent may do. The narrowing is checked first
(a refusal costs no hub call); then the hub checks the agent's token and
policies as it does for every caller, and its refusals are passed on.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import TypeVar

import grpc
from mcp.server.mcpserver.exceptions import ToolError

from memhub.bridge.hub_calls import HubCaller, hub_error
from memhub.bridge.hub_client import BridgeHubClient
from memhub.bridge.narrowing import Narrowing, OutsideNarrowing
from memhub.bridge.results import (
    ForgetOutput,
    MemoryRecord,
    PreferenceOrder,
    PreferencesOutput,
    ReplacedMemory,
    SearchOutput,
    WriteOutput,
    memory_record,
    search_hit,
)
from memhub.client import memory_input
from memhub.errors import InvalidArgument
from memhub.v1 import memory_pb2 as pb

T = TypeVar("T")


class MemoryOperations:
    """write_memory, search_memories, forget_memory and get_preferences for one agent's bridge."""

    def __init__(self, hub: BridgeHubClient, call: HubCaller, narrowing: Narrowing, default_namespace: str | None) -> None:
        self.hub = hub
        self.call = call
        self.narrowing = narrowing
        self.default_namespace = default_namespace

    # -- write ------------------------------------------------------------------

    async def write(
        self,
        content: str,
        *,
        kind: str | None,
        type: str,  # noqa: A002 - the tool's argument name
        namespace: str | None,
        tags: Sequence[str],
        importance: int,
        ttl_seconds: int | None,
        subject_key: str | None,
        expected_version: int | None = None,
        cites: Sequence[str] = (),
    ) -> WriteOutput:
        target = namespace or self.default_namespace
        if not target:
            raise ToolError(
                "namespace: is required because this bridge has no default namespace; "
                "pass one, such as agents/<your agent id>/notes"
            )
        checked(lambda: self.narrowing.check(target, "namespace"))
        if expected_version is not None and not subject_key:
            raise ToolError("expected_version: needs subject_key (it is the version of the memory holding that subject)")
        cited = list(dict.fromkeys(cites))
        if cited:
            # A cited id does not say where the memory lives: read them (as this agent) and keep to the fence.
            await fenced_get(self.hub, self.call, self.narrowing, cited)
        item = memory_input(
            target,
            content,
            kind=kind,  # None: the hub derives it from the type (memhub/core/validation.py KINDS_OF_TYPE)
            type=type,
            tags=tags,
            importance=importance,
            ttl=timedelta(seconds=ttl_seconds) if ttl_seconds else None,
            subject_key=subject_key or "",
            expected_version=expected_version,
            derived_from=cited,
        )
        # One request id per tool call: if an attempt commits but its answer is lost, the retry replays it.
        request_id = uuid.uuid4().hex
        reply = await self.call(lambda: self.hub.write([item], request_id=request_id, wait_indexed=True))
        result = reply.results[0]
        if result.filtered:
            return WriteOutput(
                memory=None, deduplicated=False, near=False, supersedes=[], searchable=False, filtered=result.filter_rule
            )
        return WriteOutput(
            memory=memory_record(result.memory),
            deduplicated=result.deduplicated,
            near=result.near,
            supersedes=list(result.memory.links.supersedes),
            replaced=ReplacedMemory(id=result.replaced.id, version=result.replaced.version)
            if result.HasField("replaced")
            else None,
            cites=list(result.memory.links.derived_from),
            searchable=reply.indexed,
            redacted=list(result.redacted),
            extracted=[memory_record(fact.memory) for fact in result.extracted],
        )

    # -- search -----------------------------------------------------------------

    async def search(
        self,
        query: str,
        *,
        namespaces: Sequence[str],
        kinds: Sequence[str],
        top_k: int,
        occurred_after: datetime | None,
        occurred_before: datetime | None,
        context_window: int = 0,
        min_relevance: float = 0.0,
        exclude_flagged: bool = False,
    ) -> SearchOutput:
        scope = checked(lambda: self.narrowing.scope(namespaces, "namespaces"))
        start, end = utc(occurred_after), utc(occurred_before)
        if start is not None and end is not None and end <= start:
            raise ToolError(f"occurred_before ({end.isoformat()}) must be later than occurred_after ({start.isoformat()})")
        reply = await self.call(
            lambda: self.hub.search(
                query,
                scope,
                top_k=top_k,
                kinds=list(dict.fromkeys(kinds)),
                occurred_start=start,
                occurred_end=end,
                context_window=context_window,
                min_relevance=min_relevance,
                exclude_flagged=exclude_flagged,
            )
        )
        return SearchOutput(
            query=query,
            namespaces=scope,
            hits=[search_hit(h) for h in reply.hits],
            search_id=reply.search_id,
            degraded=reply.degraded_reason,
        )

    # -- forget -----------------------------------------------------------------

    async def forget(self, memory_id: str, *, reason: str, expected_version: int | None = None) -> ForgetOutput:
        # The id alone does not say where the memory lives; ask (as this agent) before acting on it.
        await fenced_get(self.hub, self.call, self.narrowing, [memory_id])
        request_id = uuid.uuid4().hex
        expected = {memory_id: expected_version} if expected_version is not None else None
        reply = await self.call(
            lambda: self.hub.forget(ids=[memory_id], reason=reason, request_id=request_id, expected_versions=expected)
        )
        forgotten = memory_id in reply.forgotten_ids
        version = reply.versions[0] if forgotten and len(reply.versions) == len(reply.forgotten_ids) else None
        return ForgetOutput(id=memory_id, forgotten=forgotten, version=version)

    # -- preferences ------------------------------------------------------------

    async def preferences(self, *, subject_key: str | None, query: str | None, top_k: int) -> PreferencesOutput:
        scope = list(self.narrowing.namespaces)
        found: list[MemoryRecord] = []
        search_id = ""
        if subject_key:
            reply = await self.call(lambda: self.hub.list_preferences(scope, subject_key=subject_key, limit=top_k))
            found += [memory_record(m) for m in reply.memories]
        if query:
            hits = await self.call(lambda: self.hub.search(query, scope, top_k=top_k, kinds=["semantic"], types=["preference"]))
            found += [memory_record(h.memory) for h in hits.hits]
            search_id = hits.search_id
        if not subject_key and not query:
            listed = await self.call(lambda: self.hub.list(scope, kinds=["semantic"], types=["preference"], page_size=top_k))
            found += [memory_record(m) for m in listed.memories]
        unique = list({m.id: m for m in found}.values())[:top_k]
        # The hub lists newest first and searches best match first; the answer says which, so a model
        # asking for nothing in particular does not take the newest preference for the most relevant one.
        order: PreferenceOrder = "newest_first"
        if query:
            order = "subject_newest_first_then_best_match" if subject_key else "best_match_first"
        return PreferencesOutput(subject_key=subject_key, query=query, order=order, preferences=unique, search_id=search_id)


class _Fenced(Exception):
    """Raised in the worker thread for a memory outside the narrowing: answered as the hub answers a missing one."""

    def __init__(self, memory_id: str) -> None:
        super().__init__(memory_id)
        self.memory_id = memory_id


async def fenced_get(hub: BridgeHubClient, call: HubCaller, narrowing: Narrowing, memory_ids: Sequence[str]) -> list[pb.Memory]:
    """Read `memory_ids` in order, as the agent; one outside the narrowing answers exactly as a missing one.

    A narrowed bridge must not be an oracle: "memory X is in 'teams/support/kb'" for a memory behind the fence
    and "not found" for a missing one would tell the model that X exists and where (issue 22). So the refusal is
    the hub's own NOT_FOUND answer to GetMemory, raised at the same position the hub would raise it, through the
    same error path (hub_error). Without namespace narrowing nothing is read: the hub alone decides.
    """
    if not narrowing.narrows_namespaces:
        return []

    def read() -> list[pb.Memory]:
        out = []
        for memory_id in memory_ids:
            memory = hub.get(memory_id)
            if not narrowing.allows(memory.namespace):
                raise _Fenced(memory_id)
            out.append(memory)
        return out

    try:
        return await call(read)
    except _Fenced as fenced:
        raise hub_error(grpc.StatusCode.NOT_FOUND, missing_memory_details(fenced.memory_id)) from None


def missing_memory_details(memory_id: str) -> str:
    """The hub's status details for GetMemory of a missing id (memhub/service/reading.py);
    tests/security/test_bridge_oracles.py compares the two answers, so a change to either is caught."""
    return f"memory {memory_id} not found"


def checked(check: Callable[[], T]) -> T:
    """Run a narrowing check; its failures become tool errors in the hub's wording."""
    try:
        return check()
    except InvalidArgument as exc:
        raise ToolError(f"invalid argument: {exc}") from None
    except OutsideNarrowing as exc:
        raise ToolError(str(exc)) from None


def utc(value: datetime | None) -> datetime | None:
    """Naive times are taken as UTC: a model rarely adds an offset, and the hub stores UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=timezone.utc)
