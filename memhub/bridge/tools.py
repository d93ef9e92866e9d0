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
    optional(
        "Where to store it, e.g. 'agents/planner/project-x' or 'teams/support/kb' (lower-case path). "
        "Leave out to use this bridge's default namespace."
    ),
]


WRITE_DESCRIPTION = """\
Call this when something is worth remembering beyond this conversation: the user states a preference \
("answer in German"), corrects you, a decision or rule is agreed, a task finishes with an outcome worth \
reusing, or the user explicitly asks you to remember something. Do not call it for small talk or for \
things only needed in the current turn. Write one self-contained fact per call, in words that will make \
sense later without this conversation. Storing the same content twice is harmless (it is stored once). \
When the memory is a conclusion, summary, decision or correction you drew from memories you recalled, pass \
their ids in cites: teammates who later ask explain_memory why it says so will see what it rests on. To \
update a fact you read, give its subject_key and, as expected_version, the version you read: if another \
agent changed it meanwhile the write is refused with the current version, so re-read and decide."""

SEARCH_DESCRIPTION = """\
Call this before answering when earlier conversations, decisions, preferences, incidents or facts could \
matter: the user refers to something from before ("as we agreed", "last time"), asks about a person, \
ticket, error code or version, or you are about to make a choice a stored rule or correction may \
constrain. Phrase the query as the question you want answered; names, ids and error codes are matched \
exactly as well as by meaning. Searches every namespace this agent may read unless you name some."""

FORGET_DESCRIPTION = """\
Call this when a stored memory is wrong, obsolete, or the user asks you to forget it: take its id from \
search_memories or get_preferences. It cannot be undone: the content is erased (a tombstone keeps who, \
when and why). To change a fact rather than erase it, prefer write_memory with the same subject_key, \
which keeps the old version as history. Pass the version you read as expected_version to forget it only if \
nobody changed it since."""

PREFERENCES_DESCRIPTION = """\
Call this at the start of a task, or before choosing a style, language, format, tool or approach, to \
apply how the user (or team) wants things done. Give a subject_key when you know the exact subject \
(e.g. 'user/reply-language'): its current preference comes first, newest first. Give a query to find \
preferences by meaning: best match first. Give both: the subject's first, then the matches. Give neither \
to get the most recently stored preferences, newest first (not ranked by relevance)."""


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
            Field(min_length=1, max_length=MAX_CONTENT_CHARS, description="The memory itself, self-contained, in any language."),
        ],
        type: Annotated[  # noqa: A002 - the API's own field name
            MemoryType,
            Field(
                description="What it is: fact, preference, correction, rule, lesson (how to do something), "
                "event, outcome (of a task) or note."
            ),
        ] = "note",
        kind: Annotated[
            Kind | SkipJsonSchema[None],
            optional(
                "semantic (true statements: facts, preferences, rules), episodic (things that happened) or "
                "procedural (how to do something). Leave out to derive it from type."
            ),
        ] = None,
        namespace: NamespaceArg = None,
        tags: Annotated[
            list[Tag],
            Field(max_length=MAX_TAGS, description="Short labels to filter by later, e.g. 'billing', 'ticket:4312'."),
        ] = [],  # noqa: B006 - pydantic copies defaults; a tuple would publish a different schema
        importance: Annotated[int, Field(ge=1, le=5, description="1 (trivia) to 5 (critical).")] = DEFAULT_IMPORTANCE,
        ttl_seconds: Annotated[
            TtlSeconds | SkipJsonSchema[None],
            optional("Forget it automatically after this many seconds (e.g. 604800 for a week)."),
        ] = None,
        subject_key: SubjectKeyArg = None,
        expected_version: Annotated[
            ExpectedVersion | SkipJsonSchema[None],
            optional(
                "With subject_key: the version of the memory you read for that subject (its version field); the "
                "write replaces it only if it is still at that version, else it is refused with the current one. "
                "0: only if nothing is stored for the subject yet. Leave out to replace whatever is there."
            ),
        ] = None,
        cites: Annotated[
            list[MemoryId],
            Field(
                max_length=MAX_DERIVED_FROM,
                description="Ids of the memories that led you to write this (from search_memories, recall_context, "
                "get_preferences or explain_memory): the facts, episodes or decisions it rests on. Cite them whenever "
                "this memory is a conclusion, summary, decision or correction drawn from recalled memories.",
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
        query: Annotated[QueryText, Field(description="What you want to know, in natural language.")],
        namespaces: NamespacesArg = [],  # noqa: B006
        kinds: Annotated[list[Kind], Field(max_length=3, description="Only these kinds of memory.")] = [],  # noqa: B006
        top_k: TopK = DEFAULT_TOP_K,
        occurred_after: Annotated[
            datetime | SkipJsonSchema[None],
            optional("Only memories of things that happened at or after this time (ISO-8601, UTC if no offset)."),
        ] = None,
        occurred_before: Annotated[
            datetime | SkipJsonSchema[None],
            optional("Only memories of things that happened before this time (ISO-8601, UTC if no offset)."),
        ] = None,
        context_window: Annotated[
            int,
            Field(
                ge=0,
                le=MAX_CONTEXT_WINDOW,
                description="Also return this many turns before and after each hit in its conversation.",
            ),
        ] = 0,
        min_relevance: Annotated[
            float,
            Field(
                ge=0.0,
                le=1.0,
                description="Leave out hits less relevant than this (0 to 1; 0 keeps all). 0.5 drops most memories "
                "unrelated to the query; no hits then means nothing related is stored.",
            ),
        ] = 0.0,
        exclude_flagged: Annotated[
            bool, Field(description="Leave out memories the hub flagged as instruction-like (text aimed at a model).")
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
        id: Annotated[MemoryId, Field(description="The memory's id, as returned by the other tools.")],  # noqa: A002
        reason: Annotated[
            str,
            Field(min_length=1, max_length=MAX_REASON_CHARS, description="Why it should be forgotten; kept in the tombstone."),
        ],
        expected_version: Annotated[
            Annotated[int, Field(ge=1, le=MAX_VERSION)] | SkipJsonSchema[None],
            optional(
                "The version you read (its version field): forget it only if it is still at that version, else the "
                "call is refused with the current one. Leave out to forget it whatever changed."
            ),
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
            optional("The exact subject, e.g. 'user/reply-language'. Its preferences come first, newest first."),
        ] = None,
        query: Annotated[
            OptionalQueryText | SkipJsonSchema[None],
            optional("Find preferences by meaning, e.g. 'how should code reviews be written?'; best match first."),
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
