import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SessionStateEntry(_message.Message):
    __slots__ = ("namespace", "session_id", "key", "value_json", "version", "updated_at", "expires_at", "updated_by", "value_bytes")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_JSON_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_BY_FIELD_NUMBER: _ClassVar[int]
    VALUE_BYTES_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    session_id: str
    key: str
    value_json: str
    version: int
    updated_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    updated_by: str
    value_bytes: int
    def __init__(self, namespace: _Optional[str] = ..., session_id: _Optional[str] = ..., key: _Optional[str] = ..., value_json: _Optional[str] = ..., version: _Optional[int] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_by: _Optional[str] = ..., value_bytes: _Optional[int] = ...) -> None: ...

class PutSessionStateRequest(_message.Message):
    __slots__ = ("namespace", "session_id", "key", "value_json", "expected_version", "ttl", "request_id")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_JSON_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    session_id: str
    key: str
    value_json: str
    expected_version: int
    ttl: _duration_pb2.Duration
    request_id: str
    def __init__(self, namespace: _Optional[str] = ..., session_id: _Optional[str] = ..., key: _Optional[str] = ..., value_json: _Optional[str] = ..., expected_version: _Optional[int] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., request_id: _Optional[str] = ...) -> None: ...

class PutSessionStateResponse(_message.Message):
    __slots__ = ("entry", "replayed")
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    entry: SessionStateEntry
    replayed: bool
    def __init__(self, entry: _Optional[_Union[SessionStateEntry, _Mapping]] = ..., replayed: _Optional[bool] = ...) -> None: ...

class GetSessionStateRequest(_message.Message):
    __slots__ = ("namespace", "session_id", "key")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    session_id: str
    key: str
    def __init__(self, namespace: _Optional[str] = ..., session_id: _Optional[str] = ..., key: _Optional[str] = ...) -> None: ...

class ListSessionStateRequest(_message.Message):
    __slots__ = ("namespace", "session_id", "key_prefix", "keys_only", "page_size", "page_token")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_PREFIX_FIELD_NUMBER: _ClassVar[int]
    KEYS_ONLY_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    session_id: str
    key_prefix: str
    keys_only: bool
    page_size: int
    page_token: str
    def __init__(self, namespace: _Optional[str] = ..., session_id: _Optional[str] = ..., key_prefix: _Optional[str] = ..., keys_only: _Optional[bool] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListSessionStateResponse(_message.Message):
    __slots__ = ("entries", "next_page_token")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[SessionStateEntry]
    next_page_token: str
    def __init__(self, entries: _Optional[_Iterable[_Union[SessionStateEntry, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class DeleteSessionStateRequest(_message.Message):
    __slots__ = ("namespace", "session_id", "key", "expected_version", "whole_session")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    WHOLE_SESSION_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    session_id: str
    key: str
    expected_version: int
    whole_session: bool
    def __init__(self, namespace: _Optional[str] = ..., session_id: _Optional[str] = ..., key: _Optional[str] = ..., expected_version: _Optional[int] = ..., whole_session: _Optional[bool] = ...) -> None: ...

class DeleteSessionStateResponse(_message.Message):
    __slots__ = ("deleted",)
    DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: int
    def __init__(self, deleted: _Optional[int] = ...) -> None: ...
