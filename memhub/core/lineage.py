"""GetMemoryLineage: why a memory says what it says, across agents, limited to what the caller may read.

From the memory asked about, the walk follows two kinds of links, both stored on the newer memory:
- supersedes: the versions of a subject (GetMemoryHistory's chain, read with the same query). Versions cost
  no step: the whole chain of every memory reached comes with it;
- derived_from: what a memory was consolidated from, or what its writer cited, and the other way round what
  was derived from it. Each costs one step, up to ``max_depth``.

What the caller may not read (memhub/service/reading.py decides: its readable namespaces, quarantine for admins
only) is shown only where a link stored on a shown memory leads to it: one hidden entry per such link, with
nothing of the memory (no id, content, writer, time or status), never followed further. The number of such
links is part of the shown memory (its writer cited that many), so it says nothing about what happens in
namespaces the caller cannot read. Memories derived *from* a shown one are looked for only in readable
namespaces, in SQL: how many unreadable memories cite a memory changes with others' activity there, and a
caller could write a memory and watch that number, so they are left out without a trace.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection

from memhub.core import response_size
from memhub.core.model import MemoryRecord
from memhub.core.response_size import SHOWN_LINKS
from memhub.db import lineage as lineage_db
from memhub.db import memories as memories_db

MAX_DEPTH = 5
DEFAULT_DEPTH = 3
MAX_ENTRIES = 200
DEFAULT_ENTRIES = 50
_LINK_BYTES = 16
"""A link's two positions and relation, with headers, rounded up."""
_HIDDEN_BYTES = 16


class Relation(enum.StrEnum):
    SUPERSEDES = "supersedes"
    """``from_entry`` replaced ``to_entry`` (same subject key and namespace)."""
    DERIVED_FROM = "derived_from"
    """``from_entry`` was derived from ``to_entry`` (consolidated from it, or its writer cited it)."""


@dataclass(frozen=True)
class LineageEntry:
    memory: MemoryRecord | None
    """None: a memory the caller cannot read."""
    depth: int
    """Derivation steps from the memory asked about (0: it and its versions)."""


@dataclass(frozen=True)
class LineageLink:
    from_entry: int
    """The newer memory's position in Lineage.entries (always a shown one)."""
    to_entry: int
    relation: Relation


@dataclass(frozen=True)
class Lineage:
    entries: tuple[LineageEntry, ...]
    """entries[0] is the memory asked about."""
    links: tuple[LineageLink, ...]
    truncated: bool
    """More readable memories are linked than the depth, the entry limit or the response budget let through."""


@dataclass(frozen=True)
class LineageLimits:
    max_depth: int = DEFAULT_DEPTH
    max_entries: int = DEFAULT_ENTRIES
    budget_bytes: int = 4 * 2**20
    """What the entries and links may take in the response (memhub/core/response_size.py)."""


def linked_ids(record: MemoryRecord) -> list[str]:
    """Every memory id ``record``'s links name (as the API shows them: the first SHOWN_LINKS of each list)."""
    ids = [*record.supersedes[:SHOWN_LINKS], *record.derived_from[:SHOWN_LINKS]]
    return [*ids, record.superseded_by] if record.superseded_by else ids


def only_links_to(record: MemoryRecord, visible: frozenset[str]) -> MemoryRecord:
    """``record`` with its links naming only ``visible`` memories (a hidden one is a LineageEntry, not an id)."""
    shown = record.derived_from[:SHOWN_LINKS]
    kept = tuple(m for m in shown if m in visible)
    return dataclasses.replace(
        record,
        supersedes=tuple(m for m in record.supersedes[:SHOWN_LINKS] if m in visible),
        derived_from=kept,
        superseded_by=record.superseded_by if record.superseded_by in visible else None,
        hidden_sources=len(shown) - len(kept),
    )


