"""The MCP tools: their names, argument schemas, annotations and descriptions.

Descriptions say *when* to call a tool; a model already sees *what* it is
from the name and schema. Argument bounds mirror the hub's own limits
(memhub/core/validation.py) so a model learns them from the schema instead of
from a refusal; the hub checks them again regardless.

Each tool returns a `CallToolResult` annotated with its output model, so the
SDK publishes the model as the tool's output schema, validates the
structured content against it, and the text block stays ours (readable, not
a JSON dump).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from mcp.server import MCPServer
from mcp_types import CallToolResult
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from memhub.bridge.lifecycle_ops import LifecycleOperations
from memhub.bridge.lifecycle_tools import lifecycle_tools
from memhub.bridge.operations import MemoryOperations
from memhub.bridge.results import (
    ForgetOutput,
    Kind,
    MemoryType,
    PreferencesOutput,
    SearchOutput,
    WriteOutput,
    forget_text,
    preferences_text,
    search_text,
    write_text,
)
from memhub.bridge.session_ops import SessionOperations
from memhub.bridge.session_tools import session_tools
from memhub.bridge.tool_support import (  # noqa: F401 - the bounds are re-exported: tests and docs name them as tools.X
    MAX_SEARCH_NAMESPACES,
    MAX_SUBJECT_KEY_CHARS,
    MEMORY_ID_CHARS,
    ExpectedVersion,
    MemoryId,
    NamespacesArg,
    OptionalNamespace,
    OptionalQueryText,
    QueryText,
    SubjectKey,
    SubjectKeyArg,
    Tag,
    ToolSpec,
    TopK,
    hints,
    optional,
    tool_result,
)
from memhub.core.validation import (
    DEFAULT_IMPORTANCE,
    DEFAULT_TOP_K,
    MAX_CONTENT_CHARS,
    MAX_CONTEXT_WINDOW,
    MAX_DERIVED_FROM,
    MAX_REASON_CHARS,
    MAX_TAG_CHARS,  # noqa: F401 - re-exported as tools.MAX_TAG_CHARS, like tool_support's bounds above
    MAX_TAGS,
    MAX_VERSION,
)

# The bridge's own, narrower than the hub's (a positive duration up to 36,500 days): shorter than a
# minute is a typo rather than a memory, and ten years is longer than any agent deployment lives.
MIN_TTL_SECONDS = 60
MAX_TTL_SECONDS = 10 * 365 * 24 * 3600
TtlSeconds = Annotated[int, Field(ge=MIN_TTL_SECONDS, le=MAX_TTL_SECONDS)]

NamespaceArg = Annotated[
    OptionalNamespace | SkipJsonSchema[None],
    optional("e.g. teams/support/kb. Default: this bridge's default namespace."),
]

# Descriptions say when to call a tool and what to watch for, in as few words as that takes: every client
# sends all of them to the model on every turn (tools/list; a test keeps the whole list under 20 KB).
WRITE_DESCRIPTION = """\
Call this when something should outlive this conversation: a stated preference, a correction, an agreed \
decision or rule, a task's outcome, or what the user asks you to remember; not small talk. One self-contained \
fact per call; a repeat is stored once; a fact with a known subject_key replaces its older version."""

SEARCH_DESCRIPTION = """\
Call this before answering when earlier conversations, decisions, preferences or facts could matter: the user \
refers to the past, asks about a person, ticket, error code or version, or a stored rule may constrain your \
choice. Ask in words; names and codes also match exactly. Covers every namespace you may read unless you name some."""

FORGET_DESCRIPTION = """\
Call this when a memory (its id from another tool) is wrong, obsolete, or the user asks you to forget it. \
It cannot be undone: the content is erased, a tombstone keeps who, when and why. To change a fact instead, \
write_memory with its subject_key (keeps history)."""

PREFERENCES_DESCRIPTION = """\
Call this at the start of a task, or before choosing a style, language, format or approach, to do things the \
way the user or team wants. subject_key: that subject's preferences, newest first; query: best match by \
meaning; both: the subject's first; neither to get the most recently stored preferences, newest first."""


