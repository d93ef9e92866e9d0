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
Call this before starting a task (planning, writing, deciding) to get one block, ready for your context, of \
what memory holds on it: preferences, corrections, lessons, facts and related history, within a token budget. \
For one specific thing (a name, a code, an event) use search_memories."""

MARK_USED_DESCRIPTION = """\
Call this after you answered or acted, with the ids of recalled memories you actually relied on and the \
search_id of the answer that returned them; useful=false for one that misled you. It improves ranking for every \
agent. Do not mark memories you only saw."""

SUMMARIZE_DESCRIPTION = """\
Call this when episodes have piled up and what they teach should outlive them: at the end of a task or session, \
or when asked to learn from past work. Writes one semantic (or procedural) memory per group of a namespace's \
episodes, derived from them. Try dry_run first; a re-run writes nothing new."""

HISTORY_DESCRIPTION = """\
Call this when a recalled fact, preference or rule looks outdated or conflicts with what the user says, or \
before replacing one: every version of its subject, oldest first, with writer, status and successor. More \
pages: pass next_page_token as page_token."""


EXPLAIN_DESCRIPTION = """\
Call this to learn why a memory says what it says, above all one another agent wrote: before relying on a \
handed-over conclusion, when it conflicts with what you know, or when asked where it came from. Shows its \
versions, sources and derivations, with writers and traces."""


def _when(description: str) -> Any:
    # As search_memories' occurred_after/before: the schema's "date-time" names the form.
    return optional(description)


def lifecycle_tools(ops: LifecycleOperations, *, can_mark: bool) -> dict[str, ToolSpec]:
    """The lifecycle tools, by name; `can_mark` says whether answers should point at mark_used."""

    async def recall_context(
        query: Annotated[QueryText, Field(description="The task or question, in words.")],
        namespaces: NamespacesArg = [],  # noqa: B006 - pydantic copies defaults; a tuple would publish another schema
        token_budget: Annotated[
            int,
            Field(
                ge=MIN_TOKEN_BUDGET,
                le=MAX_TOKEN_BUDGET,
                description="Tokens the whole block may take.",
            ),
        ] = DEFAULT_TOKEN_BUDGET,
        per_group: Annotated[int, Field(ge=1, le=MAX_PER_GROUP, description="Memories per heading at most.")] = DEFAULT_PER_GROUP,
        include_flagged: Annotated[
            bool,
            Field(description="Also memories flagged instruction_like."),
        ] = False,
        kinds: Annotated[list[Kind], Field(max_length=3)] = [],  # noqa: B006
        candidates: Annotated[
            int, Field(ge=1, le=MAX_TOP_K, description="Search hits considered before grouping.")
        ] = DEFAULT_CANDIDATES,
        occurred_after: Annotated[
            datetime | SkipJsonSchema[None], _when("Only things that happened at or after this time (UTC if no offset).")
        ] = None,
        occurred_before: Annotated[datetime | SkipJsonSchema[None], _when("Only things that happened before this time.")] = None,
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
            Field(min_length=1, max_length=MAX_MARKED_IDS),
        ],
        search_id: Annotated[
            Annotated[str, Field(max_length=MEMORY_ID_CHARS)] | SkipJsonSchema[None],
            optional("Of the answer that returned them."),
        ] = None,
        useful: Annotated[
            bool | SkipJsonSchema[None],
            optional("true: it helped; false: it misled. Leave out: just used."),
        ] = None,
    ) -> Annotated[CallToolResult, MarkUsedOutput]:
        out = await ops.mark_used(memory_ids, search_id=search_id, useful=useful)
        return tool_result(out, mark_used_text(out))

    async def summarize_episodes(
        namespace: Annotated[
            OptionalNamespace | SkipJsonSchema[None],
            optional("Whose episodes (with descendants'); written there too. Default: this bridge's default namespace."),
        ] = None,
        since: Annotated[
            datetime | SkipJsonSchema[None], _when("Only episodes at or after this time (UTC if no offset).")
        ] = None,
        until: Annotated[datetime | SkipJsonSchema[None], _when("Only episodes before this time.")] = None,
        session: Annotated[
            Annotated[str, Field(max_length=MAX_SESSION_CHARS)] | SkipJsonSchema[None],
            optional("Only this session's episodes."),
        ] = None,
        tags: Annotated[list[Tag], Field(max_length=MAX_TAGS, description="Only episodes with any of these tags.")] = [],  # noqa: B006
        group_by: Annotated[
            Grouping,
            Field(
                description="session (one memory per conversation, else per day), tag, entity (people, products, "
                "ids shared) or embedding (by meaning)."
            ),
        ] = "session",
        kind: Annotated[
            TargetKind, Field(description="semantic: what is true and when; procedural: how to do something.")
        ] = "semantic",
        dry_run: Annotated[bool, Field(description="Show what would be written; write nothing.")] = False,
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
        id: Annotated[MemoryId, Field(description="Any version's id.")],  # noqa: A002
        limit: Annotated[int, Field(ge=1, le=MAX_HISTORY_VERSIONS, description="Versions per page.")] = DEFAULT_HISTORY_VERSIONS,
        page_token: Annotated[str, Field(max_length=4096)] = "",
    ) -> Annotated[CallToolResult, HistoryOutput]:
        out = await ops.history(id, limit=limit, page_token=page_token)
        return tool_result(out, history_text(out))

    async def explain_memory(
        id: MemoryId,  # noqa: A002
        max_depth: Annotated[
            int, Field(ge=1, le=MAX_LINEAGE_DEPTH, description="Derivation steps to follow.")
        ] = DEFAULT_LINEAGE_DEPTH,
        max_memories: Annotated[int, Field(ge=1, le=MAX_LINEAGE_ENTRIES)] = DEFAULT_LINEAGE_ENTRIES,
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
