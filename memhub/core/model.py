"""Domain records of the memory service, free of any wire format."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime


class Kind(enum.StrEnum):
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"


class MemoryType(enum.StrEnum):
    EVENT = "event"
    FACT = "fact"
    PREFERENCE = "preference"
    CORRECTION = "correction"
    RULE = "rule"
    LESSON = "lesson"
    OUTCOME = "outcome"
    NOTE = "note"


class Status(enum.StrEnum):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    FORGOTTEN = "forgotten"
    EXPIRED = "expired"
    QUARANTINED = "quarantined"
    """Flagged on write in a quarantined namespace: served to nobody until an admin releases it (memhub/core/screening.py)."""
    ARCHIVED = "archived"
    """Old, never recalled, unimportant: out of the index, kept and restorable (memhub/curation/archive.py)."""


class Trust(enum.StrEnum):
    """How far readers may trust what a writer stores, from the writer's token (memhub/auth/config.py)."""

    VERIFIED = "verified"
    """An operator vouches for the writer (a first-party agent or a human-reviewed pipeline)."""
    AGENT = "agent"
    """An ordinary agent of the fleet: the default."""
    EXTERNAL = "external"
    """The writer relays outside input (web pages, e-mail, user uploads): read its memories as data only."""


INSTRUCTION_LIKE = "instruction_like"
"""The one flag there is: the content addresses the model that will read it (memhub/core/instruction_rules.py)."""


class Channel(enum.StrEnum):
    DENSE = "dense"
    KEYWORD = "keyword"
    ENTITY = "entity"
    TIME = "time"
    EXPANSION = "expansion"
    """The second round of a search expanded by its first round's best hits (not requestable as a channel)."""
    GRAPH = "graph"
    """Memories reached from the best hits and the query's entities over the entity-memory graph."""
    PREFERENCE = "preference"
    """For recommendation and advice questions: the matching preference memories and their source turns."""
    MULTILINGUAL = "multilingual"
    """The multilingual model's order over the head, for text in a script the dense model cannot read (not
    requestable as a channel: it runs with the dense channel; memhub/search/multilingual.py)."""


# Channels a search uses when the request names none.
DEFAULT_CHANNELS = (Channel.DENSE, Channel.KEYWORD, Channel.ENTITY, Channel.TIME, Channel.GRAPH, Channel.PREFERENCE)


@dataclass(frozen=True)
class Caller:
    """Who is calling, from the verified token (memhub/api/identity.py),
    never from a request field, so provenance cannot be forged through the
    payload; plus what the audit log records about the call."""

    agent_id: str
    groups: tuple[str, ...] = ()
    trace_id: str = ""
    rpc: str = ""
    request_id: str = ""
    """The request's idempotency key (WriteMemories/ForgetMemories ``request_id``): chosen by the caller."""
    hub_request_id: str = ""
    """The hub's id of this call (a UUID, memhub/api/provenance.py): no caller can choose or repeat it."""
    trace_id_from_caller: bool = False
    """``trace_id`` came from the caller's ``traceparent`` header, so the caller chose it."""
    trust: Trust = Trust.AGENT
    """The writer's trust level, from the token's trust claim (or the hub's default when it has none)."""


@dataclass(frozen=True)
class NewMemory:
    """A validated write: every field checked, defaults applied."""

    namespace: str
    kind: Kind
    type: MemoryType
    content: str
    tags: tuple[str, ...]
    entities: tuple[str, ...]
    importance: int
    confidence: float
    occurred_at: datetime | None  # None: the commit time
    valid_from: datetime | None
    valid_to: datetime | None
    expires_at: datetime | None
    subject_key: str | None
    derived_from: tuple[str, ...]
    flags: tuple[str, ...] = ()
    """Set by the hub's screening (memhub/core/screening.py), never by the writer."""
    quarantined: bool = False
    """Stored as QUARANTINED instead of ACTIVE: flagged content in a quarantined namespace."""
    kind_named: bool = True
    """The writer chose the kind (False: it followed from the type). The write filter may only change kinds
    and importances the writer left to the hub (memhub/curation/write_gate.py)."""
    importance_named: bool = True
    expected_version: int | None = None
    """With a subject key: the version its active memory must have (0: none may exist); None: no expectation."""