def register_tools(
    server: MCPServer,
    ops: MemoryOperations,
    lifecycle: LifecycleOperations,
    enabled: tuple[str, ...],
    sessions: SessionOperations | None = None,
) -> list[str]:
    """Add the enabled tools to `server`; returns their names in registration order."""
    # Answers that carry a search_id point the model at mark_used only when this bridge offers it.
    can_mark = "mark_used" in enabled
    tools: dict[str, ToolSpec] = {}

    async def write_memory(
        content: Annotated[
            str,
            Field(min_length=1, max_length=MAX_CONTENT_CHARS, description="The memory, self-contained, in any language."),
        ],
        type: Annotated[  # noqa: A002 - the API's own field name
            MemoryType,
            Field(description="lesson: how to do something; outcome: of a task."),
        ] = "note",
        kind: Annotated[
            Kind | SkipJsonSchema[None],
            optional("Default: the one its type implies."),
        ] = None,
        namespace: NamespaceArg = None,
        tags: Annotated[
            list[Tag],
            Field(max_length=MAX_TAGS, description="Labels to filter by later: no spaces, e.g. billing, ticket:4312."),
        ] = [],  # noqa: B006 - pydantic copies defaults; a tuple would publish a different schema
        importance: Annotated[int, Field(ge=1, le=5, description="1 trivia to 5 critical.")] = DEFAULT_IMPORTANCE,
        ttl_seconds: Annotated[
            TtlSeconds | SkipJsonSchema[None],
            optional("Forget it after this many seconds (604800: a week)."),
        ] = None,
        subject_key: SubjectKeyArg = None,
        expected_version: Annotated[
            ExpectedVersion | SkipJsonSchema[None],
            optional(
                "With subject_key: only if its memory is still at this version (0: if there is none); else "
                "refused, naming the current one."
            ),
        ] = None,
        cites: Annotated[
            list[MemoryId],
            Field(
                max_length=MAX_DERIVED_FROM,
                description="Ids of the recalled memories a conclusion or decision rests on; explain_memory shows them.",
            ),
        ] = [],  # noqa: B006 - pydantic copies defaults; a tuple would publish a different schema
    ) -> Annotated[CallToolResult, WriteOutput]:
        out = await ops.write(
            content,
            kind=kind,
            type=type,
            namespace=namespace,
            tags=tags,
            importance=importance,
            ttl_seconds=ttl_seconds,
            subject_key=subject_key,
            expected_version=expected_version,
            cites=cites,
        )
        return tool_result(out, write_text(out))

    tools["write_memory"] = ToolSpec(
        write_memory,
        "Remember something",
        WRITE_DESCRIPTION,
        # Additive, never destructive: a same-subject write supersedes but keeps the old memory.
        # Idempotent: identical content in a namespace is stored once, so a repeat changes nothing.
        hints(read_only=False, destructive=False, idempotent=True),
    )

    async def search_memories(
        query: Annotated[QueryText, Field(description="What you want to know, in words.")],
        namespaces: NamespacesArg = [],  # noqa: B006
        kinds: Annotated[list[Kind], Field(max_length=3)] = [],  # noqa: B006
        top_k: TopK = DEFAULT_TOP_K,
        occurred_after: Annotated[
            datetime | SkipJsonSchema[None],
            optional("Only things that happened at or after this time (UTC if no offset)."),
        ] = None,
        occurred_before: Annotated[
            datetime | SkipJsonSchema[None],
            optional("Only things that happened before this time."),
        ] = None,
        context_window: Annotated[
            int,
            Field(
                ge=0,
                le=MAX_CONTEXT_WINDOW,
                description="Turns of each hit's conversation to add before and after it.",
            ),
        ] = 0,
        min_relevance: Annotated[
            float,
            Field(
                ge=0.0,
                le=1.0,
                description="Leave out hits less relevant than this; 0.5 drops most unrelated ones.",
            ),
        ] = 0.0,
        exclude_flagged: Annotated[
            bool, Field(description="Skip memories flagged instruction_like (text aimed at a model).")
        ] = False,
    ) -> Annotated[CallToolResult, SearchOutput]:
        out = await ops.search(
            query,
            namespaces=namespaces,
            kinds=kinds,
            top_k=top_k,
            occurred_after=occurred_after,
            occurred_before=occurred_before,
            context_window=context_window,
            min_relevance=min_relevance,
            exclude_flagged=exclude_flagged,
        )
        return tool_result(out, search_text(out, can_mark=can_mark))

    tools["search_memories"] = ToolSpec(
        search_memories, "Recall memories", SEARCH_DESCRIPTION, hints(read_only=True, destructive=False, idempotent=True)
    )

    async def forget_memory(
        id: MemoryId,  # noqa: A002
        reason: Annotated[
            str,
            Field(min_length=1, max_length=MAX_REASON_CHARS, description="Why; kept in the tombstone."),
        ],
        expected_version: Annotated[
            Annotated[int, Field(ge=1, le=MAX_VERSION)] | SkipJsonSchema[None],
            optional("Only if still at this version (the one you read); else refused, naming the current one."),
        ] = None,
    ) -> Annotated[CallToolResult, ForgetOutput]:
        out = await ops.forget(id, reason=reason, expected_version=expected_version)
        return tool_result(out, forget_text(out))

    tools["forget_memory"] = ToolSpec(
        forget_memory,
        "Forget a memory",
        FORGET_DESCRIPTION,
        # Forgetting twice changes nothing the second time, hence idempotent.
        hints(read_only=False, destructive=True, idempotent=True),
    )

    async def get_preferences(
        subject_key: Annotated[
            SubjectKey | SkipJsonSchema[None],
            optional("The exact subject, e.g. user/reply-language."),
        ] = None,
        query: Annotated[
            OptionalQueryText | SkipJsonSchema[None],
            optional("By meaning, e.g. 'how should code reviews be written?'"),
        ] = None,
        top_k: TopK = DEFAULT_TOP_K,
    ) -> Annotated[CallToolResult, PreferencesOutput]:
        out = await ops.preferences(subject_key=subject_key, query=query, top_k=top_k)
        return tool_result(out, preferences_text(out, can_mark=can_mark))

    tools["get_preferences"] = ToolSpec(
        get_preferences, "Recall preferences", PREFERENCES_DESCRIPTION, hints(read_only=True, destructive=False, idempotent=True)
    )
    tools.update(lifecycle_tools(lifecycle, can_mark=can_mark))
    if sessions is not None:
        tools.update(session_tools(sessions))

    for name in enabled:
        spec = tools[name]
        server.add_tool(spec.fn, name=name, title=spec.title, description=spec.description, annotations=spec.annotations)
    return list(enabled)
