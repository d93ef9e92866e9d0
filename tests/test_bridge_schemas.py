"""The bridge's tool schemas, as an MCP client receives them (the SDK's own client), checked against JSON Schema itself.

- Every input and output schema is valid JSON Schema (Draft 2020-12
  meta-schema) and uses only keywords JSON Schema defines: a keyword it does
  not know ("ge", "le", which pydantic emits for a bound on an optional
  argument) passes the meta-schema but is ignored by every client.
- The published bounds are the hub's (memhub/core/validation.py and friends),
  and the two the hub states only as rules (tag and subject-key length) are
  checked against the hub itself.
- Every bound a schema states is enforced by the bridge before any hub call,
  with a message in the hub's words: the field, the limit, no pydantic text.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import jsonschema
import jwt
import pytest
from conftest import Stack
from jsonschema_specifications import REGISTRY
from mcp import Client
from mcp_types import Tool

from memhub.api.convert import MAX_TTL
from memhub.bridge import BridgeSettings, RetryPolicy, build_bridge, lifecycle_tools
from memhub.bridge import tools as bridge_tools
from memhub.bridge.narrowing import TOOL_NAMES
from memhub.client import memory_input
from memhub.core import context_recall, lineage, validation
from memhub.core.namespaces import MAX_PATH_CHARS
from memhub.core.paging import MAX_TOKEN_CHARS
from memhub.retrieval_log.records import MAX_MARKED_IDS
from memhub.session_state import validation as session_validation
from memhub.session_state.config import SessionStateConfig

pytestmark = pytest.mark.anyio

# Nothing listens here: a call that got past the bridge's argument checks would report the hub unreachable.
NO_HUB = "127.0.0.1:9"
# Never shown to a hub: these checks end in the bridge.
TOKEN = jwt.encode({"sub": "schema-tester"}, "not-a-hub-secret-" * 2, algorithm="HS256")
VALID = {
    "write_memory": {"content": "x"},
    "search_memories": {"query": "x"},
    "forget_memory": {"id": str(uuid.uuid4()), "reason": "test"},
    "get_preferences": {},
    "recall_context": {"query": "x"},
    "mark_used": {"memory_ids": [str(uuid.uuid4())]},
    "summarize_episodes": {"namespace": "agents/schema-tester"},
    "memory_history": {"id": str(uuid.uuid4())},
    "explain_memory": {"id": str(uuid.uuid4())},
    "session_state_put": {"session_id": "task-1", "key": "plan", "value": {"step": 1}},
    "session_state_get": {"session_id": "task-1", "key": "plan"},
    "session_state_list": {"session_id": "task-1"},
    "session_state_delete": {"session_id": "task-1", "key": "plan"},
}
ALL_TOOLS = sorted(VALID)
# The keywords of JSON Schema 2020-12: every vocabulary's meta-schema lists its own.
KNOWN_KEYWORDS = frozenset(
    keyword for uri in REGISTRY if "/draft/2020-12/meta/" in uri for keyword in REGISTRY.contents(uri).get("properties", {})
)
_SUBSCHEMA = ("items", "additionalProperties", "not", "contains", "if", "then", "else", "propertyNames", "unevaluatedItems")
_SUBSCHEMA_MAPS = ("properties", "$defs", "patternProperties", "dependentSchemas")
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@contextlib.asynccontextmanager
async def client(address: str = NO_HUB, token: str = TOKEN) -> AsyncIterator[Client]:
    settings = BridgeSettings(hub_address=address, token=token, retry=RetryPolicy(deadline_s=1.0))
    with build_bridge(settings) as bridge:
        async with Client(bridge.server) as connected:
            yield connected


async def listed_tools() -> dict[str, Tool]:
    async with client() as c:
        return {tool.name: tool for tool in (await c.list_tools()).tools}


def subschemas(schema: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object inside `schema` with its JSON pointer-ish location."""
    if not isinstance(schema, dict):
        return  # `true`/`false` schemas have no keywords
    yield where, schema
    for key in _SUBSCHEMA:
        if key in schema:
            yield from subschemas(schema[key], f"{where}/{key}")
    for key in _SUBSCHEMA_MAPS:
        for name, sub in schema.get(key, {}).items():
            yield from subschemas(sub, f"{where}/{key}/{name}")
    for key in _SUBSCHEMA_LISTS:
        for i, sub in enumerate(schema.get(key, [])):
            yield from subschemas(sub, f"{where}/{key}/{i}")