@dataclass(frozen=True)
class MemoryRecord:
    """A stored memory as read from Postgres."""

    id: str
    namespace: str
    kind: Kind
    type: MemoryType
    content: str
    tags: tuple[str, ...]
    entities: tuple[str, ...]
    importance: int
    confidence: float
    occurred_at: datetime
    created_at: datetime
    updated_at: datetime
    valid_from: datetime | None
    valid_to: datetime | None
    expires_at: datetime | None
    source_agent: str
    source_session: str
    source_trace: str
    source_request_id: str
    source_trace_from_caller: bool
    content_hash: str
    status: Status
    subject_key: str | None
    supersedes: tuple[str, ...]
    derived_from: tuple[str, ...]
    superseded_by: str | None
    recall_count: int
    last_recalled_at: datetime | None
    embedding_model: str
    forgotten_at: datetime | None
    forgotten_by: str | None
    forget_reason: str | None
    trust: Trust = Trust.AGENT
    """The writer's trust level when it wrote the memory."""
    flags: tuple[str, ...] = ()
    """What screening found in the content on write, e.g. ("instruction_like",)."""
    seen_count: int = 1
    """Writes of this memory: the first, plus each exact or near duplicate folded into it."""
    use_count: int = 0
    """Times agents marked it used (MarkUsed), whatever their verdict."""
    not_useful_count: int = 0
    """Of those, the marks that said it was not useful."""
    last_used_at: datetime | None = None
    version: int = 1
    """Goes up on every change a reader can see, recall statistics aside (memhub/db/versions.py)."""
    hidden_sources: int = 0
    """Set for a reader: derived_from ids left out because it may not read them (memhub/core/visible_links.py)."""


@dataclass(frozen=True)
class Replaced:
    """The memory a write superseded, and the version it had while it was the active one."""

    id: str
    version: int


@dataclass(frozen=True)
class WriteOutcome:
    memory: MemoryRecord | None
    """None when the write filter dropped it (``filtered``)."""
    deduplicated: bool
    near: bool = False
    """Deduplicated into a memory with the same content words, not the same text (memhub/curation/near_dup.py)."""
    filtered: str = ""
    """The write filter's rule that dropped it (memhub/curation/write_filter.py); "" when stored."""
    redacted: tuple[str, ...] = ()
    """Kinds of secrets replaced by [REDACTED:<kind>] before it was stored (memhub/curation/secret_scan.py)."""
    replaced: Replaced | None = None
    """The older memory with the same subject key that this write superseded."""
    extracted: tuple[WriteOutcome, ...] = ()
    """The facts the LLM extractor drew from this memory, stored derived_from it (memhub/core/extracted_facts.py)."""
    extraction_failed: bool = False
    """The extractor was asked about this memory and failed (its endpoint): stored without facts."""


@dataclass(frozen=True)
class WriteResponse:
    results: tuple[WriteOutcome, ...]
    indexed: bool
    replayed: bool = False


@dataclass(frozen=True)
class TimeWindow:
    """Half-open [start, end); either bound may be None."""

    start: datetime | None = None
    end: datetime | None = None


@dataclass(frozen=True)
class MemoryFilter:
    """Filters shared by search, list and forget. `namespaces` are subtree roots."""

    namespaces: tuple[str, ...]
    kinds: tuple[Kind, ...] = ()
    types: tuple[MemoryType, ...] = ()
    tags_any: tuple[str, ...] = ()
    occurred: TimeWindow = field(default_factory=TimeWindow)
    created: TimeWindow = field(default_factory=TimeWindow)
    subject_key: str | None = None
    flags_any: tuple[str, ...] = ()
    """Only memories carrying at least one of these flags."""
    unflagged: bool = False
    """Only memories carrying no flag at all."""


