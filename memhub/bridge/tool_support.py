"""What every tool declaration shares: argument bounds and types, and the result wrapper.

Argument bounds mirror the hub's own limits (memhub/core/validation.py and
friends) so a model learns them from the schema instead of from a refusal;
the hub checks them again regardless. tests/test_bridge_schemas.py checks
the published bounds against the hub's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, NamedTuple

from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

from memhub.core.namespaces import MAX_PATH_CHARS
from memhub.core.validation import MAX_QUERY_CHARS, MAX_TAG_CHARS, MAX_TOP_K, MAX_VERSION, TAG_PATTERN, TAG_RULE
from memhub.session_state.validation import KEY_PATTERN, KEY_RULE, SESSION_ID_PATTERN, SESSION_ID_RULE

# A limit the hub states in its rules but not as a constant (memhub/core/validation.py): a subject key is at
# most 128 characters. tests/test_bridge_schemas.py checks it against the hub itself.
MAX_SUBJECT_KEY_CHARS = 128
MEMORY_ID_CHARS = 36  # a UUID in its canonical text form, as every tool returns it (search ids too)
# Roots one search may name; the hub takes 64, but a model naming more than this wants no filter at all.
MAX_SEARCH_NAMESPACES = 32


class ToolSpec(NamedTuple):
    """One tool as registered: the function (its signature is the input schema), title, description, hints."""

    fn: Callable[..., Any]
    title: str
    description: str
    annotations: ToolAnnotations


def _no_default(schema: dict[str, Any]) -> None:
    # An optional argument is published as its plain type, not `anyOf [T, null]` with `default: null`:
    # simpler for models and for clients that render forms from the schema.
    schema.pop("default", None)


def optional(description: str) -> Any:
    """Field metadata of an optional argument (`T | SkipJsonSchema[None] = None`)."""
    return Field(description=description, json_schema_extra=_no_default)


# Bounds of an optional argument sit on its value type, inside the `| None`: put on the union, pydantic
# still enforces them but publishes them as "ge"/"le", which JSON Schema does not know (clients ignore them).
# An empty optional string means "left out" (some clients send "" for an unset field), so those have no minLength.
Namespace = Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS)]
OptionalNamespace = Annotated[str, Field(max_length=MAX_PATH_CHARS)]
SubjectKey = Annotated[str, Field(max_length=MAX_SUBJECT_KEY_CHARS)]
QueryText = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
OptionalQueryText = Annotated[str, Field(max_length=MAX_QUERY_CHARS)]
Tag = Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS, pattern=TAG_PATTERN)]
# A session-state key's start (the prefix of a list), or a key that may be left out (delete): the key rule, or nothing.
OPTIONAL_KEY_PATTERN = r"^(?:[A-Za-z0-9][A-Za-z0-9._:/-]{0,127})?$"

PATTERN_RULES = {
    TAG_PATTERN: TAG_RULE,
    SESSION_ID_PATTERN: SESSION_ID_RULE,
    KEY_PATTERN: KEY_RULE,
    OPTIONAL_KEY_PATTERN: f"empty, or {KEY_RULE}",
}
"""Each pattern a tool schema uses, in words: a mismatch is reported with the rule (arguments.py), while the
schema carries the pattern and a short hint (every byte of tools/list is sent to the model)."""
MemoryId = Annotated[str, Field(min_length=MEMORY_ID_CHARS, max_length=MEMORY_ID_CHARS)]

TopK = Annotated[int, Field(ge=1, le=MAX_TOP_K)]
NamespacesArg = Annotated[
    list[Namespace],
    Field(max_length=MAX_SEARCH_NAMESPACES, description="Only these namespaces, each with its descendants."),
]
SubjectKeyArg = Annotated[
    SubjectKey | SkipJsonSchema[None],
    optional(
        "What a fact is about, e.g. user/reply-language: a new memory with the same key replaces the old one, kept as history."
    ),
]


ExpectedVersion = Annotated[int, Field(ge=0, le=MAX_VERSION)]


def tool_result(output: BaseModel, text: str) -> CallToolResult:
    """The answer of a tool: `text` for the model, `output` as the structured content its schema describes."""
    # mode="json" makes the structured content exactly what the output schema describes (ISO strings, lists).
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=output.model_dump(mode="json"))


def hints(*, read_only: bool, destructive: bool, idempotent: bool) -> ToolAnnotations:
    """Tool annotations; open world is always false: the hub is a closed system."""
    return ToolAnnotations(
        read_only_hint=read_only, destructive_hint=destructive, idempotent_hint=idempotent, open_world_hint=False
    )