async def test_every_schema_is_valid_json_schema_using_only_its_keywords() -> None:
    assert {"minimum", "maxLength", "$defs"} <= KNOWN_KEYWORDS and "ge" not in KNOWN_KEYWORDS
    tools = await listed_tools()
    assert sorted(tools) == ALL_TOOLS == sorted(TOOL_NAMES)
    unknown = []
    for name, tool in tools.items():
        for kind, schema in (("input", tool.input_schema), ("output", tool.output_schema)):
            assert schema is not None, f"{name} has no {kind} schema"
            jsonschema.Draft202012Validator.check_schema(schema)
            jsonschema.Draft7Validator.check_schema(schema)  # clients on the older draft read them too
            for where, sub in subschemas(schema, f"{name}.{kind}"):
                unknown += [f"{where}: {key}" for key in sub if key not in KNOWN_KEYWORDS]
    assert unknown == [], "keywords JSON Schema does not define (clients ignore them)"


async def test_the_ttl_bounds_are_published_as_minimum_and_maximum() -> None:
    ttl = (await listed_tools())["write_memory"].input_schema["properties"]["ttl_seconds"]
    assert ttl["type"] == "integer" and "anyOf" not in ttl
    assert (ttl["minimum"], ttl["maximum"]) == (bridge_tools.MIN_TTL_SECONDS, bridge_tools.MAX_TTL_SECONDS)
    # The bridge's range sits inside the hub's (a positive duration up to MAX_TTL).
    assert 0 < bridge_tools.MIN_TTL_SECONDS < bridge_tools.MAX_TTL_SECONDS <= MAX_TTL.total_seconds()


def prop(tools: dict[str, Tool], tool: str, path: str) -> dict[str, Any]:
    node = tools[tool].input_schema
    for part in path.split("."):
        node = node["items"] if part == "[]" else node["properties"][part]
    return node


