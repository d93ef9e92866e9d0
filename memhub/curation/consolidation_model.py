"""What a consolidation is asked to do and what it did, free of any wire format (ConsolidateMemories)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from memhub.core.model import Kind, MemoryRecord, MemoryType, NewMemory, TimeWindow

DEFAULT_MIN_GROUP = 2
MAX_GROUP = 100
"""A memory names at most 100 sources (memhub/core/validation.py MAX_DERIVED_FROM): larger groups are split."""
DEFAULT_MAX_GROUP = 50
DEFAULT_MAX_SOURCES = 1_000
MAX_SOURCES = 2_000
"""Episodes one call considers: each is embedded (sentences too), so this bounds the call's work."""
MAX_GROUPS = 50
"""Groups one response carries: 50 memories of at most 16,384 characters (4 bytes each in UTF-8) and their
source ids stay under the 4 MiB every gRPC client accepts."""
DEFAULT_SIMILARITY = 0.25
"""Average cosine between two clusters' episodes to merge them. With MiniLM, episodes about one topic average
0.25-0.55 and unrelated ones 0.0-0.2 (tests/test_consolidation.py's topics)."""
MIN_SIMILARITY, MAX_SIMILARITY = 0.05, 0.99
DEFAULT_SENTENCES = 5
MAX_SENTENCES = 20
CONSOLIDATED_TAG = "consolidated"
"""Every memory consolidation writes carries this tag: it marks which memories' derived_from lists are
consolidations (the idempotency check reads them) and lets readers find or filter them."""


class Grouping(enum.StrEnum):
    SESSION = "session"
    TAG = "tag"
    ENTITY = "entity"
    EMBEDDING = "embedding"


class SummariserChoice(enum.StrEnum):
    DEFAULT = "default"
    """The hub's configured summariser."""
    EXTRACTIVE = "extractive"
    LLM = "llm"


@dataclass(frozen=True)
class Selection:
    """Which episodes: active episodic memories below ``namespace`` that the caller may read."""

    namespace: str
    occurred: TimeWindow = field(default_factory=TimeWindow)
    session_id: str = ""
    tags_any: tuple[str, ...] = ()
    types: tuple[MemoryType, ...] = ()


@dataclass(frozen=True)
class ConsolidationRequest:
    selection: Selection
    group_by: Grouping = Grouping.SESSION
    target_kind: Kind = Kind.SEMANTIC
    target_type: MemoryType = MemoryType.LESSON
    target_namespace: str = ""
    """Empty: the selection's namespace."""
    dry_run: bool = False
    summariser: SummariserChoice = SummariserChoice.DEFAULT
    min_group_size: int = DEFAULT_MIN_GROUP
    max_group_size: int = DEFAULT_MAX_GROUP
    max_sources: int = DEFAULT_MAX_SOURCES
    similarity: float = DEFAULT_SIMILARITY
    max_sentences: int = DEFAULT_SENTENCES

    @property
    def target(self) -> str:
        return self.target_namespace or self.selection.namespace


@dataclass(frozen=True)
class Group:
    """Episodes that belong together, oldest first, and what they share."""

    key: str
    sources: tuple[MemoryRecord, ...]


@dataclass(frozen=True)
class GroupOutcome:
    key: str
    source_ids: tuple[str, ...]
    memory: MemoryRecord | NewMemory
    """The stored memory, or (dry run) the one that would be written."""
    written: bool = False
    deduplicated: bool = False


@dataclass(frozen=True)
class ConsolidationResult:
    groups: tuple[GroupOutcome, ...]
    sources_selected: int
    sources_already_consolidated: int
    sources_ungrouped: int
    memories_written: int
    dry_run: bool
    truncated: bool
    summariser: str
    groups_skipped: int