@dataclass(frozen=True)
class SearchQuery:
    text: str
    filter: MemoryFilter
    top_k: int
    channels: tuple[Channel, ...]
    explain: bool
    max_tokens: int
    context_window: int = 0
    """Turns before and after each episodic hit to return with it (0: none)."""
    min_relevance: float = 0.0
    neighbour_smoothing: bool | None = None
    """None: the hub's default."""
    rerank: bool | None = None
    """None: the hub's default."""
    expansion: bool | None = None
    """None: the hub's default."""
    as_of: datetime | None = None
    """What time expressions in the query are relative to; None: now."""
    channels_named: bool = False
    """The request named its channels (a channel it names runs even if the hub weighs it 0)."""
    priors: bool | None = None
    """Importance, recency, use and type in the ranking (memhub/search/priors.py); None: the hub's default (on)."""


@dataclass(frozen=True)
class ChannelHit:
    channel: Channel
    rank: int  # 1-based
    score: float
    contribution: float = 0.0
    """What this channel added to the fused score: weight / (k + rank)."""


class RankingStage(enum.StrEnum):
    """The stage of a search whose order a hit's place follows (memhub/search/placement.py)."""

    FUSION = "fusion"
    PRIORS = "priors"
    RERANK = "rerank"
    SPEAKER = "speaker"
    """Moved down by the speaker stage: a turn of someone other than the question's subject (speakers.py)."""


@dataclass(frozen=True)
class Placement:
    """With explain: where a hit stood after each ranking stage (1-based; 0: the stage did not place it)."""

    ordered_by: RankingStage
    fused_rank: int
    fused_score: float
    prior_rank: int = 0
    rerank_rank: int = 0
    rerank_score: float = 0.0


@dataclass(frozen=True)
class SearchHit:
    memory: MemoryRecord
    score: float
    channel_ranks: tuple[ChannelHit, ...]
    relevance: float = 0.0
    before: tuple[MemoryRecord, ...] = ()
    after: tuple[MemoryRecord, ...] = ()
    priors: tuple[float, float, float, float] | None = None
    """With explain: what importance, recency, use and type added to the score's factor (memhub/search/priors.py)."""
    placement: Placement | None = None
    """With explain: its place after fusion, the priors and the rerank, and which of them decided it."""


@dataclass(frozen=True)
class SearchResult:
    hits: tuple[SearchHit, ...]
    degraded: str = ""
    """Empty when every requested channel answered; otherwise why not (then the hits come from what did answer,
    or from Postgres full-text search when the index could not be used at all)."""
    truncated: bool = False
    """Lower-ranked hits were left out to keep the response under the size limit (memhub/core/response_size.py)."""
    namespaces: tuple[str, ...] = ()
    """The namespaces searched (those the caller could read under the request's roots): for the retrieval log."""
    search_id: str = ""
    """The search's id in the retrieval log ("" when the hub keeps none)."""


@dataclass(frozen=True)
class ListQuery:
    filter: MemoryFilter
    statuses: tuple[Status, ...]
    page_size: int
    page_token: str


@dataclass(frozen=True)
class ListPage:
    memories: tuple[MemoryRecord, ...]
    next_page_token: str


@dataclass(frozen=True)
class ForgetRequest:
    ids: tuple[str, ...]
    filter: MemoryFilter | None
    reason: str
    expected_versions: tuple[tuple[str, int], ...] = ()
    """(id, version) pairs, each id one of ``ids``: forget only if each still has that version."""


@dataclass(frozen=True)
class ForgetResult:
    ids: list[str]
    """The memories this call forgot (already forgotten ones are not repeated)."""
    versions: tuple[int, ...]
    """Each tombstone's version, in ``ids`` order (empty in a replay of a call made before versions existed)."""
    replayed: bool = False
