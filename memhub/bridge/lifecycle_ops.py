"""What the memory-lifecycle tools do: context assembly, use marks, consolidation, history, lineage.

As in operations.py, nothing here widens what the agent may do: the
narrowing is checked first, then the hub checks the agent's token and
policies. Where a request names memories by id (mark_used, memory_history)
the id does not say where the memory lives, so a bridge narrowed to some
namespaces reads them first, as its agent, and refuses any outside the fence
with the hub's own answer for a missing id (operations.fenced_get).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import grpc
from mcp.server.mcpserver.exceptions import ToolError

from memhub.bridge.hub_calls import HubCaller, hub_error
from memhub.bridge.hub_client import BridgeHubClient
from memhub.bridge.lifecycle_results import (
    ContextOutput,
    HistoryOutput,
    LineageOutput,
    MarkUsedOutput,
    SummarizeOutput,
    context_output,
    history_output,
    lineage_output,
    summarize_output,
)
from memhub.bridge.narrowing import Narrowing
from memhub.bridge.operations import checked, fenced_get, missing_memory_details, utc
from memhub.v1 import memory_pb2 as pb

# One consolidation attempt may take this long (memhub/cli/consolidate_cmd.py waits as long): it embeds every
# selected episode and its sentences, and an LLM summariser takes seconds per group. Retries after a failure
# to reach the hub still stop at the bridge's --deadline.
CONSOLIDATE_ATTEMPT_S = 300.0


class LifecycleOperations:
    """recall_context, mark_used, summarize_episodes, memory_history and explain_memory for one agent's bridge."""

    def __init__(
        self, hub: BridgeHubClient, call: HubCaller, narrowing: Narrowing, default_namespace: str | None, agent_id: str
    ) -> None:
        self.hub = hub
        self.call = call
        self.narrowing = narrowing
        self.default_namespace = default_namespace
        self.agent_id = agent_id

    # -- recall_context -----------------------------------------------------------------------------------

    async def recall_context(
        self,
        query: str,
        *,
        namespaces: Sequence[str],
        token_budget: int,
        per_group: int,
        include_flagged: bool,
        kinds: Sequence[str],
        candidates: int,
        occurred_after: datetime | None,
        occurred_before: datetime | None,
    ) -> ContextOutput:
        scope = checked(lambda: self.narrowing.scope(namespaces, "namespaces"))
        start, end = _window(occurred_after, occurred_before, "occurred_after", "occurred_before")
        reply = await self.call(
            lambda: self.hub.assemble_context(
                query,
                scope,
                token_budget=token_budget,
                per_group=per_group,
                include_flagged=include_flagged,
                top_k=candidates,
                kinds=list(dict.fromkeys(kinds)),
                occurred_start=start,
                occurred_end=end,
            )
        )
        return context_output(query, scope, reply)

    # -- mark_used ----------------------------------------------------------------------------------------

    async def mark_used(self, memory_ids: Sequence[str], *, search_id: str | None, useful: bool | None) -> MarkUsedOutput:
        ids = list(dict.fromkeys(memory_ids))  # the schema asks for at least one
        await fenced_get(self.hub, self.call, self.narrowing, ids)
        reply = await self.call(lambda: self.hub.mark_used(ids, search_id=search_id or "", useful=useful))
        return MarkUsedOutput(
            memory_ids=ids,
            search_id=search_id or None,
            useful=useful,
            counted=reply.counted,
            already_marked=reply.already_marked,
        )

    # -- summarize_episodes -------------------------------------------------------------------------------

    async def summarize_episodes(
        self,
        *,
        namespace: str | None,
        since: datetime | None,
        until: datetime | None,
        session: str | None,
        tags: Sequence[str],
        group_by: str,
        kind: str,
        dry_run: bool,
    ) -> SummarizeOutput:
        target = namespace or self.default_namespace
        if not target:
            raise ToolError(
                "namespace: is required because this bridge has no default namespace; "
                "pass the namespace whose episodes to summarize, such as agents/<your agent id>"
            )
        # The hub reads the namespace's descendants and writes into the namespace itself: both inside the fence.
        checked(lambda: self.narrowing.check(target, "namespace"))
        start, end = _window(since, until, "since", "until")
        reply = await self.call(
            lambda: self.hub.consolidate(
                target,
                occurred_start=start,
                occurred_end=end,
                session_id=session or "",
                tags=list(dict.fromkeys(tags)),
                group_by=group_by,
                target_kind=kind,
                dry_run=dry_run,
            ),
            attempt_s=CONSOLIDATE_ATTEMPT_S,
        )
        return summarize_output(target, self.agent_id, reply)

    # -- memory_history -----------------------------------------------------------------------------------

    async def history(self, memory_id: str, *, limit: int, page_token: str = "") -> HistoryOutput:
        # Read first, so a memory outside the fence answers as GetMemory answers a missing id (no oracle).
        await fenced_get(self.hub, self.call, self.narrowing, [memory_id])
        # Pages of the whole chain, oldest first (the hub checks the token and the right to read on every page).
        reply = await self.call(lambda: self.hub.history(memory_id, page_size=limit, page_token=page_token))
        # Every version shares the subject's namespace; checking each costs nothing and assumes nothing.
        self._within_narrowing(memory_id, reply.versions)
        return history_output(memory_id, reply)

    # -- explain_memory -----------------------------------------------------------------------------------

    async def explain(self, memory_id: str, *, max_depth: int, max_memories: int) -> LineageOutput:
        # The hub shows memories outside the fence as ones this agent cannot read, and refuses a root outside it.
        scope = list(self.narrowing.namespaces)
        reply = await self.call(
            lambda: self.hub.lineage(memory_id, max_depth=max_depth, max_memories=max_memories, namespaces=scope)
        )
        self._within_narrowing(memory_id, [e.memory for e in reply.entries if not e.hidden])
        return lineage_output(memory_id, reply)

    def _within_narrowing(self, memory_id: str, memories: Sequence[pb.Memory]) -> None:
        """A second fence on what the hub sent back: anything outside the narrowing makes the whole answer the
        hub's "not found" for `memory_id`, never a message naming where the memory lives."""
        if any(not self.narrowing.allows(memory.namespace) for memory in memories):
            raise hub_error(grpc.StatusCode.NOT_FOUND, missing_memory_details(memory_id))


def _window(
    start: datetime | None, end: datetime | None, start_field: str, end_field: str
) -> tuple[datetime | None, datetime | None]:
    start, end = utc(start), utc(end)
    if start is not None and end is not None and end <= start:
        raise ToolError(f"{end_field} ({end.isoformat()}) must be later than {start_field} ({start.isoformat()})")
    return start, end
