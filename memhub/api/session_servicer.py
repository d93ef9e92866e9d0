"""SessionStateService over gRPC: thin methods that validate, delegate and convert back."""

from __future__ import annotations

from concurrent.futures import Executor

from google.protobuf.timestamp_pb2 import Timestamp

from memhub.api.identity import current_caller
from memhub.api.status import blocking_rpc
from memhub.core import validation as v
from memhub.core.namespaces import validate_namespace
from memhub.errors import InvalidArgument
from memhub.session_state import validation as sv
from memhub.session_state.records import Entry, ListRequest, PutRequest
from memhub.session_state.service import SessionStateService
from memhub.v1 import session_pb2 as pb
from memhub.v1 import session_pb2_grpc as pb_grpc

MAX_LIST_PAGE = 256
DEFAULT_LIST_PAGE = 100


def _ts(value) -> Timestamp:  # noqa: ANN001 - datetime
    ts = Timestamp()
    ts.FromDatetime(value)
    return ts


def entry(e: Entry) -> pb.SessionStateEntry:
    return pb.SessionStateEntry(
        namespace=e.namespace,
        session_id=e.session_id,
        key=e.key,
        value_json=e.value_json,
        version=e.version,
        updated_at=_ts(e.updated_at),
        expires_at=_ts(e.expires_at),
        updated_by=e.updated_by,
        value_bytes=e.value_bytes,
    )


def _place(
    request: pb.PutSessionStateRequest | pb.GetSessionStateRequest | pb.ListSessionStateRequest | pb.DeleteSessionStateRequest,
) -> tuple[str, str]:
    """The request's (namespace, session_id), checked."""
    return validate_namespace(request.namespace, "namespace"), sv.session_id(request.session_id, "session_id")


def _page_size(value: int) -> int:
    if value == 0:
        return DEFAULT_LIST_PAGE
    if not 1 <= value <= MAX_LIST_PAGE:
        raise InvalidArgument("page_size", f"is {value}; use 1 to {MAX_LIST_PAGE} (0 means {DEFAULT_LIST_PAGE})")
    return value


class SessionStateServicer(pb_grpc.SessionStateServiceServicer):
    def __init__(self, service: SessionStateService, pool: Executor) -> None:
        self._service = service
        self.pool = pool  # where the method bodies run (memhub/api/status.py)

    @blocking_rpc
    def PutSessionState(self, request: pb.PutSessionStateRequest, context: None) -> pb.PutSessionStateResponse:
        config = self._service.config
        namespace, session_id = _place(request)
        req = PutRequest(
            namespace=namespace,
            session_id=session_id,
            key=sv.key(request.key, "key"),
            value_json=request.value_json,
            value_bytes=sv.value_json(request.value_json, "value_json", config.max_value_bytes),
            ttl_s=sv.ttl_seconds(
                request.ttl.seconds, request.ttl.nanos, request.HasField("ttl"), "ttl", config.default_ttl_s, config.max_ttl_s
            ),
            expected_version=sv.expected_version(
                request.expected_version if request.HasField("expected_version") else None, "expected_version"
            ),
            request_id=v.request_id(request.request_id, "request_id") or "",
        )
        result = self._service.put(current_caller(), req)
        return pb.PutSessionStateResponse(entry=entry(result.entry), replayed=result.replayed)

    @blocking_rpc
    def GetSessionState(self, request: pb.GetSessionStateRequest, context: None) -> pb.SessionStateEntry:
        namespace, session_id = _place(request)
        return entry(self._service.get(current_caller(), namespace, session_id, sv.key(request.key, "key")))

    @blocking_rpc
    def ListSessionState(self, request: pb.ListSessionStateRequest, context: None) -> pb.ListSessionStateResponse:
        namespace, session_id = _place(request)
        req = ListRequest(
            namespace=namespace,
            session_id=session_id,
            key_prefix=sv.key_prefix(request.key_prefix, "key_prefix"),
            keys_only=request.keys_only,
            page_size=_page_size(request.page_size),
            page_token=request.page_token,
        )
        page = self._service.list(current_caller(), req)
        return pb.ListSessionStateResponse(entries=[entry(e) for e in page.entries], next_page_token=page.next_page_token)

    @blocking_rpc
    def DeleteSessionState(self, request: pb.DeleteSessionStateRequest, context: None) -> pb.DeleteSessionStateResponse:
        namespace, session_id = _place(request)
        expected = request.expected_version if request.HasField("expected_version") else None
        caller = current_caller()
        if request.whole_session:
            if request.key:
                raise InvalidArgument("key", "must be empty with whole_session (which deletes every key)")
            if expected is not None:
                raise InvalidArgument("expected_version", "is for one key; leave it unset with whole_session")
            return pb.DeleteSessionStateResponse(deleted=self._service.delete_session(caller, namespace, session_id))
        if not request.key:
            raise InvalidArgument("key", f"is required (or set whole_session to delete every key): {sv.KEY_RULE}")
        key = sv.key(request.key, "key")
        expected = sv.expected_version(expected, "expected_version", allow_zero=False)
        return pb.DeleteSessionStateResponse(deleted=self._service.delete(caller, namespace, session_id, key, expected))
