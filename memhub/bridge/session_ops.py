"""What the session-state tools do: narrowing, hub calls (no retry of a conflict), results.

As everywhere in the bridge, the narrowing is checked first and the hub then
checks the agent's token and policies. A session names its namespace, so the
narrowing applies to it directly. A compare-and-set conflict (ABORTED) is the
answer, not a transient failure: it is reported at once with the current
version instead of being retried until the deadline.
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from typing import Any

import grpc
from mcp.server.mcpserver.exceptions import ToolError

from memhub.bridge.hub_calls import HubCaller
from memhub.bridge.hub_client import BridgeHubClient
from memhub.bridge.narrowing import Narrowing
from memhub.bridge.operations import checked
from memhub.bridge.session_results import DeleteOutput, GetOutput, ListOutput, PutOutput, entry
from memhub.v1 import session_pb2 as pb


class SessionOperations:
    """session_state_put, _get, _list and _delete for one agent's bridge."""

    def __init__(self, hub: BridgeHubClient, call: HubCaller, narrowing: Narrowing, default_namespace: str | None) -> None:
        self.hub = hub
        self.call = call
        self.narrowing = narrowing
        self.default_namespace = default_namespace

    def where(self, namespace: str | None) -> str:
        """The session's namespace: the one named, else the bridge's default; checked against the narrowing."""
        target = namespace or self.default_namespace
        if not target:
            raise ToolError(
                "namespace: is required because this bridge has no default namespace; pass the namespace the session "
                "lives in, such as agents/<your agent id> or the team namespace the task belongs to"
            )
        return checked(lambda: self.narrowing.check(target, "namespace"))

    async def put(
        self,
        session_id: str,
        key: str,
        value: Any,
        *,
        namespace: str | None,
        expected_version: int | None,
        ttl_seconds: int | None,
    ) -> tuple[PutOutput, str]:
        ns = self.where(namespace)
        value_json = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        # One request id per tool call: if an attempt commits but its answer is lost, the retry is answered
        # with that put's entry rather than applied again (or refused as a conflict with itself).
        request_id = uuid.uuid4().hex
        reply = await self.call(
            lambda: self.hub.session_put(
                ns,
                session_id,
                key,
                value_json=value_json,
                expected_version=expected_version,
                ttl=timedelta(seconds=ttl_seconds) if ttl_seconds else None,
                request_id=request_id,
            ),
            retry_aborted=False,
        )
        return PutOutput(entry=entry(reply.entry), replayed=reply.replayed), reply.entry.value_json

    async def get(self, session_id: str, key: str, *, namespace: str | None) -> tuple[GetOutput, str]:
        ns = self.where(namespace)

        def get_or_none() -> pb.SessionStateEntry | None:
            try:
                return self.hub.session_get(ns, session_id, key)
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.NOT_FOUND:
                    return None  # not set is an answer, not a failure
                raise

        found = await self.call(get_or_none)
        if found is None:
            return GetOutput(found=False), ""
        return GetOutput(found=True, entry=entry(found)), found.value_json

    async def list(
        self, session_id: str, *, namespace: str | None, key_prefix: str | None, keys_only: bool, page_token: str | None
    ) -> tuple[ListOutput, list[str]]:
        ns = self.where(namespace)
        reply = await self.call(
            lambda: self.hub.session_list(
                ns, session_id, key_prefix=key_prefix or "", keys_only=keys_only, page_size=256, page_token=page_token or ""
            )
        )
        out = ListOutput(
            namespace=ns,
            session_id=session_id,
            entries=[entry(e) for e in reply.entries],
            next_page_token=reply.next_page_token or None,
        )
        return out, [e.value_json for e in reply.entries]

    async def delete(
        self, session_id: str, *, key: str | None, namespace: str | None, expected_version: int | None, whole_session: bool
    ) -> DeleteOutput:
        ns = self.where(namespace)
        if whole_session == bool(key):
            raise ToolError("key: name the key to delete, or set whole_session to delete every key of the session (not both)")
        if whole_session and expected_version is not None:
            raise ToolError("expected_version: is for one key; leave it out with whole_session")
        reply = await self.call(
            lambda: self.hub.session_delete(
                ns, session_id, key or "", expected_version=expected_version, whole_session=whole_session
            ),
            retry_aborted=False,
        )
        return DeleteOutput(namespace=ns, session_id=session_id, key=key or None, deleted=reply.deleted)
