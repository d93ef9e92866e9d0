"""MemhubClient's calls to the shared session state (proto/memhub/v1/session.proto), as a base class of it."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, TypeVar

import grpc
from google.protobuf.duration_pb2 import Duration

from memhub.client_stubs import SessionStateStub
from memhub.v1 import session_pb2

_Request = TypeVar("_Request")
_Response = TypeVar("_Response")


class SessionStateCalls:
    """Put, get, list and delete session-state keys; MemhubClient supplies the stub and the call."""

    sessions: SessionStateStub

    def _call(self, method: grpc.UnaryUnaryMultiCallable[_Request, _Response], request: _Request) -> _Response:
        raise NotImplementedError  # MemhubClient._call: its timeout and metadata

    def session_put(
        self,
        namespace: str,
        session_id: str,
        key: str,
        value: Any = None,
        *,
        value_json: str | None = None,
        expected_version: int | None = None,
        ttl: timedelta | None = None,
        request_id: str = "",
    ) -> session_pb2.PutSessionStateResponse:
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
        return self._call(self.sessions.PutSessionState, req)

    def session_get(self, namespace: str, session_id: str, key: str) -> session_pb2.SessionStateEntry:
        """One key's entry (``json.loads(entry.value_json)`` is its value); NOT_FOUND when unset or expired."""
        return self._call(
            self.sessions.GetSessionState, session_pb2.GetSessionStateRequest(namespace=namespace, session_id=session_id, key=key)
        )

    def session_list(
        self,
        namespace: str,
        session_id: str,
        *,
        key_prefix: str = "",
        keys_only: bool = False,
        page_size: int = 0,
        page_token: str = "",
    ) -> session_pb2.ListSessionStateResponse:
        """A page of the session's live keys, in key order."""
        req = session_pb2.ListSessionStateRequest(
            namespace=namespace,
            session_id=session_id,
            key_prefix=key_prefix,
            keys_only=keys_only,
            page_size=page_size,
            page_token=page_token,
        )
        return self._call(self.sessions.ListSessionState, req)

    def session_delete(
        self,
        namespace: str,
        session_id: str,
        key: str = "",
        *,
        expected_version: int | None = None,
        whole_session: bool = False,
    ) -> session_pb2.DeleteSessionStateResponse:
        """Delete one key (only at ``expected_version``, when given) or, with ``whole_session``, every key."""
        req = session_pb2.DeleteSessionStateRequest(
            namespace=namespace, session_id=session_id, key=key, whole_session=whole_session
        )
        if expected_version is not None:
            req.expected_version = expected_version
        return self._call(self.sessions.DeleteSessionState, req)
