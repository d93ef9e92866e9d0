import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MemoryKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MEMORY_KIND_UNSPECIFIED: _ClassVar[MemoryKind]
    MEMORY_KIND_EPISODIC: _ClassVar[MemoryKind]
    MEMORY_KIND_SEMANTIC: _ClassVar[MemoryKind]
    MEMORY_KIND_PROCEDURAL: _ClassVar[MemoryKind]

class MemoryType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MEMORY_TYPE_UNSPECIFIED: _ClassVar[MemoryType]
    MEMORY_TYPE_EVENT: _ClassVar[MemoryType]
    MEMORY_TYPE_FACT: _ClassVar[MemoryType]
    MEMORY_TYPE_PREFERENCE: _ClassVar[MemoryType]
    MEMORY_TYPE_CORRECTION: _ClassVar[MemoryType]
    MEMORY_TYPE_RULE: _ClassVar[MemoryType]
    MEMORY_TYPE_LESSON: _ClassVar[MemoryType]
    MEMORY_TYPE_OUTCOME: _ClassVar[MemoryType]
    MEMORY_TYPE_NOTE: _ClassVar[MemoryType]

class MemoryStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MEMORY_STATUS_UNSPECIFIED: _ClassVar[MemoryStatus]
    MEMORY_STATUS_ACTIVE: _ClassVar[MemoryStatus]
    MEMORY_STATUS_SUPERSEDED: _ClassVar[MemoryStatus]
    MEMORY_STATUS_FORGOTTEN: _ClassVar[MemoryStatus]
    MEMORY_STATUS_EXPIRED: _ClassVar[MemoryStatus]
    MEMORY_STATUS_QUARANTINED: _ClassVar[MemoryStatus]
    MEMORY_STATUS_ARCHIVED: _ClassVar[MemoryStatus]

class TrustLevel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRUST_LEVEL_UNSPECIFIED: _ClassVar[TrustLevel]
    TRUST_LEVEL_VERIFIED: _ClassVar[TrustLevel]
    TRUST_LEVEL_AGENT: _ClassVar[TrustLevel]
    TRUST_LEVEL_EXTERNAL: _ClassVar[TrustLevel]

