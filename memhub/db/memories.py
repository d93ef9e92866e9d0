"""Writing memories in Postgres (the source of truth), and reading one memory or a subject's versions.

Every function takes an open connection so the caller decides the
transaction: a write, its supersessions and its outbox rows commit together
or not at all. Other reads are in memhub/db/memory_reads.py; the record a
row becomes and the shared filter in memhub/db/memory_rows.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from sqlalchemy import Connection, func, or_, select, text, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from memhub.core.model import Caller, MemoryFilter, MemoryRecord, NewMemory, Replaced, Status, WriteOutcome
from memhub.db import versions
from memhub.db.memory_rows import filter_conditions, filter_params, record_from_columns, to_record
from memhub.db.new_memory_rows import content_hash, insert_rows, row_values
from memhub.db.schema import MEMORY_COLUMNS, memories, namespaces, outbox
from memhub.errors import Aborted, PermissionDenied


def enqueue_index(conn: Connection, memory_ids: Iterable[str], *, context_only: bool = False) -> None:
    """Record that these memories changed; the indexer brings Milvus in line after commit.

    ``context_only``: only their keyword context changed (memhub/db/context.py).
    """
    rows = [{"memory_id": mid, "context_only": context_only} for mid in memory_ids]
    if rows:
        conn.execute(outbox.insert(), rows)
        # Delivered at commit: wakes the indexer of every replica (LISTEN memhub_outbox).
        conn.execute(text("NOTIFY memhub_outbox"))


def insert_memories(
    conn: Connection,
    caller: Caller,
    session_id: str,
    items: Sequence[NewMemory],
    embedding_model: str,
    *,
    blind: frozenset[str] = frozenset(),
    may_supersede: frozenset[str] | None = None,
    near: Mapping[int, str] | None = None,
    skip: frozenset[int] = frozenset(),
) -> list[WriteOutcome | None]:
    """Insert validated memories; dedup by content hash and supersede by subject key. Outcomes keep input order.

    Must run inside a transaction. Memories without a subject key go in one
    INSERT (a batch of 100 is one round trip, not a hundred: memhub/db/new_memory_rows.py);
    those with one are written one by one, since each may supersede another.
    Raises Aborted when a concurrent writer won a race this call cannot
    resolve by itself (a retry then succeeds).

    ``blind``: namespaces the caller may write but not read. Memories written
    there are stored as new whatever is already there (never deduplicated),
    and must not carry a subject key (the service refuses those before).
    ``may_supersede``: namespaces where the caller may retire an older memory
    with the same subject key (it needs the forget right there); None: all.
    A write that would supersede elsewhere raises PermissionDenied.
    ``near``: item position -> an active memory it near-duplicates (found by the caller
    before the transaction, memhub/curation/near_dup.py). Such an item is not stored; the
    memory it duplicates is confirmed instead, unless it stopped being active meanwhile
    (then the item is stored like any other).

    A duplicate, exact or near, confirms the memory it folds into (``confirm``).
    ``skip``: positions not to store (the write filter dropped them); their outcome is None. Positions
    keep their meaning: errors name memories[i] and write_pos orders a session's turns as sent.
    """
    # Rows go in sorted by their unique keys: two writers inserting the same new keys in
    # different orders would each wait for the other's transaction (a deadlock, seen with
    # 4 writers whose batches each spanned 17 new namespaces); one order makes one wait.
    ns_rows = [{"name": ns} for ns in sorted({item.namespace for i, item in enumerate(items) if i not in skip})]
    if ns_rows:
        conn.execute(pg_insert(namespaces).on_conflict_do_nothing(), ns_rows)
    outcomes: dict[int, WriteOutcome] = {}
    changed: list[str] = []
    for i, target in sorted(((i, t) for i, t in (near or {}).items() if i not in skip), key=lambda kv: kv[1]):  # by id
        confirmed = confirm(conn, target)
        if confirmed is not None:
            outcomes[i] = WriteOutcome(confirmed, deduplicated=True, near=True)
    plain = [i for i, item in enumerate(items) if item.subject_key is None and i not in outcomes and i not in skip]
    if plain:
        values = {i: row_values(items[i], i, caller, session_id, embedding_model, blind) for i in plain}
        plain.sort(key=lambda i: (values[i]["namespace"], values[i]["content_hash"]))
        # Conflicts (an active copy of the same content) are skipped here and resolved below.
        inserted = insert_rows(conn, [values[i] for i in plain])
        skipped = [i for i in plain if values[i]["id"] not in inserted]
        existing = _active_by_hash(conn, [(items[i].namespace, values[i]["content_hash"]) for i in skipped])
        for i in sorted(plain):
            row = inserted.get(values[i]["id"])
            if row is not None:
                outcomes[i] = WriteOutcome(record_from_columns(row), deduplicated=False)
                changed.append(values[i]["id"])
                continue
            match = existing.get((items[i].namespace, values[i]["content_hash"]))
            confirmed = confirm(conn, match.id) if match is not None else None
            if confirmed is None:  # the copy we collided with was forgotten in between
                raise Aborted(f"memories[{i}]: a concurrent write changed the same content in {items[i].namespace!r}; retry")
            outcomes[i] = WriteOutcome(confirmed, deduplicated=True)
    keyed = sorted(
        (i for i, item in enumerate(items) if item.subject_key is not None and i not in skip), key=lambda i: _order(items[i])
    )
    for i in keyed:
        values = row_values(items[i], i, caller, session_id, embedding_model, blind)
        outcomes[i] = _insert_with_subject(conn, items[i], values, changed, may_supersede)
    enqueue_index(conn, changed)
    return [outcomes.get(i) for i in range(len(items))]


def _order(item: NewMemory) -> tuple[str, str, str]:
    return item.namespace, item.subject_key or "", content_hash(item.content)


def _active_by_hash(conn: Connection, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], MemoryRecord]:
    """The active, non-blind memory holding each (namespace, content hash): what a write deduplicates into."""
    if not keys:
        return {}
    rows = conn.execute(
        select(*MEMORY_COLUMNS).where(
            tuple_(memories.c.namespace, memories.c.content_hash).in_(list(set(keys))),
            memories.c.status == Status.ACTIVE.value,
            memories.c.blind_write.is_(False),
        )
    ).all()
    return {(r._mapping["namespace"], r._mapping["content_hash"]): to_record(r) for r in rows}


def _insert_with_subject(
    conn: Connection, item: NewMemory, values: dict, changed: list[str], may_supersede: frozenset[str] | None
) -> WriteOutcome:
    expectation = f"memories[{values['write_pos']}].expected_version"
    if item.expected_version is not None:  # checked (and the holder locked) before anything changes
        versions.check_subject(conn, item.namespace, item.subject_key or "", item.expected_version, expectation)
    key = (item.namespace, values["content_hash"])
    existing = _active_by_hash(conn, [key]).get(key)
    confirmed = confirm(conn, existing.id) if existing is not None else None
    if confirmed is not None:
        return WriteOutcome(confirmed, deduplicated=True)
    with conn.begin_nested() as savepoint:
        replaced = _supersede_subject(conn, item, values["id"])
        values["supersedes"] = superseded = [r.id for r in replaced]
        if superseded and may_supersede is not None and item.namespace not in may_supersede:
            # Raised inside the transaction: the whole write rolls back, the old memory stays active.
            # The caller can read this namespace (blind writes carry no subject key), so naming the
            # memory tells it nothing new.
            raise PermissionDenied(
                f"memories[{values['write_pos']}].subject_key: {item.namespace!r} already holds an active memory "
                f"for subject_key {item.subject_key!r} ({superseded[0]}); replacing it needs the forget right in "
                "that namespace, which this agent does not have. Write it without subject_key, or ask for forget"
            )
        # No conflict target: either unique index (content hash or subject key) may
        # be hit by a concurrent writer that committed first.
        row = insert_rows(conn, [values]).get(values["id"])
        if row is None:
            savepoint.rollback()  # un-supersede
    if row is None:
        if item.expected_version is not None:
            # A concurrent first write of the subject won ("expect none"; any other holder is locked by us).
            mismatch = versions.current_mismatch(conn, item.namespace, item.subject_key or "", item.expected_version, expectation)
            if mismatch is not None:
                raise mismatch
        existing = _active_by_hash(conn, [key]).get(key)
        if existing is None:
            raise Aborted(
                f"another write for subject key {item.subject_key!r} in {item.namespace!r} committed at the same time; retry"
            )
        return WriteOutcome(existing, deduplicated=True)
    changed.extend([values["id"], *superseded])
    return WriteOutcome(to_record(row), deduplicated=False, replaced=replaced[0] if replaced else None)


CONFIRMATION_WEIGHT = 0.25
"""Each confirming write moves a memory's confidence this share of the way to 1 (0.8 -> 0.85 -> 0.8875 ...)."""


