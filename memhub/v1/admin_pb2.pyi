import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Decision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DECISION_UNSPECIFIED: _ClassVar[Decision]
    DECISION_ALLOW: _ClassVar[Decision]
    DECISION_DENY: _ClassVar[Decision]
DECISION_UNSPECIFIED: Decision
DECISION_ALLOW: Decision
DECISION_DENY: Decision

class CheckAccessRequest(_message.Message):
    __slots__ = ("agent_id", "groups", "action", "namespace")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    groups: _containers.RepeatedScalarFieldContainer[str]
    action: str
    namespace: str
    def __init__(self, agent_id: _Optional[str] = ..., groups: _Optional[_Iterable[str]] = ..., action: _Optional[str] = ..., namespace: _Optional[str] = ...) -> None: ...

class CheckAccessResponse(_message.Message):
    __slots__ = ("allowed", "policy_ids", "policy_version", "errors")
    ALLOWED_FIELD_NUMBER: _ClassVar[int]
    POLICY_IDS_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    allowed: bool
    policy_ids: _containers.RepeatedScalarFieldContainer[str]
    policy_version: str
    errors: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, allowed: _Optional[bool] = ..., policy_ids: _Optional[_Iterable[str]] = ..., policy_version: _Optional[str] = ..., errors: _Optional[_Iterable[str]] = ...) -> None: ...

class ExplainAccessRequest(_message.Message):
    __slots__ = ("namespaces", "action")
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    namespaces: _containers.RepeatedScalarFieldContainer[str]
    action: str
    def __init__(self, namespaces: _Optional[_Iterable[str]] = ..., action: _Optional[str] = ...) -> None: ...

class ExplainAccessResponse(_message.Message):
    __slots__ = ("action", "namespaces", "capped", "allowed", "allowing_policy_ids", "forbidden", "forbidding_policy_ids", "default_denied", "policy_version")
    ACTION_FIELD_NUMBER: _ClassVar[int]
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    CAPPED_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_FIELD_NUMBER: _ClassVar[int]
    ALLOWING_POLICY_IDS_FIELD_NUMBER: _ClassVar[int]
    FORBIDDEN_FIELD_NUMBER: _ClassVar[int]
    FORBIDDING_POLICY_IDS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_DENIED_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    action: str
    namespaces: int
    capped: bool
    allowed: int
    allowing_policy_ids: _containers.RepeatedScalarFieldContainer[str]
    forbidden: int
    forbidding_policy_ids: _containers.RepeatedScalarFieldContainer[str]
    default_denied: int
    policy_version: str
    def __init__(self, action: _Optional[str] = ..., namespaces: _Optional[int] = ..., capped: _Optional[bool] = ..., allowed: _Optional[int] = ..., allowing_policy_ids: _Optional[_Iterable[str]] = ..., forbidden: _Optional[int] = ..., forbidding_policy_ids: _Optional[_Iterable[str]] = ..., default_denied: _Optional[int] = ..., policy_version: _Optional[str] = ...) -> None: ...

class GetIndexHealthRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class IndexHealthReport(_message.Message):
    __slots__ = ("index_ok", "index_reason", "index_down_seconds", "database_ok", "outbox_depth", "outbox_depth_capped", "outbox_retrying", "oldest_queued_at", "lag_seconds", "last_error", "last_error_attempts", "last_error_memory_id", "indexer_enabled", "embedding_model", "collection")
    INDEX_OK_FIELD_NUMBER: _ClassVar[int]
    INDEX_REASON_FIELD_NUMBER: _ClassVar[int]
    INDEX_DOWN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    DATABASE_OK_FIELD_NUMBER: _ClassVar[int]
    OUTBOX_DEPTH_FIELD_NUMBER: _ClassVar[int]
    OUTBOX_DEPTH_CAPPED_FIELD_NUMBER: _ClassVar[int]
    OUTBOX_RETRYING_FIELD_NUMBER: _ClassVar[int]
    OLDEST_QUEUED_AT_FIELD_NUMBER: _ClassVar[int]
    LAG_SECONDS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    INDEXER_ENABLED_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_FIELD_NUMBER: _ClassVar[int]
    COLLECTION_FIELD_NUMBER: _ClassVar[int]
    index_ok: bool
    index_reason: str
    index_down_seconds: float
    database_ok: bool
    outbox_depth: int
    outbox_depth_capped: bool
    outbox_retrying: int
    oldest_queued_at: _timestamp_pb2.Timestamp
    lag_seconds: float
    last_error: str
    last_error_attempts: int
    last_error_memory_id: str
    indexer_enabled: bool
    embedding_model: str
    collection: str
    def __init__(self, index_ok: _Optional[bool] = ..., index_reason: _Optional[str] = ..., index_down_seconds: _Optional[float] = ..., database_ok: _Optional[bool] = ..., outbox_depth: _Optional[int] = ..., outbox_depth_capped: _Optional[bool] = ..., outbox_retrying: _Optional[int] = ..., oldest_queued_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., lag_seconds: _Optional[float] = ..., last_error: _Optional[str] = ..., last_error_attempts: _Optional[int] = ..., last_error_memory_id: _Optional[str] = ..., indexer_enabled: _Optional[bool] = ..., embedding_model: _Optional[str] = ..., collection: _Optional[str] = ...) -> None: ...

