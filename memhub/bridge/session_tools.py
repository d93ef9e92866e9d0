"""The session-state tools: session_state_put, session_state_get, session_state_list, session_state_delete.

Declared as in tools.py (descriptions say *when* to call; bounds are the
hub's, from memhub/session_state/), registered by tools.register_tools under the
same narrowing. They are the working layer of memory: the state of the task
in progress, shared by the agents on it, short-lived; the descriptions send
lasting facts to write_memory.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp_types import CallToolResult
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from memhub.bridge.session_ops import SessionOperations
from memhub.bridge.session_results import (
    DeleteOutput,
    GetOutput,
    ListOutput,
    PutOutput,
    delete_text,
    get_text,
    list_text,
    put_text,
)
from memhub.bridge.tool_support import OptionalNamespace, ToolSpec, hints, optional, tool_result
from memhub.core.paging import MAX_TOKEN_CHARS
from memhub.session_state.config import SessionStateConfig
from memhub.session_state.validation import KEY_PATTERN, KEY_RULE, MAX_ID_CHARS, SESSION_ID_PATTERN, SESSION_ID_RULE

# The hub's default bounds (a hub may be configured tighter; it checks again either way).
MAX_SESSION_TTL_SECONDS = SessionStateConfig.max_ttl_s
DEFAULT_SESSION_TTL_SECONDS = SessionStateConfig.default_ttl_s
# A key's start (the prefix of a list), or a key that may be left out (delete): the key rule, or nothing.
OPTIONAL_KEY_PATTERN = r"^(?:[A-Za-z0-9][A-Za-z0-9._:/-]{0,127})?$"

SessionId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_ID_CHARS,
        pattern=SESSION_ID_PATTERN,
        description=f"The task's session id, the same for every agent working on it: {SESSION_ID_RULE}",
    ),
]
Key = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS, pattern=KEY_PATTERN, description=f"The key: {KEY_RULE}")]
SessionNamespace = Annotated[
    OptionalNamespace | SkipJsonSchema[None],
    optional(
        "The namespace the session lives in (its read and write rights are the session's), e.g. 'teams/support'. "
        "Leave out for this bridge's default namespace."
    ),
]

PUT_DESCRIPTION = f"""\
Call this to record or update the state of a task in progress that the other agents working on it must see: \
the plan, which step is taken by whom, intermediate results, a claim on a piece of work. The value is any JSON, \
stored under the task's session_id and a key, shared by every agent that may use the namespace, and short-lived \
(it expires after ttl_seconds, {DEFAULT_SESSION_TTL_SECONDS // 3600} hours unless you say otherwise). It is not \
memory: nothing here is searched or kept after it expires, so write lasting facts, decisions and lessons with \
write_memory instead. To change a value only if nobody changed it since you read it, pass the version you read as \
expected_version (0: only if the key is not set yet, e.g. to claim a step); on a conflict nothing is changed and \
the current version is reported."""

GET_DESCRIPTION = """\
Call this when you pick up or continue a task shared with other agents, to read one key of its session state \
(the plan, a step's result, who holds a claim) before you act on it. You get the value, its version (pass it as \
expected_version to session_state_put to update it safely) and who set it; found is false when the key is not \
set or has expired. For lasting facts and earlier conversations use search_memories instead."""

LIST_DESCRIPTION = """\
Call this when you join or resume a task shared with other agents, to see everything its session state holds: \
every live key with its value, version and writer, in key order (key_prefix narrows it, e.g. 'step/'; keys_only \
leaves the values out). For lasting memories use search_memories or recall_context instead."""

DELETE_DESCRIPTION = """\
Call this when a key of a task's session state is obsolete (a released claim, a finished step's scratch data) \
or, with whole_session, when the task is done and its shared state is no longer needed. It cannot be undone. \
Pass expected_version to delete the key only if nobody changed it since you read it."""


