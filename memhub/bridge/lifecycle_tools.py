"""The memory-lifecycle tools: recall_context, mark_used, summarize_episodes, memory_history, explain_memory.

Declared as in tools.py (descriptions say *when* to call; bounds are the
hub's), registered by tools.register_tools under the same narrowing.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from mcp_types import CallToolResult
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from memhub.bridge.lifecycle_ops import LifecycleOperations
from memhub.bridge.lifecycle_results import (
    ContextOutput,
    Grouping,
    HistoryOutput,
    LineageOutput,
    MarkUsedOutput,
    SummarizeOutput,
    TargetKind,
    context_text,
    history_text,
    lineage_text,
    mark_used_text,
    summarize_text,
)
from memhub.bridge.results import Kind
from memhub.bridge.tool_support import (
    MEMORY_ID_CHARS,
    MemoryId,
    NamespacesArg,
    OptionalNamespace,
    QueryText,
    Tag,
    ToolSpec,
    hints,
    optional,
    tool_result,
)
from memhub.core.context_limits import (
    DEFAULT_CANDIDATES,
    DEFAULT_PER_GROUP,
    DEFAULT_TOKEN_BUDGET,
    MAX_PER_GROUP,
    MAX_TOKEN_BUDGET,
    MIN_TOKEN_BUDGET,
)
from memhub.core.validation import MAX_SESSION_CHARS, MAX_TAGS, MAX_TOP_K
from memhub.retrieval_log.records import MAX_MARKED_IDS

# GetMemoryHistory's limit: the hub states it only in its servicer (1 to 200, 0 meaning 50);
# tests/test_bridge_schemas.py checks these against the hub itself.
MAX_HISTORY_VERSIONS = 200
DEFAULT_HISTORY_VERSIONS = 50
# GetMemoryLineage's bounds (memhub/core/lineage.py, which pulls in the database layer a bridge does not need);
# tests/test_bridge_schemas.py checks them against the hub's.
MAX_LINEAGE_DEPTH, DEFAULT_LINEAGE_DEPTH = 5, 3
MAX_LINEAGE_ENTRIES, DEFAULT_LINEAGE_ENTRIES = 200, 50

RECALL_CONTEXT_DESCRIPTION = """\
Call this before starting a task (planning, writing, deciding, answering a request that has a past) to get, \
in one block ready to put into your context, what memory holds that bears on it: the user's preferences, \
past feedback (corrections and rules), lessons, known facts and related history, one line per memory with its \
date, writer and id, within a token budget. Use search_memories instead to look up one specific thing (a name, \
ticket, error code, a question about the past) as ranked hits. The answer carries a search_id for mark_used."""

MARK_USED_DESCRIPTION = """\
Call this after you answered or acted, naming the recalled memories (ids from recall_context, search_memories \
or get_preferences) that you actually relied on, with the search_id of the answer that returned them. Set \
useful to false for one that turned out wrong or misleading, true when it clearly helped. It improves future \
ranking for every agent sharing the memory. Do not mark memories you only saw."""

SUMMARIZE_DESCRIPTION = """\
Call this when episodes (events, conversation turns, task outcomes) have piled up and what they teach should \
outlive them: at the end of a task or session, or when asked to learn from or tidy up past work. It groups the \
episodes of a namespace (by session, tag, entity or meaning) and writes one semantic (or procedural) memory per \
group, derived from its episodes, keeping the conditions they support. Use dry_run first to see what would be \
written. Running it again over the same episodes writes nothing new."""

HISTORY_DESCRIPTION = """\
Call this to find out why a memory says what it says and how it changed: when a recalled fact, preference or \
rule looks outdated or conflicts with what the user says ("didn't we agree on something else?"), or before \
replacing one. Give any version's id: you get every version of its subject, oldest first, with who wrote \
each, its status (active, superseded, forgotten, archived) and what replaced it. Long histories come in pages \
of at most `limit` versions: when the result has next_page_token, call again with it as page_token for the \
newer versions."""