async def test_published_bounds_are_the_hubs() -> None:
    tools = await listed_tools()
    v = validation
    expected = [
        ("write_memory", "content", "minLength", 1),
        ("write_memory", "content", "maxLength", v.MAX_CONTENT_CHARS),
        ("write_memory", "namespace", "maxLength", MAX_PATH_CHARS),
        ("write_memory", "tags", "maxItems", v.MAX_TAGS),
        ("write_memory", "tags.[]", "maxLength", bridge_tools.MAX_TAG_CHARS),
        ("write_memory", "importance", "minimum", 1),
        ("write_memory", "importance", "maximum", 5),
        ("write_memory", "importance", "default", v.DEFAULT_IMPORTANCE),
        ("write_memory", "subject_key", "maxLength", bridge_tools.MAX_SUBJECT_KEY_CHARS),
        ("search_memories", "query", "maxLength", v.MAX_QUERY_CHARS),
        ("search_memories", "namespaces.[]", "maxLength", MAX_PATH_CHARS),
        ("search_memories", "top_k", "minimum", 1),
        ("search_memories", "top_k", "maximum", v.MAX_TOP_K),
        ("search_memories", "top_k", "default", v.DEFAULT_TOP_K),
        ("search_memories", "context_window", "minimum", 0),
        ("search_memories", "context_window", "maximum", v.MAX_CONTEXT_WINDOW),
        ("forget_memory", "reason", "minLength", 1),
        ("forget_memory", "reason", "maxLength", v.MAX_REASON_CHARS),
        ("get_preferences", "subject_key", "maxLength", bridge_tools.MAX_SUBJECT_KEY_CHARS),
        ("get_preferences", "query", "maxLength", v.MAX_QUERY_CHARS),
        ("get_preferences", "top_k", "maximum", v.MAX_TOP_K),
        ("recall_context", "query", "maxLength", v.MAX_QUERY_CHARS),
        ("recall_context", "namespaces.[]", "maxLength", MAX_PATH_CHARS),
        ("recall_context", "token_budget", "minimum", context_recall.MIN_TOKEN_BUDGET),
        ("recall_context", "token_budget", "maximum", context_recall.MAX_TOKEN_BUDGET),
        ("recall_context", "token_budget", "default", context_recall.DEFAULT_TOKEN_BUDGET),
        ("recall_context", "per_group", "maximum", context_recall.MAX_PER_GROUP),
        ("recall_context", "per_group", "default", context_recall.DEFAULT_PER_GROUP),
        ("recall_context", "candidates", "maximum", v.MAX_TOP_K),
        ("recall_context", "candidates", "default", context_recall.DEFAULT_CANDIDATES),
        ("mark_used", "memory_ids", "minItems", 1),
        ("mark_used", "memory_ids", "maxItems", MAX_MARKED_IDS),
        ("mark_used", "memory_ids.[]", "maxLength", bridge_tools.MEMORY_ID_CHARS),
        ("mark_used", "search_id", "maxLength", bridge_tools.MEMORY_ID_CHARS),
        ("summarize_episodes", "namespace", "maxLength", MAX_PATH_CHARS),
        ("summarize_episodes", "session", "maxLength", v.MAX_SESSION_CHARS),
        ("summarize_episodes", "tags", "maxItems", v.MAX_TAGS),
        ("summarize_episodes", "tags.[]", "maxLength", bridge_tools.MAX_TAG_CHARS),
        ("summarize_episodes", "group_by", "enum", ["session", "tag", "entity", "embedding"]),
        ("summarize_episodes", "kind", "enum", ["semantic", "procedural"]),
        ("memory_history", "limit", "maximum", lifecycle_tools.MAX_HISTORY_VERSIONS),
        ("memory_history", "limit", "default", lifecycle_tools.DEFAULT_HISTORY_VERSIONS),
        ("explain_memory", "max_depth", "maximum", lineage.MAX_DEPTH),
        ("explain_memory", "max_depth", "default", lineage.DEFAULT_DEPTH),
        ("explain_memory", "max_memories", "maximum", lineage.MAX_ENTRIES),
        ("explain_memory", "max_memories", "default", lineage.DEFAULT_ENTRIES),
        ("write_memory", "cites", "maxItems", v.MAX_DERIVED_FROM),
        ("write_memory", "cites.[]", "maxLength", bridge_tools.MEMORY_ID_CHARS),
        ("write_memory", "expected_version", "minimum", 0),
        ("write_memory", "expected_version", "maximum", v.MAX_VERSION),
        ("forget_memory", "expected_version", "minimum", 1),
        ("forget_memory", "expected_version", "maximum", v.MAX_VERSION),
        ("session_state_put", "session_id", "maxLength", session_validation.MAX_ID_CHARS),
        ("session_state_put", "session_id", "pattern", session_validation.SESSION_ID_PATTERN),
        ("session_state_put", "key", "maxLength", session_validation.MAX_ID_CHARS),
        ("session_state_put", "key", "pattern", session_validation.KEY_PATTERN),
        ("session_state_put", "namespace", "maxLength", MAX_PATH_CHARS),
        ("session_state_put", "expected_version", "minimum", 0),
        ("session_state_put", "ttl_seconds", "minimum", 1),
        ("session_state_put", "ttl_seconds", "maximum", SessionStateConfig.max_ttl_s),
        ("session_state_get", "key", "pattern", session_validation.KEY_PATTERN),
        ("session_state_list", "key_prefix", "maxLength", session_validation.MAX_ID_CHARS),
        ("session_state_list", "page_token", "maxLength", MAX_TOKEN_CHARS),
        ("session_state_delete", "expected_version", "minimum", 1),
    ]
    wrong = [(t, p, k, prop(tools, t, p).get(k), want) for t, p, k, want in expected if prop(tools, t, p).get(k) != want]
    assert wrong == []
    # Narrower than the hub is allowed (the bridge refuses first); wider is not.
    assert prop(tools, "search_memories", "namespaces")["maxItems"] <= v.MAX_NAMESPACE_ROOTS
    assert prop(tools, "search_memories", "kinds")["maxItems"] <= v.MAX_ENUM_VALUES
    assert prop(tools, "recall_context", "namespaces")["maxItems"] <= v.MAX_NAMESPACE_ROOTS
    assert prop(tools, "recall_context", "kinds")["maxItems"] <= v.MAX_ENUM_VALUES