class ReleaseMemoriesRequest(_message.Message):
    __slots__ = ("ids", "reason")
    IDS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    reason: str
    def __init__(self, ids: _Optional[_Iterable[str]] = ..., reason: _Optional[str] = ...) -> None: ...

class ReleaseMemoriesResponse(_message.Message):
    __slots__ = ("released_ids",)
    RELEASED_IDS_FIELD_NUMBER: _ClassVar[int]
    released_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, released_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ListNamespacesRequest(_message.Message):
    __slots__ = ("under", "page_size", "page_token", "with_usage")
    UNDER_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    WITH_USAGE_FIELD_NUMBER: _ClassVar[int]
    under: str
    page_size: int
    page_token: str
    with_usage: bool
    def __init__(self, under: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., with_usage: _Optional[bool] = ...) -> None: ...

class ListNamespacesResponse(_message.Message):
    __slots__ = ("namespaces", "next_page_token", "usage")
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    namespaces: _containers.RepeatedScalarFieldContainer[str]
    next_page_token: str
    usage: _containers.RepeatedCompositeFieldContainer[NamespaceUsage]
    def __init__(self, namespaces: _Optional[_Iterable[str]] = ..., next_page_token: _Optional[str] = ..., usage: _Optional[_Iterable[_Union[NamespaceUsage, _Mapping]]] = ...) -> None: ...

class GetPolicyInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PolicyInfo(_message.Message):
    __slots__ = ("version", "policy_ids", "files", "loaded_at")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    POLICY_IDS_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    LOADED_AT_FIELD_NUMBER: _ClassVar[int]
    version: str
    policy_ids: _containers.RepeatedScalarFieldContainer[str]
    files: _containers.RepeatedScalarFieldContainer[str]
    loaded_at: _timestamp_pb2.Timestamp
    def __init__(self, version: _Optional[str] = ..., policy_ids: _Optional[_Iterable[str]] = ..., files: _Optional[_Iterable[str]] = ..., loaded_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ReloadPoliciesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ReloadPoliciesResponse(_message.Message):
    __slots__ = ("changed", "policy")
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    changed: bool
    policy: PolicyInfo
    def __init__(self, changed: _Optional[bool] = ..., policy: _Optional[_Union[PolicyInfo, _Mapping]] = ...) -> None: ...

class RevokeTokenRequest(_message.Message):
    __slots__ = ("token_id", "reason", "expires_at")
    TOKEN_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    token_id: str
    reason: str
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, token_id: _Optional[str] = ..., reason: _Optional[str] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RevokeTokenResponse(_message.Message):
    __slots__ = ("revoked",)
    REVOKED_FIELD_NUMBER: _ClassVar[int]
    revoked: bool
    def __init__(self, revoked: _Optional[bool] = ...) -> None: ...

class TokenRecord(_message.Message):
    __slots__ = ("token_id", "agent_id", "groups", "expires_at", "recorded_at", "issued_at", "issued_by", "note", "first_used_at", "last_used_at", "revoked_at")
    TOKEN_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    RECORDED_AT_FIELD_NUMBER: _ClassVar[int]
    ISSUED_AT_FIELD_NUMBER: _ClassVar[int]
    ISSUED_BY_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    FIRST_USED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_USED_AT_FIELD_NUMBER: _ClassVar[int]
    REVOKED_AT_FIELD_NUMBER: _ClassVar[int]
    token_id: str
    agent_id: str
    groups: _containers.RepeatedScalarFieldContainer[str]
    expires_at: _timestamp_pb2.Timestamp
    recorded_at: _timestamp_pb2.Timestamp
    issued_at: _timestamp_pb2.Timestamp
    issued_by: str
    note: str
    first_used_at: _timestamp_pb2.Timestamp
    last_used_at: _timestamp_pb2.Timestamp
    revoked_at: _timestamp_pb2.Timestamp
    def __init__(self, token_id: _Optional[str] = ..., agent_id: _Optional[str] = ..., groups: _Optional[_Iterable[str]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., recorded_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., issued_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., issued_by: _Optional[str] = ..., note: _Optional[str] = ..., first_used_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_used_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., revoked_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ListTokensRequest(_message.Message):
    __slots__ = ("agent_id", "include_expired", "page_size", "page_token")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_EXPIRED_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    include_expired: bool
    page_size: int
    page_token: str
    def __init__(self, agent_id: _Optional[str] = ..., include_expired: _Optional[bool] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListTokensResponse(_message.Message):
    __slots__ = ("tokens", "next_page_token")
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    tokens: _containers.RepeatedCompositeFieldContainer[TokenRecord]
    next_page_token: str
    def __init__(self, tokens: _Optional[_Iterable[_Union[TokenRecord, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class IssueTokenRequest(_message.Message):
    __slots__ = ("agent_id", "groups", "ttl_seconds", "trust", "note")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    TRUST_FIELD_NUMBER: _ClassVar[int]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    groups: _containers.RepeatedScalarFieldContainer[str]
    ttl_seconds: int
    trust: str
    note: str
    def __init__(self, agent_id: _Optional[str] = ..., groups: _Optional[_Iterable[str]] = ..., ttl_seconds: _Optional[int] = ..., trust: _Optional[str] = ..., note: _Optional[str] = ...) -> None: ...

class IssueTokenResponse(_message.Message):
    __slots__ = ("token", "record")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    RECORD_FIELD_NUMBER: _ClassVar[int]
    token: str
    record: TokenRecord
    def __init__(self, token: _Optional[str] = ..., record: _Optional[_Union[TokenRecord, _Mapping]] = ...) -> None: ...

class AuditEntry(_message.Message):
    __slots__ = ("id", "at", "agent_id", "groups", "action", "namespace", "decision", "policy_ids", "policy_version", "rpc", "request_id", "trace_id", "detail", "hub_request_id", "trace_id_from_caller")
    class DetailEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    POLICY_IDS_FIELD_NUMBER: _ClassVar[int]
    POLICY_VERSION_FIELD_NUMBER: _ClassVar[int]
    RPC_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    HUB_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FROM_CALLER_FIELD_NUMBER: _ClassVar[int]
    id: int
    at: _timestamp_pb2.Timestamp
    agent_id: str
    groups: _containers.RepeatedScalarFieldContainer[str]
    action: str
    namespace: str
    decision: Decision
    policy_ids: _containers.RepeatedScalarFieldContainer[str]
    policy_version: str
    rpc: str
    request_id: str
    trace_id: str
    detail: _containers.ScalarMap[str, str]
    hub_request_id: str
    trace_id_from_caller: bool
    def __init__(self, id: _Optional[int] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., agent_id: _Optional[str] = ..., groups: _Optional[_Iterable[str]] = ..., action: _Optional[str] = ..., namespace: _Optional[str] = ..., decision: _Optional[_Union[Decision, str]] = ..., policy_ids: _Optional[_Iterable[str]] = ..., policy_version: _Optional[str] = ..., rpc: _Optional[str] = ..., request_id: _Optional[str] = ..., trace_id: _Optional[str] = ..., detail: _Optional[_Mapping[str, str]] = ..., hub_request_id: _Optional[str] = ..., trace_id_from_caller: _Optional[bool] = ...) -> None: ...

class QueryAuditLogRequest(_message.Message):
    __slots__ = ("agent_id", "action", "namespace", "decision", "since", "until", "page_size", "page_token", "policy_id", "hub_request_id")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    POLICY_ID_FIELD_NUMBER: _ClassVar[int]
    HUB_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    action: str
    namespace: str
    decision: Decision
    since: _timestamp_pb2.Timestamp
    until: _timestamp_pb2.Timestamp
    page_size: int
    page_token: str
    policy_id: str
    hub_request_id: str
    def __init__(self, agent_id: _Optional[str] = ..., action: _Optional[str] = ..., namespace: _Optional[str] = ..., decision: _Optional[_Union[Decision, str]] = ..., since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., policy_id: _Optional[str] = ..., hub_request_id: _Optional[str] = ...) -> None: ...

class QueryAuditLogResponse(_message.Message):
    __slots__ = ("entries", "next_page_token")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[AuditEntry]
    next_page_token: str
    def __init__(self, entries: _Optional[_Iterable[_Union[AuditEntry, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetLimitsRequest(_message.Message):
    __slots__ = ("namespace",)
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    def __init__(self, namespace: _Optional[str] = ...) -> None: ...

class CallLimit(_message.Message):
    __slots__ = ("concurrent", "rate", "burst")
    CONCURRENT_FIELD_NUMBER: _ClassVar[int]
    RATE_FIELD_NUMBER: _ClassVar[int]
    BURST_FIELD_NUMBER: _ClassVar[int]
    concurrent: int
    rate: float
    burst: int
    def __init__(self, concurrent: _Optional[int] = ..., rate: _Optional[float] = ..., burst: _Optional[int] = ...) -> None: ...

class LimitUsage(_message.Message):
    __slots__ = ("kind", "name", "running", "waiting", "streams", "refused")
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    STREAMS_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    kind: str
    name: str
    running: int
    waiting: int
    streams: int
    refused: int
    def __init__(self, kind: _Optional[str] = ..., name: _Optional[str] = ..., running: _Optional[int] = ..., waiting: _Optional[int] = ..., streams: _Optional[int] = ..., refused: _Optional[int] = ...) -> None: ...

class NamespaceUsage(_message.Message):
    __slots__ = ("namespace", "memories", "bytes", "created_by", "exists")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    memories: int
    bytes: int
    created_by: str
    exists: bool
    def __init__(self, namespace: _Optional[str] = ..., memories: _Optional[int] = ..., bytes: _Optional[int] = ..., created_by: _Optional[str] = ..., exists: _Optional[bool] = ...) -> None: ...

class LimitsReport(_message.Message):
    __slots__ = ("agent", "agents", "groups", "queue", "queue_timeout_seconds", "streams_per_agent", "stream_idle_timeout_seconds", "namespaces_per_agent", "namespace_max_memories", "namespace_max_bytes", "refusals", "usage", "namespace")
    class AgentsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: CallLimit
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[CallLimit, _Mapping]] = ...) -> None: ...
    class GroupsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: CallLimit
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[CallLimit, _Mapping]] = ...) -> None: ...
    class RefusalsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    AGENT_FIELD_NUMBER: _ClassVar[int]
    AGENTS_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    STREAMS_PER_AGENT_FIELD_NUMBER: _ClassVar[int]
    STREAM_IDLE_TIMEOUT_SECONDS_FIELD_NUMBER: _ClassVar[int]
    NAMESPACES_PER_AGENT_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_MAX_MEMORIES_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    REFUSALS_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    agent: CallLimit
    agents: _containers.MessageMap[str, CallLimit]
    groups: _containers.MessageMap[str, CallLimit]
    queue: int
    queue_timeout_seconds: float
    streams_per_agent: int
    stream_idle_timeout_seconds: float
    namespaces_per_agent: int
    namespace_max_memories: int
    namespace_max_bytes: int
    refusals: _containers.ScalarMap[str, int]
    usage: _containers.RepeatedCompositeFieldContainer[LimitUsage]
    namespace: NamespaceUsage
    def __init__(self, agent: _Optional[_Union[CallLimit, _Mapping]] = ..., agents: _Optional[_Mapping[str, CallLimit]] = ..., groups: _Optional[_Mapping[str, CallLimit]] = ..., queue: _Optional[int] = ..., queue_timeout_seconds: _Optional[float] = ..., streams_per_agent: _Optional[int] = ..., stream_idle_timeout_seconds: _Optional[float] = ..., namespaces_per_agent: _Optional[int] = ..., namespace_max_memories: _Optional[int] = ..., namespace_max_bytes: _Optional[int] = ..., refusals: _Optional[_Mapping[str, int]] = ..., usage: _Optional[_Iterable[_Union[LimitUsage, _Mapping]]] = ..., namespace: _Optional[_Union[NamespaceUsage, _Mapping]] = ...) -> None: ...