def confirm(conn: Connection, memory_id: str) -> MemoryRecord | None:
    """Count another write of an active, non-blind memory: seen_count + 1, confidence nudged up.

    None when the memory is no longer active (forgotten, superseded, expired meanwhile). Confidence
    moves with repetition because the same statement written again, by the same agent or another,
    is evidence it still holds; it never reaches 1 by repetition alone.
    """
    row = conn.execute(
        update(memories)
        .where(memories.c.id == memory_id, memories.c.status == Status.ACTIVE.value, memories.c.blind_write.is_(False))
        .values(
            seen_count=memories.c.seen_count + 1,
            confidence=memories.c.confidence + (1 - memories.c.confidence) * CONFIRMATION_WEIGHT,
            updated_at=func.now(),
        )
        .returning(*MEMORY_COLUMNS)
    ).first()
    return to_record(row) if row is not None else None


def near_duplicate_targets(conn: Connection, ids: Sequence[str]) -> list[MemoryRecord]:
    """Of ``ids`` (dense-search candidates), the active, non-blind, unexpired memories."""
    if not ids:
        return []
    rows = conn.execute(
        select(*MEMORY_COLUMNS).where(
            memories.c.id.in_(list(ids)),
            memories.c.status == Status.ACTIVE.value,
            memories.c.blind_write.is_(False),
            or_(memories.c.expires_at.is_(None), memories.c.expires_at > func.now()),
        )
    ).all()
    return [to_record(r) for r in rows]