async def test_the_limits_the_hub_states_only_as_rules_match_the_hub(stack: Stack, ns: str) -> None:
    """Tag and subject-key lengths have no constant in the hub: write at the limit and one past it, directly."""
    longest_tag = "t" * bridge_tools.MAX_TAG_CHARS
    segment = "k" * 64  # the longest subject-key segment: only the whole key's length is over below
    longest_key = f"{segment}/{segment}"[-bridge_tools.MAX_SUBJECT_KEY_CHARS :]
    assert len(longest_key) == bridge_tools.MAX_SUBJECT_KEY_CHARS
    at_limits = memory_input(ns, "at the limits", kind="semantic", type="fact", tags=[longest_tag], subject_key=longest_key)
    stack.client.write([at_limits])
    for over in (
        memory_input(ns, "tag too long", tags=[longest_tag + "t"]),
        memory_input(ns, "key too long", kind="semantic", type="fact", subject_key=f"{segment}/{segment}"),
    ):
        with pytest.raises(grpc.RpcError) as refused:
            stack.client.write([over])
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_the_history_limit_the_hub_states_only_in_its_servicer_matches_the_hub(stack: Stack, ns: str) -> None:
    mid = stack.client.write([memory_input(ns, "a memory with a history of one")]).results[0].memory.id
    assert len(stack.client.history(mid, limit=lifecycle_tools.MAX_HISTORY_VERSIONS).versions) == 1
    with pytest.raises(grpc.RpcError) as refused:
        stack.client.history(mid, limit=lifecycle_tools.MAX_HISTORY_VERSIONS + 1)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def beyond(path: str, schema: dict[str, Any]) -> Iterator[tuple[str, Any, str]]:
    """(field path, a value just outside one bound of `schema`, text the refusal must contain) for each bound."""
    if "maximum" in schema:
        yield path, schema["maximum"] + 1, str(schema["maximum"])
    if "minimum" in schema:
        yield path, schema["minimum"] - 1, str(schema["minimum"])
    if "maxLength" in schema:
        yield path, "x" * (schema["maxLength"] + 1), str(schema["maxLength"])
    if schema.get("minLength", 0) > 1:
        yield path, "x" * (schema["minLength"] - 1), str(schema["minLength"])
    elif schema.get("minLength") == 1:
        yield path, "", "must not be empty"
    if "enum" in schema:
        yield path, "no-such-value", ", ".join(schema["enum"])
    if schema.get("type") == "array":
        item = schema["items"]
        fine = item["enum"][0] if "enum" in item else "a" * item.get("minLength", 1)
        if "maxItems" in schema:
            yield path, [fine] * (schema["maxItems"] + 1), str(schema["maxItems"])
        if schema.get("minItems", 0) > 0:
            yield path, [], f"use {schema['minItems']} to"
        for inner, value, limit in beyond(f"{path}[0]", item):
            yield inner, [value], limit


async def test_every_published_bound_is_enforced_by_the_bridge_in_the_hubs_words() -> None:
    tools = await listed_tools()
    cases = [
        (name, prop_name, path, value, limit)
        for name, tool in tools.items()
        for prop_name, schema in tool.input_schema["properties"].items()
        for path, value, limit in beyond(prop_name, schema)
    ]
    assert len(cases) >= 30 and {c[0] for c in cases} == set(tools)
    problems = []
    async with client() as c:
        for name, prop_name, path, value, limit in cases:
            result = await c.call_tool(name, VALID[name] | {prop_name: value})
            message = "\n".join(block.text for block in result.content if block.type == "text")
            ok = (
                result.is_error
                and message.startswith(f"Error executing tool {name}: invalid argument: {path}: ")
                and limit in message
                and message.endswith("Fix that argument and call again.")
                and not any(noise in message for noise in ("pydantic", "http", "validation error", "type=", "input_value"))
            )
            if not ok:
                problems.append(f"{name}({prop_name}={str(value)[:30]!r}): {message[:300]}")
    assert problems == []


async def test_top_k_1000_names_top_k_and_its_limit_without_a_url() -> None:
    async with client() as c:
        result = await c.call_tool("search_memories", {"query": "release freeze", "top_k": 1000})
    assert result.is_error
    assert result.content[0].text == (
        "Error executing tool search_memories: invalid argument: top_k: is 1000; use 1 to 100. Fix that argument and call again."
    )


async def test_several_wrong_arguments_are_listed_together_by_their_paths() -> None:
    async with client() as c:
        result = await c.call_tool(
            "write_memory", {"content": "", "tags": ["ok", "x" * 65], "importance": "high", "kind": "dream", "ttl_seconds": 5}
        )
    assert result.is_error
    assert result.content[0].text == (
        "Error executing tool write_memory: invalid arguments: content: must not be empty; kind: is 'dream'; use one of "
        "episodic, semantic, procedural; tags[1]: is 65 characters; use 1 to 64 characters; importance: is 'high'; use a "
        "whole number, 1 to 5; ttl_seconds: is 5; use 60 to 315360000. Fix them and call again."
    )


async def test_arguments_at_the_bounds_pass_the_bridge_and_reach_the_hub(stack: Stack, ns: str) -> None:
    """The other side of the bound: the largest values the schema allows are accepted and answered by the hub."""
    async with client(stack.address, stack.token("tester")) as c:
        written = await c.call_tool(
            "write_memory",
            {
                "content": "at every upper bound",
                "namespace": ns,
                "tags": [f"t{i}" for i in range(validation.MAX_TAGS - 1)] + ["t" * bridge_tools.MAX_TAG_CHARS],
                "importance": 5,
                "ttl_seconds": bridge_tools.MAX_TTL_SECONDS,
            },
        )
        assert not written.is_error, written.content[0].text
        found = await c.call_tool(
            "search_memories", {"query": "upper bound", "namespaces": [ns], "top_k": validation.MAX_TOP_K, "context_window": 5}
        )
        assert not found.is_error, found.content[0].text
        assert [h["id"] for h in found.structured_content["hits"]] == [written.structured_content["memory"]["id"]]