def session_tools(ops: SessionOperations) -> dict[str, ToolSpec]:
    """The four tools, by name."""

    async def session_state_put(
        session_id: SessionId,
        key: Key,
        value: Annotated[
            Any, Field(description="Any JSON value: an object, array, string, number, true, false or null (64 KiB at most).")
        ],
        namespace: SessionNamespace = None,
        expected_version: Annotated[
            Annotated[int, Field(ge=0)] | SkipJsonSchema[None],
            optional("Only if the key is at this version (0: only if it is not set). Leave out to set it unconditionally."),
        ] = None,
        ttl_seconds: Annotated[
            Annotated[int, Field(ge=1, le=MAX_SESSION_TTL_SECONDS)] | SkipJsonSchema[None],
            optional(f"How long it lives from now, in seconds (default {DEFAULT_SESSION_TTL_SECONDS})."),
        ] = None,
    ) -> Annotated[CallToolResult, PutOutput]:
        out, _ = await ops.put(
            session_id, key, value, namespace=namespace, expected_version=expected_version, ttl_seconds=ttl_seconds
        )
        return tool_result(out, put_text(out))

    async def session_state_get(
        session_id: SessionId, key: Key, namespace: SessionNamespace = None
    ) -> Annotated[CallToolResult, GetOutput]:
        out, value_json = await ops.get(session_id, key, namespace=namespace)
        where = f"session {session_id!r} of {ops.where(namespace)}: {key!r}"
        return tool_result(out, get_text(out, value_json, where))

    async def session_state_list(
        session_id: SessionId,
        namespace: SessionNamespace = None,
        key_prefix: Annotated[
            Annotated[str, Field(max_length=MAX_ID_CHARS, pattern=OPTIONAL_KEY_PATTERN)] | SkipJsonSchema[None],
            optional("Only keys starting with this, e.g. 'step/'."),
        ] = None,
        keys_only: Annotated[bool, Field(description="Leave the values out (versions, writers and sizes only).")] = False,
        page_token: Annotated[
            Annotated[str, Field(max_length=MAX_TOKEN_CHARS)] | SkipJsonSchema[None],
            optional("The next_page_token of the previous answer, for the keys after it."),
        ] = None,
    ) -> Annotated[CallToolResult, ListOutput]:
        out, values = await ops.list(
            session_id, namespace=namespace, key_prefix=key_prefix, keys_only=keys_only, page_token=page_token
        )
        return tool_result(out, list_text(out, values))

    async def session_state_delete(
        session_id: SessionId,
        key: Annotated[
            Annotated[str, Field(max_length=MAX_ID_CHARS, pattern=OPTIONAL_KEY_PATTERN)] | SkipJsonSchema[None],
            optional("The key to delete; leave out with whole_session."),
        ] = None,
        namespace: SessionNamespace = None,
        expected_version: Annotated[
            Annotated[int, Field(ge=1)] | SkipJsonSchema[None],
            optional("Only delete the key if it is at this version."),
        ] = None,
        whole_session: Annotated[bool, Field(description="Delete every key of the session (the task is done).")] = False,
    ) -> Annotated[CallToolResult, DeleteOutput]:
        out = await ops.delete(
            session_id, key=key, namespace=namespace, expected_version=expected_version, whole_session=whole_session
        )
        return tool_result(out, delete_text(out))

    return {
        # Overwrites the key's value (destructive), and a repeat is a new put: a new version, a new expiry.
        "session_state_put": ToolSpec(
            session_state_put,
            "Set shared task state",
            PUT_DESCRIPTION,
            hints(read_only=False, destructive=True, idempotent=False),
        ),
        "session_state_get": ToolSpec(
            session_state_get,
            "Read shared task state",
            GET_DESCRIPTION,
            hints(read_only=True, destructive=False, idempotent=True),
        ),
        "session_state_list": ToolSpec(
            session_state_list,
            "List shared task state",
            LIST_DESCRIPTION,
            hints(read_only=True, destructive=False, idempotent=True),
        ),
        # Deleting twice changes nothing the second time.
        "session_state_delete": ToolSpec(
            session_state_delete,
            "Delete shared task state",
            DELETE_DESCRIPTION,
            hints(read_only=False, destructive=True, idempotent=True),
        ),
    }
