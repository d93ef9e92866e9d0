import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from memhub.v1 import memory_pb2 as _memory_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ChangeKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CHANGE_KIND_UNSPECIFIED: _ClassVar[ChangeKind]
    CHANGE_KIND_WRITTEN: _ClassVar[ChangeKind]
    CHANGE_KIND_SUPERSEDED: _ClassVar[ChangeKind]
    CHANGE_KIND_FORGOTTEN: _ClassVar[ChangeKind]
    CHANGE_KIND_EXPIRED: _ClassVar[ChangeKind]
    CHANGE_KIND_ARCHIVED: _ClassVar[ChangeKind]
    CHANGE_KIND_CONSOLIDATED: _ClassVar[ChangeKind]
    CHANGE_KIND_RESTORED: _ClassVar[ChangeKind]
    CHANGE_KIND_RELEASED: _ClassVar[ChangeKind]
CHANGE_KIND_UNSPECIFIED: ChangeKind
CHANGE_KIND_WRITTEN: ChangeKind
CHANGE_KIND_SUPERSEDED: ChangeKind
CHANGE_KIND_FORGOTTEN: ChangeKind
CHANGE_KIND_EXPIRED: ChangeKind
CHANGE_KIND_ARCHIVED: ChangeKind
CHANGE_KIND_CONSOLIDATED: ChangeKind
CHANGE_KIND_RESTORED: ChangeKind
CHANGE_KIND_RELEASED: ChangeKind

class SubscribeChangesRequest(_message.Message):
    __slots__ = ("namespaces", "kinds", "types", "tags", "changes", "cursor")
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    namespaces: _containers.RepeatedScalarFieldContainer[str]
    kinds: _containers.RepeatedScalarFieldContainer[_memory_pb2.MemoryKind]
    types: _containers.RepeatedScalarFieldContainer[_memory_pb2.MemoryType]
    tags: _containers.RepeatedScalarFieldContainer[str]
    changes: _containers.RepeatedScalarFieldContainer[ChangeKind]
    cursor: str
    def __init__(self, namespaces: _Optional[_Iterable[str]] = ..., kinds: _Optional[_Iterable[_Union[_memory_pb2.MemoryKind, str]]] = ..., types: _Optional[_Iterable[_Union[_memory_pb2.MemoryType, str]]] = ..., tags: _Optional[_Iterable[str]] = ..., changes: _Optional[_Iterable[_Union[ChangeKind, str]]] = ..., cursor: _Optional[str] = ...) -> None: ...

class ChangeFeedMessage(_message.Message):
    __slots__ = ("change", "heartbeat")
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    change: ChangeEvent
    heartbeat: Heartbeat
    def __init__(self, change: _Optional[_Union[ChangeEvent, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ...) -> None: ...

class ChangeEvent(_message.Message):
    __slots__ = ("cursor", "change", "changed_at", "memory")
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    CHANGED_AT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    cursor: str
    change: ChangeKind
    changed_at: _timestamp_pb2.Timestamp
    memory: _memory_pb2.Memory
    def __init__(self, cursor: _Optional[str] = ..., change: _Optional[_Union[ChangeKind, str]] = ..., changed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., memory: _Optional[_Union[_memory_pb2.Memory, _Mapping]] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ("cursor", "at")
    CURSOR_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    cursor: str
    at: _timestamp_pb2.Timestamp
    def __init__(self, cursor: _Optional[str] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
