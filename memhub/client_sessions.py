"""The clients' request builders for the shared session state (proto/memhub/v1/session.proto).

Shared by the synchronous and the asyncio client like memhub/client_requests.py (bound to their RPCs in
memhub/client_rpcs.py).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from google.protobuf.duration_pb2 import Duration

from memhub.v1 import session_pb2


def session_put_request(
    namespace: str,
    session_id: str,
    key: str,
    value: Any = None,
    *,
    value_json: str | None = None,
    expected_version: int | None = None,
    ttl: timedelta | None = None,
    request_id: str = "",
) -> session_pb2.PutSessionStateRequest:
    """Set a key of a session's shared state to ``value`` (any JSON-serialisable value) or to the JSON text
    ``value_json``. ``expected_version``: None sets it unconditionally, 0 only if the key is not set, N only
    if it is at version N (else ABORTED; ``conflict_version(error)`` reads the current version)."""
    if value_json is None:
        value_json = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    req = session_pb2.PutSessionStateRequest(
        namespace=namespace, session_id=session_id, key=key, value_json=value_json, request_id=request_id
    )
    if expected_version is not None:
        req.expected_version = expected_version
    if ttl is not None:
        total = ttl.total_seconds()
        req.ttl.CopyFrom(Duration(seconds=int(total), nanos=round((total - int(total)) * 1e9)))
    return req


def session_get_request(namespace: str, session_id: str, key: str) -> session_pb2.GetSessionStateRequest:
    """One key's entry (``json.loads(entry.value_json)`` is its value); NOT_FOUND when unset or expired."""
    return session_pb2.GetSessionStateRequest(namespace=namespace, session_id=session_id, key=key)


def session_list_request(
    namespace: str,
    session_id: str,
    *,
    key_prefix: str = "",
    keys_only: bool = False,
    page_size: int = 0,
    page_token: str = "",
) -> session_pb2.ListSessionStateRequest:
    """A page of the session's live keys, in key order."""
    return session_pb2.ListSessionStateRequest(
        namespace=namespace,
        session_id=session_id,
        key_prefix=key_prefix,
        keys_only=keys_only,
        page_size=page_size,
        page_token=page_token,
    )


def session_delete_request(
    namespace: str,
    session_id: str,
    key: str = "",
    *,
    expected_version: int | None = None,
    whole_session: bool = False,
) -> session_pb2.DeleteSessionStateRequest:
    """Delete one key (only at ``expected_version``, when given) or, with ``whole_session``, every key."""
    req = session_pb2.DeleteSessionStateRequest(namespace=namespace, session_id=session_id, key=key, whole_session=whole_session)
    if expected_version is not None:
        req.expected_version = expected_version
    return req
