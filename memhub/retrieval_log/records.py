"""What MarkUsed takes and answers, and what the retrieval log shows: plain records, free of any wire format."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memhub.core.model import Status

MAX_MARKED_IDS = 100
"""Memory ids one MarkUsed call may name: each is looked up and its read permission checked."""
MAX_LOG_PAGE = 50
"""Entries per ListRetrievalLog page: each carries up to 100 hits with previews, so 50 stay well under 4 MiB."""
DEFAULT_LOG_PAGE = 20
PREVIEW_CHARS = 100
"""Characters of a returned memory's content shown in the log: enough to recognise it, no more."""


@dataclass(frozen=True)
class UseMarks:
    """A validated MarkUsed request."""

    memory_ids: tuple[str, ...]
    """1 to MAX_MARKED_IDS ids, duplicates removed, order kept."""
    search_id: str | None = None
    useful: bool | None = None
    """None: used, no verdict; True: useful; False: not useful."""


@dataclass(frozen=True)
class MarkedCount:
    counted: int
    """Marks this call added (new, or a verdict added to an earlier mark for the same search)."""
    already_marked: int
    """Memories already marked for this search, left as they were."""


@dataclass(frozen=True)
class LogQuery:
    """A validated ListRetrievalLog request."""

    agent_id: str | None
    """None: the caller's own searches."""
    all_agents: bool
    since: datetime | None
    page_size: int
    page_token: str


@dataclass(frozen=True)
class LoggedHit:
    memory_id: str
    rank: int
    score: float
    relevance: float
    used: bool
    useful: bool | None
    namespace: str
    status: Status
    preview: str


@dataclass(frozen=True)
class LogEntry:
    search_id: str
    at: datetime
    agent_id: str
    rpc: str
    query_hash: str
    query_text: str | None
    namespaces: tuple[str, ...]
    namespace_count: int
    hits: tuple[LoggedHit, ...]
    hidden_hits: int
    """Hits left out: memories the reader cannot read now (or no longer existing)."""
    trace_id: str
    hub_request_id: str


@dataclass(frozen=True)
class LogPage:
    entries: tuple[LogEntry, ...]
    next_page_token: str
