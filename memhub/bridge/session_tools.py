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
from memhub.bridge.tool_support import OPTIONAL_KEY_PATTERN, OptionalNamespace, ToolSpec, hints, optional, tool_result
from memhub.core.paging import MAX_TOKEN_CHARS
from memhub.session_state.config import SessionStateConfig
from memhub.session_state.validation import KEY_PATTERN, MAX_ID_CHARS, SESSION_ID_PATTERN

# The hub's default bounds (a hub may be configured tighter; it checks again either way).
MAX_SESSION_TTL_SECONDS = SessionStateConfig.max_ttl_s
DEFAULT_SESSION_TTL_SECONDS = SessionStateConfig.default_ttl_s

SessionId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_ID_CHARS,
        pattern=SESSION_ID_PATTERN,
        description="Shared by every agent on the task, e.g. task-4312.",
    ),
]
Key = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS, pattern=KEY_PATTERN, description="e.g. plan or step/3/result.")]
SessionNamespace = Annotated[
    OptionalNamespace | SkipJsonSchema[None],
    optional("Default: this bridge's default namespace."),
]

PUT_DESCRIPTION = f"""\
Call this to record or update the state of a task in progress that the other agents on it must see: the plan, \
who took which step, intermediate results, a claim; short-lived \
({DEFAULT_SESSION_TTL_SECONDS // 3600} h unless ttl_seconds) and never searched, so lasting facts go to write_memory. \
expected_version makes it a compare-and-set (0: only if unset, e.g. to claim a step)."""

GET_DESCRIPTION = """\
Call this when you pick up or continue a task shared with other agents, to read one key of its session state \
before acting on it. Its version lets you update it safely; found is false when unset or expired."""

LIST_DESCRIPTION = """\
Call this when you join or resume a task shared with other agents, to see every live key of its session \
state in key order (key_prefix narrows it; keys_only leaves the values out)."""

DELETE_DESCRIPTION = """\
Call this when a key of a task's session state is obsolete (a released claim, finished scratch data) or, with \
whole_session, when the task is done. It cannot be undone."""


def session_tools(ops: SessionOperations) -> dict[str, ToolSpec]:
    """The four tools, by name."""

    async def session_state_put(
        session_id: SessionId,
        key: Key,
        value: Annotated[Any, Field(description="Any JSON value, 64 KiB at most.")],
        namespace: SessionNamespace = None,
        expected_version: Annotated[
            Annotated[int, Field(ge=0)] | SkipJsonSchema[None],
            optional("Only if the key is at this version (0: only if unset)."),
        ] = None,
        ttl_seconds: Annotated[
            Annotated[int, Field(ge=1, le=MAX_SESSION_TTL_SECONDS)] | SkipJsonSchema[None],
            optional(f"Lifetime in seconds (default {DEFAULT_SESSION_TTL_SECONDS})."),
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
            optional("Only keys starting with this, e.g. step/"),
        ] = None,
        keys_only: bool = False,
        page_token: Annotated[
            Annotated[str, Field(max_length=MAX_TOKEN_CHARS)] | SkipJsonSchema[None],
            optional("next_page_token of the previous page."),
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
            optional("Leave out with whole_session."),
        ] = None,
        namespace: SessionNamespace = None,
        expected_version: Annotated[
            Annotated[int, Field(ge=1)] | SkipJsonSchema[None],
            optional("Only if the key is at this version."),
        ] = None,
        whole_session: Annotated[bool, Field(description="Delete every key of the session.")] = False,
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
