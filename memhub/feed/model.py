"""Domain records of the change feed, free of any wire format."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime

from memhub.core.model import Kind, MemoryRecord, MemoryType


class Change(enum.StrEnum):
    """What happened to a memory (the ``event`` column of memory_changes, written by migration 0014's triggers)."""

    WRITTEN = "written"
    SUPERSEDED = "superseded"
    FORGOTTEN = "forgotten"
    EXPIRED = "expired"
    ARCHIVED = "archived"
    CONSOLIDATED = "consolidated"
    RESTORED = "restored"
    RELEASED = "released"


@dataclass(frozen=True, order=True)
class Position:
    """A place in the feed: changes are ordered by their transaction's id, then by their sequence number.

    ``Position(t, 0)`` lies before every change of transaction ``t`` (sequence numbers start at 1).
    """

    txid: int
    seq: int


ORIGIN = Position(0, 0)
"""Before every change."""


@dataclass(frozen=True)
class FeedFilter:
    """Which changes a subscription wants; every field empty means all of them."""

    namespaces: tuple[str, ...] = ()
    """Roots, each with its descendants (at most 64, minimal: none lies inside another)."""
    kinds: tuple[Kind, ...] = ()
    types: tuple[MemoryType, ...] = ()
    tags_any: tuple[str, ...] = ()
    changes: tuple[Change, ...] = ()


@dataclass(frozen=True)
class ChangeRecord:
    """One change with the memory's row as it is now (the feed never keeps content of its own)."""

    position: Position
    change: Change
    changed_at: datetime
    memory: MemoryRecord


@dataclass(frozen=True)
class ChangeBatch:
    """What one read of the feed found."""

    changes: tuple[ChangeRecord, ...]
    """The matching changes after the read's start, in feed order."""
    next_position: Position
    """Where the next read starts: after every change this read covered, delivered or filtered out."""
    full: bool
    """The read stopped at a limit: more may be waiting right away."""
    held_back: bool
    """Committed changes exist that cannot be delivered yet because an older transaction is still running."""
    horizon: Position = field(default=ORIGIN)
    """Changes at or before this were pruned."""