class _Walk:
    def __init__(
        self,
        conn: Connection,
        shown: Callable[[MemoryRecord], bool],
        readable: list[str],
        with_quarantined: bool,
        limits: LineageLimits,
    ) -> None:
        self.conn = conn
        self.shown = shown
        self.readable = readable
        self.with_quarantined = with_quarantined
        self.limits = limits
        self.entries: list[LineageEntry] = []
        self.index: dict[str, int] = {}
        self.hidden: dict[int, list[tuple[str, int]]] = {}
        """Entry -> (cited id, hidden entry) for each unreadable source it cites, in the order it cites them."""
        self.bytes = 0
        self.truncated = False
        self.chains: set[tuple[str, str]] = set()

    def room(self) -> int:
        return self.limits.max_entries - len(self.entries)

    def _fits(self, size: int) -> bool:
        if len(self.entries) >= self.limits.max_entries or self.bytes + size > self.limits.budget_bytes:
            self.truncated = True
            return False
        self.bytes += size
        return True

    def add(self, record: MemoryRecord, depth: int) -> int | None:
        """The entry of ``record`` (added at ``depth`` if new); None when the limits are reached."""
        if record.id in self.index:
            return self.index[record.id]
        links = min(len(record.derived_from), SHOWN_LINKS) + min(len(record.supersedes), SHOWN_LINKS) + 1
        if not self._fits(response_size.memory_bytes(record) + _LINK_BYTES * links):
            return None
        self.index[record.id] = len(self.entries)
        self.entries.append(LineageEntry(record, depth))
        return self.index[record.id]

    def add_hidden(self, from_entry: int, cited: str, depth: int) -> None:
        if self._fits(_HIDDEN_BYTES + _LINK_BYTES):
            self.entries.append(LineageEntry(None, depth))
            self.hidden.setdefault(from_entry, []).append((cited, len(self.entries) - 1))

    def level(self, depth: int) -> list[int]:
        return [i for i, e in enumerate(self.entries) if e.depth == depth and e.memory is not None]

    def load_chains(self, depth: int) -> None:
        """Every version of the subjects of this level's memories, at the same depth (the history query)."""
        for i in self.level(depth):
            record = self.entries[i].memory
            assert record is not None
            if record.subject_key is None or (record.namespace, record.subject_key) in self.chains:
                continue
            self.chains.add((record.namespace, record.subject_key))
            if self.room() <= 0:
                self.truncated = True
                return
            versions, older = memories_db.subject_history(self.conn, record.namespace, record.subject_key, self.room() + 1)
            self.truncated |= older
            for version in versions:
                if self.shown(version):  # one namespace, so all or none; quarantined ones are not versions
                    self.add(version, depth)

    def follow(self, depth: int) -> None:
        """Sources and derivations of this level's memories, one step further."""
        level = self.level(depth)
        cited = [(i, mid) for i in level for mid in self.entries[i].memory.derived_from[:SHOWN_LINKS]]  # type: ignore[union-attr]
        found = lineage_db.by_ids(self.conn, [mid for _, mid in cited])
        for i, mid in cited:
            record = found.get(mid)
            if record is not None and self.shown(record):
                self.add(record, depth + 1)
            else:
                self.add_hidden(i, mid, depth + 1)
        ids = [self.entries[i].memory.id for i in level]  # type: ignore[union-attr]
        derived = lineage_db.derived_from_any(
            self.conn, ids, self.readable, with_quarantined=self.with_quarantined, limit=self.room() + len(self.index) + 1
        )
        for record in derived:
            if self.shown(record):
                self.add(record, depth + 1)

    def more_beyond(self, depth: int) -> bool:
        """Whether links lead past the last level: stored sources, or readable derivations, not shown."""
        level = self.level(depth)
        for i in level:
            if any(mid not in self.index for mid in self.entries[i].memory.derived_from):  # type: ignore[union-attr]
                return True
        ids = [self.entries[i].memory.id for i in level]  # type: ignore[union-attr]
        derived = lineage_db.derived_from_any(
            self.conn, ids, self.readable, with_quarantined=self.with_quarantined, limit=len(self.index) + 1
        )
        return any(r.id not in self.index and self.shown(r) for r in derived)

    def links(self) -> list[LineageLink]:
        """Every link stored on a shown memory to another shown one or to its hidden entry, in stored order,
        without repeats."""
        out: dict[tuple[int, int, Relation], None] = {}
        for i, entry in enumerate(self.entries):
            record = entry.memory
            if record is None:
                continue
            for mid in record.supersedes[:SHOWN_LINKS]:
                if mid in self.index:
                    out[(i, self.index[mid], Relation.SUPERSEDES)] = None
            if record.superseded_by in self.index:
                out[(self.index[record.superseded_by], i, Relation.SUPERSEDES)] = None
            hidden = list(self.hidden.get(i, ()))
            for mid in record.derived_from[:SHOWN_LINKS]:
                if mid in self.index:
                    out[(i, self.index[mid], Relation.DERIVED_FROM)] = None
                    continue
                place = next((k for k, (cited, _) in enumerate(hidden) if cited == mid), None)
                if place is not None:  # followed, and not readable: its own hidden entry, in the same place
                    out[(i, hidden.pop(place)[1], Relation.DERIVED_FROM)] = None
        return [LineageLink(a, b, rel) for a, b, rel in out]


def walk(
    conn: Connection,
    root: MemoryRecord,
    *,
    shown: Callable[[MemoryRecord], bool],
    readable: list[str],
    with_quarantined: bool,
    limits: LineageLimits,
) -> Lineage:
    """The lineage of ``root`` (which the caller may read). ``shown``: whether the caller may see a memory;
    ``readable``: the namespaces derivations are looked for in (those ``shown`` accepts)."""
    w = _Walk(conn, shown, readable, with_quarantined, limits)
    w.add(root, 0)
    for depth in range(limits.max_depth + 1):
        w.load_chains(depth)
        if depth == limits.max_depth:
            w.truncated |= w.more_beyond(depth)
            break
        if w.room() <= 0:
            w.truncated = True
            break
        w.follow(depth)
        if not w.level(depth + 1):
            break
    return Lineage(tuple(w.entries), tuple(w.links()), w.truncated)
