"""Decay into the archive: memories nobody needed for a long time leave the online index, not the database.

A periodic job (every ``interval``) moves active memories that match an
archive rule to status ARCHIVED: kept in Postgres with their content,
listed with `--status archived`, restorable (RestoreMemories), but out of
search (the indexer removes them from Milvus like any unservable memory).

A rule: ``PREFIX:KINDS:AGE:MAX_IMPORTANCE``, e.g. ``*:episodic:30d:3`` (the
default) = in every namespace, episodic memories stored more than 30 days
ago, never returned by a search, of importance 3 or less. ``PREFIX`` is a
namespace with its descendants or ``*``; ``KINDS`` is ``+``-separated.
Several rules: ``MEMHUB_ARCHIVE_RULES="*:episodic:30d:3,teams/ops:episodic+semantic:90d:2"``;
``off`` turns archiving off. Age counts from when the hub stored the memory
(created_at), not from when it happened: importing last year's history must
not archive it on arrival.

"Never returned by a search" is recall_count = 0, and recall counts reach
Postgres in background batches (memhub/core/recall_stats.py, every 2 s, kept
and retried when a flush fails). So a run never acts on counts that may
still be on their way: it first flushes this process's counts, picks its
candidates, waits ``grace_s`` (MEMHUB_ARCHIVE_GRACE_S, 60 s by default,
well past every replica's flush interval and a retry), flushes again, and
archives only the candidates that are still at recall_count = 0 and still
match. A memory a search returned just before the run, on any replica
whose recorder is alive, has its count by then; the counts of a hub killed
with -9 are in its data directory's recall journal, flushed by the next hub
on it before its archive job starts (memhub/core/recall_stats.py).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import ARRAY, Connection, Engine, Text, and_, any_, bindparam, cast, func, or_, select, update
from sqlalchemy.dialects.postgresql import UUID

from memhub.core.model import Kind, Status
from memhub.core.namespaces import validate_namespace
from memhub.db.memories import enqueue_index
from memhub.db.schema import memories
from memhub.errors import FailedPrecondition, InvalidArgument, StartupError
from memhub.periodic import Periodic

log = logging.getLogger(__name__)

DEFAULT_RULES = "*:episodic:30d:3"
BATCH = 1000
"""Memories archived per transaction: a first run over a large old store must not hold one huge lock set."""

DEFAULT_GRACE_S = 60.0
"""Between picking candidates and archiving them: longer than any replica's recall flush (2 s) and its retries."""
CANDIDATES = 50 * BATCH
"""Candidates one run picks (and then waits the grace for); the next run takes the rest."""

_AGE = re.compile(r"(\d+)([hd])")


@dataclass(frozen=True)
class ArchiveRule:
    prefix: str
    """A namespace (with its descendants) or "*" for all."""
    kinds: tuple[Kind, ...]
    min_age: timedelta
    max_importance: int


@dataclass(frozen=True)
class ArchiveConfig:
    rules: tuple[ArchiveRule, ...]
    interval_s: float = 3600.0
    grace_s: float = DEFAULT_GRACE_S

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> ArchiveConfig:
        raw = env.get("MEMHUB_ARCHIVE_RULES", DEFAULT_RULES).strip()
        rules = () if raw.lower() == "off" else tuple(parse_rule(part.strip()) for part in raw.split(",") if part.strip())
        interval = env.get("MEMHUB_ARCHIVE_INTERVAL_S", "").strip()
        try:
            seconds = float(interval) if interval else cls.interval_s
        except ValueError:
            raise StartupError(f"MEMHUB_ARCHIVE_INTERVAL_S={interval!r} is not a number of seconds") from None
        if seconds <= 0:
            raise StartupError(f"MEMHUB_ARCHIVE_INTERVAL_S={interval!r} must be positive")
        raw_grace = env.get("MEMHUB_ARCHIVE_GRACE_S", "").strip()
        try:
            grace = float(raw_grace) if raw_grace else DEFAULT_GRACE_S
        except ValueError:
            raise StartupError(f"MEMHUB_ARCHIVE_GRACE_S={raw_grace!r} is not a number of seconds") from None
        if not 10.0 <= grace <= 86_400.0:
            # Below 10 s a slow recall flush on another replica could still be on its way.
            raise StartupError(f"MEMHUB_ARCHIVE_GRACE_S={raw_grace!r} must be between 10 and 86400 seconds")
        return cls(rules, seconds, grace)


def parse_rule(text: str) -> ArchiveRule:
    """``PREFIX:KINDS:AGE:MAX_IMPORTANCE``; StartupError naming what is wrong."""
    parts = text.split(":")
    where = f"MEMHUB_ARCHIVE_RULES rule {text!r}"
    if len(parts) != 4:
        raise StartupError(f"{where}: expected PREFIX:KINDS:AGE:MAX_IMPORTANCE, e.g. {DEFAULT_RULES}")
    prefix, kinds, age, importance = parts
    if prefix != "*":
        try:
            validate_namespace(prefix, "prefix")
        except InvalidArgument as exc:
            raise StartupError(f"{where}: {exc}") from None
    try:
        parsed_kinds = tuple(Kind(k) for k in kinds.split("+"))
    except ValueError:
        raise StartupError(f"{where}: kinds must be episodic, semantic or procedural joined by +") from None
    match = _AGE.fullmatch(age)
    if match is None or int(match.group(1)) == 0:
        raise StartupError(f"{where}: age must be a number of hours or days such as 36h or 30d")
    min_age = timedelta(hours=int(match.group(1))) if match.group(2) == "h" else timedelta(days=int(match.group(1)))
    if importance not in {"1", "2", "3", "4", "5"}:
        raise StartupError(f"{where}: max importance must be 1 to 5")
    return ArchiveRule(prefix, parsed_kinds, min_age, int(importance))