EXPLAIN_DESCRIPTION = """\
Call this to find out why a memory says what it says, especially one another agent wrote: before relying on \
a conclusion, decision or summary a teammate handed over, when it conflicts with what you know, or when the \
user asks where something came from. You get its versions (what it replaced and what replaced it), what it \
was derived from (the episodes it was consolidated from, the memories its writer cited) and what was derived \
from it, a few steps deep, with who wrote each, when, and the trace of that write. Memories you may not read \
appear only as "a memory you cannot read". For one subject's versions alone, memory_history is enough."""


def _when(description: str) -> Any:
    # The same form as search_memories' occurred_after: one clear form, the one the schema's "date-time" names.
    return optional(f"{description} (ISO-8601 date-time such as 2026-11-01T09:00:00Z; UTC if no offset).")


def lifecycle_tools(ops: LifecycleOperations, *, can_mark: bool) -> dict[str, ToolSpec]:
    """The lifecycle tools, by name; `can_mark` says whether answers should point at mark_used."""

    async def recall_context(
        query: Annotated[QueryText, Field(description="The task or question, in natural language.")],
        namespaces: NamespacesArg = [],  # noqa: B006 - pydantic copies defaults; a tuple would publish another schema
        token_budget: Annotated[
            int,
            Field(
                ge=MIN_TOKEN_BUDGET,
                le=MAX_TOKEN_BUDGET,
                description="Tokens the whole block may take (the hub's embedding tokenizer; close to a chat model's).",
            ),
        ] = DEFAULT_TOKEN_BUDGET,
        per_group: Annotated[
            int, Field(ge=1, le=MAX_PER_GROUP, description="At most this many memories under each heading.")
        ] = DEFAULT_PER_GROUP,
        include_flagged: Annotated[
            bool,
            Field(description="Also memories the hub flagged as instruction-like (left out by default: they address a model)."),
        ] = False,
        kinds: Annotated[list[Kind], Field(max_length=3, description="Only these kinds of memory.")] = [],  # noqa: B006
        candidates: Annotated[
            int, Field(ge=1, le=MAX_TOP_K, description="Search hits considered before grouping and the budget.")
        ] = DEFAULT_CANDIDATES,
        occurred_after: Annotated[
            datetime | SkipJsonSchema[None], _when("Only memories of things that happened at or after this time")
        ] = None,
        occurred_before: Annotated[
            datetime | SkipJsonSchema[None], _when("Only memories of things that happened before this time")
        ] = None,
    ) -> Annotated[CallToolResult, ContextOutput]:
        out = await ops.recall_context(
            query,
            namespaces=namespaces,
            token_budget=token_budget,
            per_group=per_group,
            include_flagged=include_flagged,
            kinds=kinds,
            candidates=candidates,
            occurred_after=occurred_after,
            occurred_before=occurred_before,
        )
        return tool_result(out, context_text(out, can_mark=can_mark))

    async def mark_used(
        memory_ids: Annotated[
            list[MemoryId],
            Field(min_length=1, max_length=MAX_MARKED_IDS, description="The ids of the recalled memories you used."),
        ],
        search_id: Annotated[
            Annotated[str, Field(max_length=MEMORY_ID_CHARS)] | SkipJsonSchema[None],
            optional("The search_id of the answer that returned them (recall_context, search_memories, get_preferences)."),
        ] = None,
        useful: Annotated[
            bool | SkipJsonSchema[None],
            optional("true: it helped; false: it was wrong or misleading. Leave out to say only that you used it."),
        ] = None,
    ) -> Annotated[CallToolResult, MarkUsedOutput]:
        out = await ops.mark_used(memory_ids, search_id=search_id, useful=useful)
        return tool_result(out, mark_used_text(out))

    async def summarize_episodes(
        namespace: Annotated[
            OptionalNamespace | SkipJsonSchema[None],
            optional(
                "Whose episodes, with its descendants; the memories are written there too. Leave out for this bridge's "
                "default namespace (where write_memory stores)."
            ),
        ] = None,
        since: Annotated[datetime | SkipJsonSchema[None], _when("Only episodes that happened at or after this time")] = None,
        until: Annotated[datetime | SkipJsonSchema[None], _when("Only episodes that happened before this time")] = None,
        session: Annotated[
            Annotated[str, Field(max_length=MAX_SESSION_CHARS)] | SkipJsonSchema[None],
            optional("Only episodes written in this session."),
        ] = None,
        tags: Annotated[list[Tag], Field(max_length=MAX_TAGS, description="Only episodes carrying any of these tags.")] = [],  # noqa: B006
        group_by: Annotated[
            Grouping,
            Field(
                description="session (one memory per conversation; episodes without one per day), tag, entity (the "
                "people, products, ids they share) or embedding (clusters by meaning)."
            ),
        ] = "session",
        kind: Annotated[
            TargetKind, Field(description="semantic (what is true, under which conditions) or procedural (how to do something).")
        ] = "semantic",
        dry_run: Annotated[bool, Field(description="Only show what would be written; write nothing.")] = False,
    ) -> Annotated[CallToolResult, SummarizeOutput]:
        out = await ops.summarize_episodes(
            namespace=namespace,
            since=since,
            until=until,
            session=session,
            tags=tags,
            group_by=group_by,
            kind=kind,
            dry_run=dry_run,
        )
        return tool_result(out, summarize_text(out))

    async def memory_history(
        id: Annotated[MemoryId, Field(description="Any version's id, as the other tools return it.")],  # noqa: A002
        limit: Annotated[
            int, Field(ge=1, le=MAX_HISTORY_VERSIONS, description="At most this many versions per page, oldest first.")
        ] = DEFAULT_HISTORY_VERSIONS,
        page_token: Annotated[
            str, Field(max_length=4096, description="next_page_token of the previous call; empty for the first page.")
        ] = "",
    ) -> Annotated[CallToolResult, HistoryOutput]:
        out = await ops.history(id, limit=limit, page_token=page_token)
        return tool_result(out, history_text(out))

    async def explain_memory(
        id: Annotated[MemoryId, Field(description="The memory to explain, as the other tools return it.")],  # noqa: A002
        max_depth: Annotated[
            int, Field(ge=1, le=MAX_LINEAGE_DEPTH, description="Derivation steps to follow (versions cost none).")
        ] = DEFAULT_LINEAGE_DEPTH,
        max_memories: Annotated[
            int, Field(ge=1, le=MAX_LINEAGE_ENTRIES, description="At most this many entries in the answer.")
        ] = DEFAULT_LINEAGE_ENTRIES,
    ) -> Annotated[CallToolResult, LineageOutput]:
        out = await ops.explain(id, max_depth=max_depth, max_memories=max_memories)
        return tool_result(out, lineage_text(out))

    return {
        "explain_memory": ToolSpec(
            explain_memory, "Explain a memory", EXPLAIN_DESCRIPTION, hints(read_only=True, destructive=False, idempotent=True)
        ),
        "recall_context": ToolSpec(
            recall_context,
            "Recall context for a task",
            RECALL_CONTEXT_DESCRIPTION,
            hints(read_only=True, destructive=False, idempotent=True),
        ),
        # Not idempotent: marks without a search_id count on every call (with one, a repeat counts once).
        "mark_used": ToolSpec(
            mark_used,
            "Report recalled memories used",
            MARK_USED_DESCRIPTION,
            hints(read_only=False, destructive=False, idempotent=False),
        ),
        # Additive (new memories derived from the episodes, which stay) and idempotent: episodes already
        # consolidated into the namespace are left out, so a re-run writes nothing new.
        "summarize_episodes": ToolSpec(
            summarize_episodes,
            "Summarize episodes into lessons",
            SUMMARIZE_DESCRIPTION,
            hints(read_only=False, destructive=False, idempotent=True),
        ),
        "memory_history": ToolSpec(
            memory_history, "History of a memory", HISTORY_DESCRIPTION, hints(read_only=True, destructive=False, idempotent=True)
        ),
    }