class MemoryFlag(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MEMORY_FLAG_UNSPECIFIED: _ClassVar[MemoryFlag]
    MEMORY_FLAG_INSTRUCTION_LIKE: _ClassVar[MemoryFlag]

class RetrievalChannel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RETRIEVAL_CHANNEL_UNSPECIFIED: _ClassVar[RetrievalChannel]
    RETRIEVAL_CHANNEL_DENSE: _ClassVar[RetrievalChannel]
    RETRIEVAL_CHANNEL_KEYWORD: _ClassVar[RetrievalChannel]
    RETRIEVAL_CHANNEL_ENTITY: _ClassVar[RetrievalChannel]
    RETRIEVAL_CHANNEL_TIME: _ClassVar[RetrievalChannel]
    RETRIEVAL_CHANNEL_EXPANSION: _ClassVar[RetrievalChannel]
    RETRIEVAL_CHANNEL_GRAPH: _ClassVar[RetrievalChannel]
    RETRIEVAL_CHANNEL_PREFERENCE: _ClassVar[RetrievalChannel]
    RETRIEVAL_CHANNEL_MULTILINGUAL: _ClassVar[RetrievalChannel]

class RankingStage(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RANKING_STAGE_UNSPECIFIED: _ClassVar[RankingStage]
    RANKING_STAGE_FUSION: _ClassVar[RankingStage]
    RANKING_STAGE_PRIORS: _ClassVar[RankingStage]
    RANKING_STAGE_RERANK: _ClassVar[RankingStage]
    RANKING_STAGE_SPEAKER: _ClassVar[RankingStage]

class LineageRelation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LINEAGE_RELATION_UNSPECIFIED: _ClassVar[LineageRelation]
    LINEAGE_RELATION_SUPERSEDES: _ClassVar[LineageRelation]
    LINEAGE_RELATION_DERIVED_FROM: _ClassVar[LineageRelation]

class ConsolidationGrouping(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONSOLIDATION_GROUPING_UNSPECIFIED: _ClassVar[ConsolidationGrouping]
    CONSOLIDATION_GROUPING_SESSION: _ClassVar[ConsolidationGrouping]
    CONSOLIDATION_GROUPING_TAG: _ClassVar[ConsolidationGrouping]
    CONSOLIDATION_GROUPING_ENTITY: _ClassVar[ConsolidationGrouping]
    CONSOLIDATION_GROUPING_EMBEDDING: _ClassVar[ConsolidationGrouping]

class Summariser(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SUMMARISER_UNSPECIFIED: _ClassVar[Summariser]
    SUMMARISER_EXTRACTIVE: _ClassVar[Summariser]
    SUMMARISER_LLM: _ClassVar[Summariser]
MEMORY_KIND_UNSPECIFIED: MemoryKind
MEMORY_KIND_EPISODIC: MemoryKind
MEMORY_KIND_SEMANTIC: MemoryKind
MEMORY_KIND_PROCEDURAL: MemoryKind
MEMORY_TYPE_UNSPECIFIED: MemoryType
MEMORY_TYPE_EVENT: MemoryType
MEMORY_TYPE_FACT: MemoryType
MEMORY_TYPE_PREFERENCE: MemoryType
MEMORY_TYPE_CORRECTION: MemoryType
MEMORY_TYPE_RULE: MemoryType
MEMORY_TYPE_LESSON: MemoryType
MEMORY_TYPE_OUTCOME: MemoryType
MEMORY_TYPE_NOTE: MemoryType
MEMORY_STATUS_UNSPECIFIED: MemoryStatus
MEMORY_STATUS_ACTIVE: MemoryStatus
MEMORY_STATUS_SUPERSEDED: MemoryStatus
MEMORY_STATUS_FORGOTTEN: MemoryStatus
MEMORY_STATUS_EXPIRED: MemoryStatus
MEMORY_STATUS_QUARANTINED: MemoryStatus
MEMORY_STATUS_ARCHIVED: MemoryStatus
TRUST_LEVEL_UNSPECIFIED: TrustLevel
TRUST_LEVEL_VERIFIED: TrustLevel
TRUST_LEVEL_AGENT: TrustLevel
TRUST_LEVEL_EXTERNAL: TrustLevel
MEMORY_FLAG_UNSPECIFIED: MemoryFlag
MEMORY_FLAG_INSTRUCTION_LIKE: MemoryFlag
RETRIEVAL_CHANNEL_UNSPECIFIED: RetrievalChannel
RETRIEVAL_CHANNEL_DENSE: RetrievalChannel
RETRIEVAL_CHANNEL_KEYWORD: RetrievalChannel
RETRIEVAL_CHANNEL_ENTITY: RetrievalChannel
RETRIEVAL_CHANNEL_TIME: RetrievalChannel
RETRIEVAL_CHANNEL_EXPANSION: RetrievalChannel
RETRIEVAL_CHANNEL_GRAPH: RetrievalChannel
RETRIEVAL_CHANNEL_PREFERENCE: RetrievalChannel
RETRIEVAL_CHANNEL_MULTILINGUAL: RetrievalChannel
RANKING_STAGE_UNSPECIFIED: RankingStage
RANKING_STAGE_FUSION: RankingStage
RANKING_STAGE_PRIORS: RankingStage
RANKING_STAGE_RERANK: RankingStage
RANKING_STAGE_SPEAKER: RankingStage
LINEAGE_RELATION_UNSPECIFIED: LineageRelation
LINEAGE_RELATION_SUPERSEDES: LineageRelation
LINEAGE_RELATION_DERIVED_FROM: LineageRelation
CONSOLIDATION_GROUPING_UNSPECIFIED: ConsolidationGrouping
CONSOLIDATION_GROUPING_SESSION: ConsolidationGrouping
CONSOLIDATION_GROUPING_TAG: ConsolidationGrouping
CONSOLIDATION_GROUPING_ENTITY: ConsolidationGrouping
CONSOLIDATION_GROUPING_EMBEDDING: ConsolidationGrouping
SUMMARISER_UNSPECIFIED: Summariser
SUMMARISER_EXTRACTIVE: Summariser
SUMMARISER_LLM: Summariser

class TimeRange(_message.Message):
    __slots__ = ("start", "end")
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    start: _timestamp_pb2.Timestamp
    end: _timestamp_pb2.Timestamp
    def __init__(self, start: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Source(_message.Message):
    __slots__ = ("agent_id", "session_id", "trace_id", "hub_request_id", "trace_id_from_caller")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    HUB_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FROM_CALLER_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    session_id: str
    trace_id: str
    hub_request_id: str
    trace_id_from_caller: bool
    def __init__(self, agent_id: _Optional[str] = ..., session_id: _Optional[str] = ..., trace_id: _Optional[str] = ..., hub_request_id: _Optional[str] = ..., trace_id_from_caller: _Optional[bool] = ...) -> None: ...

class MemoryLinks(_message.Message):
    __slots__ = ("supersedes", "derived_from", "superseded_by", "truncated", "hidden_sources")
    SUPERSEDES_FIELD_NUMBER: _ClassVar[int]
    DERIVED_FROM_FIELD_NUMBER: _ClassVar[int]
    SUPERSEDED_BY_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_SOURCES_FIELD_NUMBER: _ClassVar[int]
    supersedes: _containers.RepeatedScalarFieldContainer[str]
    derived_from: _containers.RepeatedScalarFieldContainer[str]
    superseded_by: str
    truncated: bool
    hidden_sources: int
    def __init__(self, supersedes: _Optional[_Iterable[str]] = ..., derived_from: _Optional[_Iterable[str]] = ..., superseded_by: _Optional[str] = ..., truncated: _Optional[bool] = ..., hidden_sources: _Optional[int] = ...) -> None: ...

class RecallStats(_message.Message):
    __slots__ = ("recall_count", "last_recalled_at", "use_count", "not_useful_count", "last_used_at")
    RECALL_COUNT_FIELD_NUMBER: _ClassVar[int]
    LAST_RECALLED_AT_FIELD_NUMBER: _ClassVar[int]
    USE_COUNT_FIELD_NUMBER: _ClassVar[int]
    NOT_USEFUL_COUNT_FIELD_NUMBER: _ClassVar[int]
    LAST_USED_AT_FIELD_NUMBER: _ClassVar[int]
    recall_count: int
    last_recalled_at: _timestamp_pb2.Timestamp
    use_count: int
    not_useful_count: int
    last_used_at: _timestamp_pb2.Timestamp
    def __init__(self, recall_count: _Optional[int] = ..., last_recalled_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., use_count: _Optional[int] = ..., not_useful_count: _Optional[int] = ..., last_used_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Tombstone(_message.Message):
    __slots__ = ("forgotten_at", "forgotten_by", "reason")
    FORGOTTEN_AT_FIELD_NUMBER: _ClassVar[int]
    FORGOTTEN_BY_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    forgotten_at: _timestamp_pb2.Timestamp
    forgotten_by: str
    reason: str
    def __init__(self, forgotten_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., forgotten_by: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class Memory(_message.Message):
    __slots__ = ("id", "namespace", "kind", "type", "content", "tags", "entities", "importance", "confidence", "occurred_at", "created_at", "valid_from", "valid_to", "expires_at", "source", "content_hash", "status", "links", "subject_key", "recall", "embedding_model", "tombstone", "updated_at", "trust", "flags", "seen_count", "version")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    OCCURRED_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    VALID_FROM_FIELD_NUMBER: _ClassVar[int]
    VALID_TO_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_HASH_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_KEY_FIELD_NUMBER: _ClassVar[int]
    RECALL_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_MODEL_FIELD_NUMBER: _ClassVar[int]
    TOMBSTONE_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    TRUST_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    SEEN_COUNT_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    id: str
    namespace: str
    kind: MemoryKind
    type: MemoryType
    content: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    entities: _containers.RepeatedScalarFieldContainer[str]
    importance: int
    confidence: float
    occurred_at: _timestamp_pb2.Timestamp
    created_at: _timestamp_pb2.Timestamp
    valid_from: _timestamp_pb2.Timestamp
    valid_to: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    source: Source
    content_hash: str
    status: MemoryStatus
    links: MemoryLinks
    subject_key: str
    recall: RecallStats
    embedding_model: str
    tombstone: Tombstone
    updated_at: _timestamp_pb2.Timestamp
    trust: TrustLevel
    flags: _containers.RepeatedScalarFieldContainer[MemoryFlag]
    seen_count: int
    version: int
    def __init__(self, id: _Optional[str] = ..., namespace: _Optional[str] = ..., kind: _Optional[_Union[MemoryKind, str]] = ..., type: _Optional[_Union[MemoryType, str]] = ..., content: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., entities: _Optional[_Iterable[str]] = ..., importance: _Optional[int] = ..., confidence: _Optional[float] = ..., occurred_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., valid_from: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., valid_to: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., source: _Optional[_Union[Source, _Mapping]] = ..., content_hash: _Optional[str] = ..., status: _Optional[_Union[MemoryStatus, str]] = ..., links: _Optional[_Union[MemoryLinks, _Mapping]] = ..., subject_key: _Optional[str] = ..., recall: _Optional[_Union[RecallStats, _Mapping]] = ..., embedding_model: _Optional[str] = ..., tombstone: _Optional[_Union[Tombstone, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., trust: _Optional[_Union[TrustLevel, str]] = ..., flags: _Optional[_Iterable[_Union[MemoryFlag, str]]] = ..., seen_count: _Optional[int] = ..., version: _Optional[int] = ...) -> None: ...

class MemoryInput(_message.Message):
    __slots__ = ("namespace", "kind", "type", "content", "tags", "entities", "importance", "confidence", "occurred_at", "valid_from", "valid_to", "expires_at", "ttl", "subject_key", "derived_from", "expected_version")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    ENTITIES_FIELD_NUMBER: _ClassVar[int]
    IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    CONFIDENCE_FIELD_NUMBER: _ClassVar[int]
    OCCURRED_AT_FIELD_NUMBER: _ClassVar[int]
    VALID_FROM_FIELD_NUMBER: _ClassVar[int]
    VALID_TO_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    TTL_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_KEY_FIELD_NUMBER: _ClassVar[int]
    DERIVED_FROM_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    kind: MemoryKind
    type: MemoryType
    content: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    entities: _containers.RepeatedScalarFieldContainer[str]
    importance: int
    confidence: float
    occurred_at: _timestamp_pb2.Timestamp
    valid_from: _timestamp_pb2.Timestamp
    valid_to: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    ttl: _duration_pb2.Duration
    subject_key: str
    derived_from: _containers.RepeatedScalarFieldContainer[str]
    expected_version: int
    def __init__(self, namespace: _Optional[str] = ..., kind: _Optional[_Union[MemoryKind, str]] = ..., type: _Optional[_Union[MemoryType, str]] = ..., content: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., entities: _Optional[_Iterable[str]] = ..., importance: _Optional[int] = ..., confidence: _Optional[float] = ..., occurred_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., valid_from: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., valid_to: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., ttl: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., subject_key: _Optional[str] = ..., derived_from: _Optional[_Iterable[str]] = ..., expected_version: _Optional[int] = ...) -> None: ...

class WriteMemoriesRequest(_message.Message):
    __slots__ = ("memories", "request_id", "session_id", "wait_indexed", "force")
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    WAIT_INDEXED_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    memories: _containers.RepeatedCompositeFieldContainer[MemoryInput]
    request_id: str
    session_id: str
    wait_indexed: bool
    force: bool
    def __init__(self, memories: _Optional[_Iterable[_Union[MemoryInput, _Mapping]]] = ..., request_id: _Optional[str] = ..., session_id: _Optional[str] = ..., wait_indexed: _Optional[bool] = ..., force: _Optional[bool] = ...) -> None: ...

class WriteResult(_message.Message):
    __slots__ = ("memory", "deduplicated", "near", "filtered", "filter_rule", "redacted", "extracted", "extraction_failed", "replaced")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    DEDUPLICATED_FIELD_NUMBER: _ClassVar[int]
    NEAR_FIELD_NUMBER: _ClassVar[int]
    FILTERED_FIELD_NUMBER: _ClassVar[int]
    FILTER_RULE_FIELD_NUMBER: _ClassVar[int]
    REDACTED_FIELD_NUMBER: _ClassVar[int]
    EXTRACTED_FIELD_NUMBER: _ClassVar[int]
    EXTRACTION_FAILED_FIELD_NUMBER: _ClassVar[int]
    REPLACED_FIELD_NUMBER: _ClassVar[int]
    memory: Memory
    deduplicated: bool
    near: bool
    filtered: bool
    filter_rule: str
    redacted: _containers.RepeatedScalarFieldContainer[str]
    extracted: _containers.RepeatedCompositeFieldContainer[WriteResult]
    extraction_failed: bool
    replaced: ReplacedMemory
    def __init__(self, memory: _Optional[_Union[Memory, _Mapping]] = ..., deduplicated: _Optional[bool] = ..., near: _Optional[bool] = ..., filtered: _Optional[bool] = ..., filter_rule: _Optional[str] = ..., redacted: _Optional[_Iterable[str]] = ..., extracted: _Optional[_Iterable[_Union[WriteResult, _Mapping]]] = ..., extraction_failed: _Optional[bool] = ..., replaced: _Optional[_Union[ReplacedMemory, _Mapping]] = ...) -> None: ...

class ReplacedMemory(_message.Message):
    __slots__ = ("id", "version")
    ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    id: str
    version: int
    def __init__(self, id: _Optional[str] = ..., version: _Optional[int] = ...) -> None: ...

class WriteMemoriesResponse(_message.Message):
    __slots__ = ("results", "indexed", "replayed")
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    INDEXED_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[WriteResult]
    indexed: bool
    replayed: bool
    def __init__(self, results: _Optional[_Iterable[_Union[WriteResult, _Mapping]]] = ..., indexed: _Optional[bool] = ..., replayed: _Optional[bool] = ...) -> None: ...

class SearchMemoriesRequest(_message.Message):
    __slots__ = ("query", "namespaces", "kinds", "types", "tags", "occurred", "top_k", "channels", "explain", "max_tokens", "context_window", "min_relevance", "ranking", "as_of", "flags", "exclude_flagged")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    OCCURRED_FIELD_NUMBER: _ClassVar[int]
    TOP_K_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    EXPLAIN_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_WINDOW_FIELD_NUMBER: _ClassVar[int]
    MIN_RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    RANKING_FIELD_NUMBER: _ClassVar[int]
    AS_OF_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_FLAGGED_FIELD_NUMBER: _ClassVar[int]
    query: str
    namespaces: _containers.RepeatedScalarFieldContainer[str]
    kinds: _containers.RepeatedScalarFieldContainer[MemoryKind]
    types: _containers.RepeatedScalarFieldContainer[MemoryType]
    tags: _containers.RepeatedScalarFieldContainer[str]
    occurred: TimeRange
    top_k: int
    channels: _containers.RepeatedScalarFieldContainer[RetrievalChannel]
    explain: bool
    max_tokens: int
    context_window: int
    min_relevance: float
    ranking: RankingOptions
    as_of: _timestamp_pb2.Timestamp
    flags: _containers.RepeatedScalarFieldContainer[MemoryFlag]
    exclude_flagged: bool
    def __init__(self, query: _Optional[str] = ..., namespaces: _Optional[_Iterable[str]] = ..., kinds: _Optional[_Iterable[_Union[MemoryKind, str]]] = ..., types: _Optional[_Iterable[_Union[MemoryType, str]]] = ..., tags: _Optional[_Iterable[str]] = ..., occurred: _Optional[_Union[TimeRange, _Mapping]] = ..., top_k: _Optional[int] = ..., channels: _Optional[_Iterable[_Union[RetrievalChannel, str]]] = ..., explain: _Optional[bool] = ..., max_tokens: _Optional[int] = ..., context_window: _Optional[int] = ..., min_relevance: _Optional[float] = ..., ranking: _Optional[_Union[RankingOptions, _Mapping]] = ..., as_of: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., flags: _Optional[_Iterable[_Union[MemoryFlag, str]]] = ..., exclude_flagged: _Optional[bool] = ...) -> None: ...

class RankingOptions(_message.Message):
    __slots__ = ("neighbour_smoothing", "rerank", "expansion", "priors")
    NEIGHBOUR_SMOOTHING_FIELD_NUMBER: _ClassVar[int]
    RERANK_FIELD_NUMBER: _ClassVar[int]
    EXPANSION_FIELD_NUMBER: _ClassVar[int]
    PRIORS_FIELD_NUMBER: _ClassVar[int]
    neighbour_smoothing: bool
    rerank: bool
    expansion: bool
    priors: bool
    def __init__(self, neighbour_smoothing: _Optional[bool] = ..., rerank: _Optional[bool] = ..., expansion: _Optional[bool] = ..., priors: _Optional[bool] = ...) -> None: ...

class ChannelRank(_message.Message):
    __slots__ = ("channel", "rank", "score", "contribution")
    CHANNEL_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    CONTRIBUTION_FIELD_NUMBER: _ClassVar[int]
    channel: RetrievalChannel
    rank: int
    score: float
    contribution: float
    def __init__(self, channel: _Optional[_Union[RetrievalChannel, str]] = ..., rank: _Optional[int] = ..., score: _Optional[float] = ..., contribution: _Optional[float] = ...) -> None: ...

class SearchHit(_message.Message):
    __slots__ = ("memory", "score", "channel_ranks", "relevance", "before", "after", "priors", "placement")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_RANKS_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    PRIORS_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    memory: Memory
    score: float
    channel_ranks: _containers.RepeatedCompositeFieldContainer[ChannelRank]
    relevance: float
    before: _containers.RepeatedCompositeFieldContainer[Memory]
    after: _containers.RepeatedCompositeFieldContainer[Memory]
    priors: Priors
    placement: Placement
    def __init__(self, memory: _Optional[_Union[Memory, _Mapping]] = ..., score: _Optional[float] = ..., channel_ranks: _Optional[_Iterable[_Union[ChannelRank, _Mapping]]] = ..., relevance: _Optional[float] = ..., before: _Optional[_Iterable[_Union[Memory, _Mapping]]] = ..., after: _Optional[_Iterable[_Union[Memory, _Mapping]]] = ..., priors: _Optional[_Union[Priors, _Mapping]] = ..., placement: _Optional[_Union[Placement, _Mapping]] = ...) -> None: ...

class Placement(_message.Message):
    __slots__ = ("ordered_by", "fused_rank", "fused_score", "prior_rank", "rerank_rank", "rerank_score")
    ORDERED_BY_FIELD_NUMBER: _ClassVar[int]
    FUSED_RANK_FIELD_NUMBER: _ClassVar[int]
    FUSED_SCORE_FIELD_NUMBER: _ClassVar[int]
    PRIOR_RANK_FIELD_NUMBER: _ClassVar[int]
    RERANK_RANK_FIELD_NUMBER: _ClassVar[int]
    RERANK_SCORE_FIELD_NUMBER: _ClassVar[int]
    ordered_by: RankingStage
    fused_rank: int
    fused_score: float
    prior_rank: int
    rerank_rank: int
    rerank_score: float
    def __init__(self, ordered_by: _Optional[_Union[RankingStage, str]] = ..., fused_rank: _Optional[int] = ..., fused_score: _Optional[float] = ..., prior_rank: _Optional[int] = ..., rerank_rank: _Optional[int] = ..., rerank_score: _Optional[float] = ...) -> None: ...

class Priors(_message.Message):
    __slots__ = ("importance", "recency", "use", "type")
    IMPORTANCE_FIELD_NUMBER: _ClassVar[int]
    RECENCY_FIELD_NUMBER: _ClassVar[int]
    USE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    importance: float
    recency: float
    use: float
    type: float
    def __init__(self, importance: _Optional[float] = ..., recency: _Optional[float] = ..., use: _Optional[float] = ..., type: _Optional[float] = ...) -> None: ...

class SearchMemoriesResponse(_message.Message):
    __slots__ = ("hits", "degraded", "degraded_reason", "truncated", "search_id")
    HITS_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_REASON_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ID_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[SearchHit]
    degraded: bool
    degraded_reason: str
    truncated: bool
    search_id: str
    def __init__(self, hits: _Optional[_Iterable[_Union[SearchHit, _Mapping]]] = ..., degraded: _Optional[bool] = ..., degraded_reason: _Optional[str] = ..., truncated: _Optional[bool] = ..., search_id: _Optional[str] = ...) -> None: ...

class GetMemoryRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class ListMemoriesRequest(_message.Message):
    __slots__ = ("namespaces", "kinds", "types", "tags", "statuses", "created", "page_size", "page_token", "subject_key", "flags", "exclude_flagged")
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    STATUSES_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_KEY_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_FLAGGED_FIELD_NUMBER: _ClassVar[int]
    namespaces: _containers.RepeatedScalarFieldContainer[str]
    kinds: _containers.RepeatedScalarFieldContainer[MemoryKind]
    types: _containers.RepeatedScalarFieldContainer[MemoryType]
    tags: _containers.RepeatedScalarFieldContainer[str]
    statuses: _containers.RepeatedScalarFieldContainer[MemoryStatus]
    created: TimeRange
    page_size: int
    page_token: str
    subject_key: str
    flags: _containers.RepeatedScalarFieldContainer[MemoryFlag]
    exclude_flagged: bool
    def __init__(self, namespaces: _Optional[_Iterable[str]] = ..., kinds: _Optional[_Iterable[_Union[MemoryKind, str]]] = ..., types: _Optional[_Iterable[_Union[MemoryType, str]]] = ..., tags: _Optional[_Iterable[str]] = ..., statuses: _Optional[_Iterable[_Union[MemoryStatus, str]]] = ..., created: _Optional[_Union[TimeRange, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., subject_key: _Optional[str] = ..., flags: _Optional[_Iterable[_Union[MemoryFlag, str]]] = ..., exclude_flagged: _Optional[bool] = ...) -> None: ...

class ListMemoriesResponse(_message.Message):
    __slots__ = ("memories", "next_page_token")
    MEMORIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    memories: _containers.RepeatedCompositeFieldContainer[Memory]
    next_page_token: str
    def __init__(self, memories: _Optional[_Iterable[_Union[Memory, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ForgetFilter(_message.Message):
    __slots__ = ("namespace", "kinds", "types", "tags", "occurred", "subject_key")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    OCCURRED_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_KEY_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    kinds: _containers.RepeatedScalarFieldContainer[MemoryKind]
    types: _containers.RepeatedScalarFieldContainer[MemoryType]
    tags: _containers.RepeatedScalarFieldContainer[str]
    occurred: TimeRange
    subject_key: str
    def __init__(self, namespace: _Optional[str] = ..., kinds: _Optional[_Iterable[_Union[MemoryKind, str]]] = ..., types: _Optional[_Iterable[_Union[MemoryType, str]]] = ..., tags: _Optional[_Iterable[str]] = ..., occurred: _Optional[_Union[TimeRange, _Mapping]] = ..., subject_key: _Optional[str] = ...) -> None: ...

class ForgetMemoriesRequest(_message.Message):
    __slots__ = ("ids", "filter", "reason", "request_id", "expected_versions")
    class ExpectedVersionsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    IDS_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    filter: ForgetFilter
    reason: str
    request_id: str
    expected_versions: _containers.ScalarMap[str, int]
    def __init__(self, ids: _Optional[_Iterable[str]] = ..., filter: _Optional[_Union[ForgetFilter, _Mapping]] = ..., reason: _Optional[str] = ..., request_id: _Optional[str] = ..., expected_versions: _Optional[_Mapping[str, int]] = ...) -> None: ...

class ForgetMemoriesResponse(_message.Message):
    __slots__ = ("forgotten_ids", "replayed", "versions")
    FORGOTTEN_IDS_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    forgotten_ids: _containers.RepeatedScalarFieldContainer[str]
    replayed: bool
    versions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, forgotten_ids: _Optional[_Iterable[str]] = ..., replayed: _Optional[bool] = ..., versions: _Optional[_Iterable[int]] = ...) -> None: ...

class AssembleContextRequest(_message.Message):
    __slots__ = ("search", "token_budget", "per_group", "include_flagged")
    SEARCH_FIELD_NUMBER: _ClassVar[int]
    TOKEN_BUDGET_FIELD_NUMBER: _ClassVar[int]
    PER_GROUP_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_FLAGGED_FIELD_NUMBER: _ClassVar[int]
    search: SearchMemoriesRequest
    token_budget: int
    per_group: int
    include_flagged: bool
    def __init__(self, search: _Optional[_Union[SearchMemoriesRequest, _Mapping]] = ..., token_budget: _Optional[int] = ..., per_group: _Optional[int] = ..., include_flagged: _Optional[bool] = ...) -> None: ...

class AssembleContextResponse(_message.Message):
    __slots__ = ("text", "memory_ids", "tokens", "tokenizer", "collapsed", "omitted", "language", "degraded", "degraded_reason", "search_id")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    MEMORY_IDS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOKENIZER_FIELD_NUMBER: _ClassVar[int]
    COLLAPSED_FIELD_NUMBER: _ClassVar[int]
    OMITTED_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_FIELD_NUMBER: _ClassVar[int]
    DEGRADED_REASON_FIELD_NUMBER: _ClassVar[int]
    SEARCH_ID_FIELD_NUMBER: _ClassVar[int]
    text: str
    memory_ids: _containers.RepeatedScalarFieldContainer[str]
    tokens: int
    tokenizer: str
    collapsed: int
    omitted: int
    language: str
    degraded: bool
    degraded_reason: str
    search_id: str
    def __init__(self, text: _Optional[str] = ..., memory_ids: _Optional[_Iterable[str]] = ..., tokens: _Optional[int] = ..., tokenizer: _Optional[str] = ..., collapsed: _Optional[int] = ..., omitted: _Optional[int] = ..., language: _Optional[str] = ..., degraded: _Optional[bool] = ..., degraded_reason: _Optional[str] = ..., search_id: _Optional[str] = ...) -> None: ...

class MarkUsedRequest(_message.Message):
    __slots__ = ("search_id", "memory_ids", "useful")
    SEARCH_ID_FIELD_NUMBER: _ClassVar[int]
    MEMORY_IDS_FIELD_NUMBER: _ClassVar[int]
    USEFUL_FIELD_NUMBER: _ClassVar[int]
    search_id: str
    memory_ids: _containers.RepeatedScalarFieldContainer[str]
    useful: bool
    def __init__(self, search_id: _Optional[str] = ..., memory_ids: _Optional[_Iterable[str]] = ..., useful: _Optional[bool] = ...) -> None: ...

class MarkUsedResponse(_message.Message):
    __slots__ = ("counted", "already_marked")
    COUNTED_FIELD_NUMBER: _ClassVar[int]
    ALREADY_MARKED_FIELD_NUMBER: _ClassVar[int]
    counted: int
    already_marked: int
    def __init__(self, counted: _Optional[int] = ..., already_marked: _Optional[int] = ...) -> None: ...

class ListRetrievalLogRequest(_message.Message):
    __slots__ = ("agent_id", "all_agents", "since", "page_size", "page_token")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    ALL_AGENTS_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    all_agents: bool
    since: _timestamp_pb2.Timestamp
    page_size: int
    page_token: str
    def __init__(self, agent_id: _Optional[str] = ..., all_agents: _Optional[bool] = ..., since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class RetrievedMemory(_message.Message):
    __slots__ = ("memory_id", "rank", "score", "relevance", "used", "useful", "namespace", "status", "preview")
    MEMORY_ID_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    RELEVANCE_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    USEFUL_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    PREVIEW_FIELD_NUMBER: _ClassVar[int]
    memory_id: str
    rank: int
    score: float
    relevance: float
    used: bool
    useful: bool
    namespace: str
    status: MemoryStatus
    preview: str
    def __init__(self, memory_id: _Optional[str] = ..., rank: _Optional[int] = ..., score: _Optional[float] = ..., relevance: _Optional[float] = ..., used: _Optional[bool] = ..., useful: _Optional[bool] = ..., namespace: _Optional[str] = ..., status: _Optional[_Union[MemoryStatus, str]] = ..., preview: _Optional[str] = ...) -> None: ...

class RetrievalLogEntry(_message.Message):
    __slots__ = ("search_id", "at", "agent_id", "query_hash", "query_text", "namespaces", "namespace_count", "hits", "hidden_hits", "trace_id", "rpc", "hub_request_id")
    SEARCH_ID_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    QUERY_HASH_FIELD_NUMBER: _ClassVar[int]
    QUERY_TEXT_FIELD_NUMBER: _ClassVar[int]
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_COUNT_FIELD_NUMBER: _ClassVar[int]
    HITS_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_HITS_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    RPC_FIELD_NUMBER: _ClassVar[int]
    HUB_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    search_id: str
    at: _timestamp_pb2.Timestamp
    agent_id: str
    query_hash: str
    query_text: str
    namespaces: _containers.RepeatedScalarFieldContainer[str]
    namespace_count: int
    hits: _containers.RepeatedCompositeFieldContainer[RetrievedMemory]
    hidden_hits: int
    trace_id: str
    rpc: str
    hub_request_id: str
    def __init__(self, search_id: _Optional[str] = ..., at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., agent_id: _Optional[str] = ..., query_hash: _Optional[str] = ..., query_text: _Optional[str] = ..., namespaces: _Optional[_Iterable[str]] = ..., namespace_count: _Optional[int] = ..., hits: _Optional[_Iterable[_Union[RetrievedMemory, _Mapping]]] = ..., hidden_hits: _Optional[int] = ..., trace_id: _Optional[str] = ..., rpc: _Optional[str] = ..., hub_request_id: _Optional[str] = ...) -> None: ...

class ListRetrievalLogResponse(_message.Message):
    __slots__ = ("entries", "next_page_token")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[RetrievalLogEntry]
    next_page_token: str
    def __init__(self, entries: _Optional[_Iterable[_Union[RetrievalLogEntry, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetMemoryHistoryRequest(_message.Message):
    __slots__ = ("id", "limit", "page_size", "page_token")
    ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    id: str
    limit: int
    page_size: int
    page_token: str
    def __init__(self, id: _Optional[str] = ..., limit: _Optional[int] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class GetMemoryHistoryResponse(_message.Message):
    __slots__ = ("subject_key", "versions", "truncated", "next_page_token")
    SUBJECT_KEY_FIELD_NUMBER: _ClassVar[int]
    VERSIONS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    subject_key: str
    versions: _containers.RepeatedCompositeFieldContainer[Memory]
    truncated: bool
    next_page_token: str
    def __init__(self, subject_key: _Optional[str] = ..., versions: _Optional[_Iterable[_Union[Memory, _Mapping]]] = ..., truncated: _Optional[bool] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetMemoryLineageRequest(_message.Message):
    __slots__ = ("id", "max_depth", "max_memories", "namespaces")
    ID_FIELD_NUMBER: _ClassVar[int]
    MAX_DEPTH_FIELD_NUMBER: _ClassVar[int]
    MAX_MEMORIES_FIELD_NUMBER: _ClassVar[int]
    NAMESPACES_FIELD_NUMBER: _ClassVar[int]
    id: str
    max_depth: int
    max_memories: int
    namespaces: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., max_depth: _Optional[int] = ..., max_memories: _Optional[int] = ..., namespaces: _Optional[_Iterable[str]] = ...) -> None: ...

class LineageEntry(_message.Message):
    __slots__ = ("memory", "hidden", "depth")
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    HIDDEN_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    memory: Memory
    hidden: bool
    depth: int
    def __init__(self, memory: _Optional[_Union[Memory, _Mapping]] = ..., hidden: _Optional[bool] = ..., depth: _Optional[int] = ...) -> None: ...

class LineageLink(_message.Message):
    __slots__ = ("from_entry", "to_entry", "relation")
    FROM_ENTRY_FIELD_NUMBER: _ClassVar[int]
    TO_ENTRY_FIELD_NUMBER: _ClassVar[int]
    RELATION_FIELD_NUMBER: _ClassVar[int]
    from_entry: int
    to_entry: int
    relation: LineageRelation
    def __init__(self, from_entry: _Optional[int] = ..., to_entry: _Optional[int] = ..., relation: _Optional[_Union[LineageRelation, str]] = ...) -> None: ...

class GetMemoryLineageResponse(_message.Message):
    __slots__ = ("entries", "links", "truncated")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[LineageEntry]
    links: _containers.RepeatedCompositeFieldContainer[LineageLink]
    truncated: bool
    def __init__(self, entries: _Optional[_Iterable[_Union[LineageEntry, _Mapping]]] = ..., links: _Optional[_Iterable[_Union[LineageLink, _Mapping]]] = ..., truncated: _Optional[bool] = ...) -> None: ...

class RestoreMemoriesRequest(_message.Message):
    __slots__ = ("ids",)
    IDS_FIELD_NUMBER: _ClassVar[int]
    ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, ids: _Optional[_Iterable[str]] = ...) -> None: ...

class RestoreMemoriesResponse(_message.Message):
    __slots__ = ("restored_ids",)
    RESTORED_IDS_FIELD_NUMBER: _ClassVar[int]
    restored_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, restored_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class ConsolidateMemoriesRequest(_message.Message):
    __slots__ = ("namespace", "occurred", "session_id", "tags", "types", "group_by", "target_kind", "target_type", "target_namespace", "dry_run", "summariser", "min_group_size", "max_group_size", "max_sources", "similarity", "max_sentences")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    OCCURRED_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TAGS_FIELD_NUMBER: _ClassVar[int]
    TYPES_FIELD_NUMBER: _ClassVar[int]
    GROUP_BY_FIELD_NUMBER: _ClassVar[int]
    TARGET_KIND_FIELD_NUMBER: _ClassVar[int]
    TARGET_TYPE_FIELD_NUMBER: _ClassVar[int]
    TARGET_NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    SUMMARISER_FIELD_NUMBER: _ClassVar[int]
    MIN_GROUP_SIZE_FIELD_NUMBER: _ClassVar[int]
    MAX_GROUP_SIZE_FIELD_NUMBER: _ClassVar[int]
    MAX_SOURCES_FIELD_NUMBER: _ClassVar[int]
    SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    MAX_SENTENCES_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    occurred: TimeRange
    session_id: str
    tags: _containers.RepeatedScalarFieldContainer[str]
    types: _containers.RepeatedScalarFieldContainer[MemoryType]
    group_by: ConsolidationGrouping
    target_kind: MemoryKind
    target_type: MemoryType
    target_namespace: str
    dry_run: bool
    summariser: Summariser
    min_group_size: int
    max_group_size: int
    max_sources: int
    similarity: float
    max_sentences: int
    def __init__(self, namespace: _Optional[str] = ..., occurred: _Optional[_Union[TimeRange, _Mapping]] = ..., session_id: _Optional[str] = ..., tags: _Optional[_Iterable[str]] = ..., types: _Optional[_Iterable[_Union[MemoryType, str]]] = ..., group_by: _Optional[_Union[ConsolidationGrouping, str]] = ..., target_kind: _Optional[_Union[MemoryKind, str]] = ..., target_type: _Optional[_Union[MemoryType, str]] = ..., target_namespace: _Optional[str] = ..., dry_run: _Optional[bool] = ..., summariser: _Optional[_Union[Summariser, str]] = ..., min_group_size: _Optional[int] = ..., max_group_size: _Optional[int] = ..., max_sources: _Optional[int] = ..., similarity: _Optional[float] = ..., max_sentences: _Optional[int] = ...) -> None: ...

class ConsolidatedGroup(_message.Message):
    __slots__ = ("key", "source_ids", "memory", "written", "deduplicated")
    KEY_FIELD_NUMBER: _ClassVar[int]
    SOURCE_IDS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    WRITTEN_FIELD_NUMBER: _ClassVar[int]
    DEDUPLICATED_FIELD_NUMBER: _ClassVar[int]
    key: str
    source_ids: _containers.RepeatedScalarFieldContainer[str]
    memory: Memory
    written: bool
    deduplicated: bool
    def __init__(self, key: _Optional[str] = ..., source_ids: _Optional[_Iterable[str]] = ..., memory: _Optional[_Union[Memory, _Mapping]] = ..., written: _Optional[bool] = ..., deduplicated: _Optional[bool] = ...) -> None: ...

class ConsolidateMemoriesResponse(_message.Message):
    __slots__ = ("groups", "sources_selected", "sources_already_consolidated", "sources_ungrouped", "memories_written", "dry_run", "truncated", "summariser", "groups_skipped")
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    SOURCES_SELECTED_FIELD_NUMBER: _ClassVar[int]
    SOURCES_ALREADY_CONSOLIDATED_FIELD_NUMBER: _ClassVar[int]
    SOURCES_UNGROUPED_FIELD_NUMBER: _ClassVar[int]
    MEMORIES_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    SUMMARISER_FIELD_NUMBER: _ClassVar[int]
    GROUPS_SKIPPED_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[ConsolidatedGroup]
    sources_selected: int
    sources_already_consolidated: int
    sources_ungrouped: int
    memories_written: int
    dry_run: bool
    truncated: bool
    summariser: str
    groups_skipped: int
    def __init__(self, groups: _Optional[_Iterable[_Union[ConsolidatedGroup, _Mapping]]] = ..., sources_selected: _Optional[int] = ..., sources_already_consolidated: _Optional[int] = ..., sources_ungrouped: _Optional[int] = ..., memories_written: _Optional[int] = ..., dry_run: _Optional[bool] = ..., truncated: _Optional[bool] = ..., summariser: _Optional[str] = ..., groups_skipped: _Optional[int] = ...) -> None: ...