def _due(rules: tuple[ArchiveRule, ...]):  # noqa: ANN202 - a SQLAlchemy condition
    return and_(memories.c.status == Status.ACTIVE.value, memories.c.recall_count == 0, or_(*(_matches(r) for r in rules)))


def candidates(conn: Connection, rules: tuple[ArchiveRule, ...], limit: int = CANDIDATES) -> list[str]:
    """Up to ``limit`` memories some rule matches now (nothing locked: they are checked again when archived)."""
    if not rules:
        return []
    return [str(r[0]) for r in conn.execute(select(memories.c.id).where(_due(rules)).limit(limit))]


def archive_due(
    conn: Connection, rules: tuple[ArchiveRule, ...], limit: int = BATCH, among: Sequence[str] | None = None
) -> list[str]:
    """Archive up to ``limit`` memories that some rule matches (of ``among``, when given); returns their ids
    (queued for removal from the index)."""
    if not rules:
        return []
    where = _due(rules)
    if among is not None:
        where = and_(where, memories.c.id == any_(cast(bindparam("among", list(among), type_=ARRAY(Text)), ARRAY(UUID()))))
    due = (
        select(memories.c.id)
        .where(where)
        .limit(limit)
        .with_for_update(skip_locked=True)  # another replica's job takes other rows
        .scalar_subquery()
    )
    ids = [
        str(r[0])
        for r in conn.execute(
            update(memories)
            .where(memories.c.id.in_(due))
            .values(status=Status.ARCHIVED.value, updated_at=func.now())
            .returning(memories.c.id)
        )
    ]
    enqueue_index(conn, ids)
    return ids


def _matches(rule: ArchiveRule):  # noqa: ANN202 - a SQLAlchemy condition
    conds = [
        memories.c.kind.in_([k.value for k in rule.kinds]),
        memories.c.importance <= rule.max_importance,
        memories.c.created_at < func.now() - rule.min_age,
    ]
    if rule.prefix != "*":
        conds.append(
            or_(memories.c.namespace == rule.prefix, memories.c.namespace.startswith(rule.prefix + "/", autoescape=True))
        )
    return and_(*conds)


def restore(conn: Connection, ids: list[str]) -> list[str]:
    """Make archived memories active again (and queue them for the index); returns those restored now.

    A memory whose place was taken meanwhile (an active memory with the same content, or a newer version of
    its subject) stays archived: two active copies of one fact, or two current versions of one subject, are
    what dedup and supersede exist to prevent. Raises FailedPrecondition naming it.
    """
    rows = conn.execute(
        select(memories.c.id, memories.c.namespace, memories.c.content_hash, memories.c.subject_key)
        .where(memories.c.id.in_(ids), memories.c.status == Status.ARCHIVED.value)
        .with_for_update()
    ).all()
    for mid, namespace, digest, subject in rows:
        clash = (
            or_(memories.c.content_hash == digest, memories.c.subject_key == subject)
            if subject
            else (memories.c.content_hash == digest)
        )
        taken = conn.execute(
            select(memories.c.id).where(memories.c.namespace == namespace, memories.c.status == Status.ACTIVE.value, clash)
        ).first()
        if taken is not None:
            raise FailedPrecondition(
                f"memory {mid} cannot be restored: {taken[0]} in {namespace!r} now holds the same content or subject; "
                "forget that one first, or leave this one archived"
            )
    restored = [str(r[0]) for r in rows]
    if restored:
        conn.execute(
            update(memories).where(memories.c.id.in_(restored)).values(status=Status.ACTIVE.value, updated_at=func.now())
        )
        enqueue_index(conn, restored)
    return restored


class Archiver:
    """The periodic archive job of one hub process; replicas share the work through SKIP LOCKED."""

    def __init__(
        self,
        engine: Engine,
        config: ArchiveConfig,
        nudge: Callable[[], None],
        flush_counts: Callable[[], None] = lambda: None,
    ) -> None:
        """``flush_counts`` writes this process's pending recall counts (RecallRecorder.flush)."""
        self.config = config
        self._engine = engine
        self._nudge = nudge  # the indexer takes the archived memories out of Milvus
        self._flush_counts = flush_counts
        self._stopping = threading.Event()
        self._runner = Periodic(self.run_once, config.interval_s, "memhub-archiver", log, "archive run failed; retrying later")

    def run_once(self, grace_s: float | None = None) -> int:
        """Archive what is due and stays due through the grace (``grace_s``, else the config's), a batch per
        transaction; returns how many."""
        if not self.config.rules:
            return 0
        self._flush_counts()
        with self._engine.connect() as conn:
            picked = candidates(conn, self.config.rules)
        if not picked:
            return 0
        # Counts of searches on other replicas (or this one, racing the pick) land meanwhile.
        if self._stopping.wait(self.config.grace_s if grace_s is None else grace_s):
            return 0
        self._flush_counts()
        total = 0
        for start in range(0, len(picked), BATCH):
            with self._engine.begin() as conn:
                total += len(archive_due(conn, self.config.rules, among=picked[start : start + BATCH]))
        if total:
            log.info("archived %d memories (old, never recalled, low importance)", total)
            self._nudge()
        return total

    def start(self) -> None:
        if self.config.rules:
            self._stopping.clear()
            self._runner.start()

    def stop(self) -> None:
        self._stopping.set()  # a run waiting out its grace ends now, archiving nothing
        self._runner.stop()