def _supersede_subject(conn: Connection, item: NewMemory, new_id: str) -> list[Replaced]:
    """Mark the active memory with the same subject key superseded by new_id; return it with the version it had.

    A quarantined memory supersedes nothing until it is released (release_quarantined): a poisoned
    write must not retire the memory it imitates.
    """
    if item.subject_key is None or item.quarantined:
        return []
    # The version it had while active comes from the row as locked (the UPDATE's own RETURNING shows the new one).
    held = (
        select(memories.c.id, memories.c.version)
        .where(
            memories.c.namespace == item.namespace,
            memories.c.subject_key == item.subject_key,
            memories.c.status == Status.ACTIVE.value,
        )
        .with_for_update()
        .subquery("held")
    )
    rows = conn.execute(
        update(memories)
        .where(memories.c.id == held.c.id)
        .values(status=Status.SUPERSEDED.value, superseded_by=new_id, updated_at=func.now())
        .returning(memories.c.id, held.c.version)
    ).all()
    return [Replaced(str(r[0]), int(r[1])) for r in rows]


def get(conn: Connection, memory_id: str) -> MemoryRecord | None:
    row = conn.execute(select(*MEMORY_COLUMNS).where(memories.c.id == memory_id)).first()
    return to_record(row) if row else None


def get_many(conn: Connection, memory_ids: Sequence[str]) -> list[MemoryRecord]:
    """The memories among ``memory_ids`` that exist, in no particular order."""
    if not memory_ids:
        return []
    return [to_record(r) for r in conn.execute(select(*MEMORY_COLUMNS).where(memories.c.id.in_(list(memory_ids)))).all()]


def subject_history(conn: Connection, namespace: str, subject_key: str, limit: int) -> tuple[list[MemoryRecord], bool]:
    """The newest ``limit`` versions of a subject in a namespace, oldest first, and whether older ones were left out.

    Quarantined versions are not part of the history: they never superseded anything (``_supersede_subject``).
    """
    rows = conn.execute(
        select(*MEMORY_COLUMNS)
        .where(
            memories.c.namespace == namespace,
            memories.c.subject_key == subject_key,
            memories.c.status != Status.QUARANTINED.value,
        )
        .order_by(memories.c.created_at.desc(), memories.c.id.desc())
        .limit(limit + 1)
    ).all()
    return [to_record(r) for r in reversed(rows[:limit])], len(rows) > limit


def forget(conn: Connection, ids: Sequence[str], caller: Caller, reason: str) -> list[str]:
    """Turn active or superseded memories into tombstones: content erased, who/when/why kept.

    Already forgotten ids are skipped (forgetting twice is not an error).
    """
    if not ids:
        return []
    rows = conn.execute(
        update(memories)
        .where(memories.c.id.in_(list(ids)), memories.c.status != Status.FORGOTTEN.value)
        .values(
            status=Status.FORGOTTEN.value,
            content="",
            entities=[],
            entity_keys=[],
            forgotten_at=func.now(),
            forgotten_by=caller.agent_id,
            forget_reason=reason,
            updated_at=func.now(),
        )
        .returning(memories.c.id)
    ).all()
    forgotten = [str(r[0]) for r in rows]
    enqueue_index(conn, forgotten)
    return forgotten


def select_ids_for_forget(conn: Connection, flt: MemoryFilter, allowed: Sequence[str], limit: int) -> list[str]:
    """Ids of the active memories a forget-by-filter covers, locked against concurrent writers."""
    params = filter_params(flt, allowed)
    rows = conn.execute(
        select(memories.c.id)
        .where(memories.c.status == Status.ACTIVE.value, *filter_conditions(params))
        .order_by(memories.c.id)
        .limit(limit)
        .with_for_update(),
        params,
    ).all()
    return [str(r[0]) for r in rows]


def record_recalls(conn: Connection, counts: dict[str, int]) -> None:
    """Add recall counts (batched by the caller so search does not write on its hot path).

    One statement for the whole batch: one UPDATE per memory cost a round
    trip each and, at 36 searches/s, took a third of the hub's busy time.
    Rows are locked in id order first, so concurrent flushes from several
    replicas cannot deadlock.
    """
    if not counts:
        return
    ids = sorted(counts)
    conn.execute(
        text(
            "WITH v AS (SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:ns AS int[])) AS v(id, n)), "
            "locked AS (SELECT m.id FROM memories m JOIN v ON m.id = v.id ORDER BY m.id FOR UPDATE OF m) "
            "UPDATE memories m SET recall_count = m.recall_count + v.n, last_recalled_at = now() "
            "FROM v WHERE m.id = v.id AND m.id IN (SELECT id FROM locked)"
        ),
        {"ids": ids, "ns": [counts[i] for i in ids]},
    )
