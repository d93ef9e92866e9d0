"""The change feed's table: reading changes in a gap-free order, pruning old ones, the cursor key.

Rows come from triggers on memories (migration 0014), in the changing transaction itself.

Why not simply "seq > cursor": a sequence number is taken when the row is inserted, not when its
transaction commits. Transaction A takes seq 10, transaction B takes seq 11 and commits first; a
reader then sees 11 without 10, moves its cursor to 11, and when A commits, 10 is behind the
cursor and never delivered. Waiting for gaps to fill does not work either: a rolled-back
transaction leaves a gap forever, indistinguishable from a slow one.

What the feed does instead: every row records its transaction's id (xid8, 64 bits, never wraps),
and a read delivers only rows whose transaction id is below the xmin of the reader's own snapshot
(``pg_snapshot_xmin(pg_current_snapshot())``): every transaction below xmin has finished, so all
of its rows are visible now or never will be. Rows are delivered in (txid, seq) order and the cursor
is a (txid, seq) position, so a transaction that commits later can only add rows after the cursor,
never before it: it is still running, so its id is at least xmin, and the cursor stays below xmin.
The price: a change waits until every transaction older than its own has finished. xmin counts every
database of the server, so a transaction left open in another database (a shared managed server, an
idle psql session) would hold the feed back for as long as it stays open. So a reader that has been
held back for a while switches to a bound of this database's own (``scoped_bound``): the lowest
in-progress transaction of the snapshot that is not known to belong to another database (pg_locks
names each running transaction's backend, pg_stat_activity that backend's database; both readable
by any user). It costs a scan of pg_locks, which is why it is not the default; it errs on the safe
side (a transaction that ended between the snapshot and that scan counts as this database's), and a
transaction in this database, which might still write a change, always holds the feed back.

The alternative considered, numbering changes in commit order (a commit-time trigger taking one
lock and then the next number), makes seq alone gap-free but serialises every writing commit of
every replica on that lock, WAL flush included; this way writers never wait for each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from itertools import takewhile

from sqlalchemy import Connection, Text, any_, bindparam, cast, delete, exists, func, select, text, true, tuple_, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.sql.elements import ColumnElement

from memhub.db.memory_rows import subtree_condition, to_record
from memhub.db.schema import MEMORY_COLUMNS, XID8, change_feed_horizon, change_feed_key, memories, memory_changes, namespaces
from memhub.feed.model import Change, ChangeBatch, ChangeRecord, FeedFilter, Position

_C = memory_changes.c
_XMIN = select(func.pg_snapshot_xmin(func.pg_current_snapshot())).scalar_subquery()
"""The oldest transaction still running when the statement's snapshot was taken: everything below it is final."""
_DATABASE_BOUND = text(
    "SELECT coalesce(("
    "  SELECT min(x) FROM pg_snapshot_xip(pg_current_snapshot()) AS x"
    "  WHERE (x::text::numeric % 4294967296)::text NOT IN ("
    "    SELECT l.transactionid::text FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
    "    WHERE l.locktype = 'transactionid' AND l.mode = 'ExclusiveLock' AND l.granted"
    "      AND a.datid IS NOT NULL AND a.datid <> (SELECT oid FROM pg_database WHERE datname = current_database()))"
    "), pg_snapshot_xmax(pg_current_snapshot()))::text"
)
"""The oldest transaction of the snapshot still running that may be this database's (xmax when there is none):
everything below it that this database holds is final. A running transaction's own xid lock names its backend."""

CONSOLIDATION_CAUSE = "consolidated"


def _xid(value: int) -> ColumnElement:
    return cast(cast(str(value), Text), XID8)


def _after(position: Position) -> ColumnElement[bool]:
    return tuple_(_C.txid, _C.seq) > tuple_(_xid(position.txid), position.seq)


def _position(txid: str, seq: int) -> Position:
    return Position(int(txid), int(seq))


def mark_consolidation(conn: Connection) -> None:
    """Record the memories this transaction inserts as consolidated rather than written (the triggers read it)."""
    conn.execute(text("SELECT set_config('memhub.change_cause', :cause, true)"), {"cause": CONSOLIDATION_CAUSE})


def head(conn: Connection) -> Position:
    """Now, as a position: before every change a reader cannot deliver yet, after all it can.

    Taken at this database's own bound, not the server's xmin: a transaction left open in another database (another
    tenant of a shared server, a test's scratch database) put xmin below changes written here and committed before
    the subscription, and a stream that asked to start from now was then sent them. Every change of this database
    below this bound is final, so none is skipped that a reader could not already see. One pg_locks scan per new
    stream."""
    return Position(int(conn.execute(_DATABASE_BOUND).scalar_one()), 0)


def horizon(conn: Connection) -> Position:
    """Every change at or before this position was pruned."""
    row = conn.execute(
        select(cast(change_feed_horizon.c.txid, Text), change_feed_horizon.c.seq).where(change_feed_horizon.c.id == 1)
    ).one()
    return _position(row[0], row[1])


def oldest_transaction(conn: Connection) -> str | None:
    """The session holding the oldest transaction id on the server (what holds the feed back), as far as this
    user may see: database, pid, state, age, application name."""
    row = conn.execute(
        text(
            "SELECT datname, pid, state, now() - xact_start AS age, application_name FROM pg_stat_activity "
            "WHERE backend_xid IS NOT NULL ORDER BY age(backend_xid) DESC LIMIT 1"
        )
    ).first()
    if row is None:
        return None
    return (
        f"database {row.datname!r}, pid {row.pid}, {row.state or 'state hidden'}, running for {row.age}, {row.application_name!r}"
    )


def cursor_key(conn: Connection) -> bytes:
    """The 256-bit key cursors are sealed with (migration 0014 made it; every replica reads the same)."""
    return bytes.fromhex(conn.execute(select(change_feed_key.c.secret).where(change_feed_key.c.id == 1)).scalar_one())


def _memory_conditions(flt: FeedFilter) -> list[ColumnElement[bool]]:
    m = memories.c
    out: list[ColumnElement[bool]] = []
    if flt.kinds:
        out.append(m.kind == any_(bindparam("f_kinds", [k.value for k in flt.kinds], type_=ARRAY(Text))))
    if flt.types:
        out.append(m.type == any_(bindparam("f_types", [t.value for t in flt.types], type_=ARRAY(Text))))
    if flt.tags_any:
        out.append(m.tags.overlap(bindparam("f_tags", list(flt.tags_any), type_=ARRAY(Text))))
    return out


def read(
    conn: Connection,
    after: Position,
    flt: FeedFilter,
    scope: ColumnElement[bool] | None,
    *,
    scan_limit: int,
    limit: int,
    scoped_bound: bool = False,
) -> ChangeBatch:
    """The changes after ``after`` that match ``flt`` and ``scope`` (a condition on namespaces.name), up to ``limit``.

    Must run in a REPEATABLE READ transaction: its statements then share one snapshot, and the bound
    (xmin, or this database's own with ``scoped_bound``) is taken once, so the edge the second finds is
    the edge of the rows the third returns. At most ``scan_limit`` changes (matching the namespace and
    change filters) are looked at per read, so a subscriber far behind with a narrow filter cannot make
    one query of unbounded size; the next read goes on from there.
    """
    if scoped_bound:
        bound = int(conn.execute(_DATABASE_BOUND).scalar_one())
    else:
        bound = int(conn.execute(select(cast(_XMIN, Text))).scalar_one())
    below = _xid(bound)
    scan_conditions = [_after(after), _C.txid < below]
    if flt.namespaces:
        scan_conditions.append(subtree_condition(_C.namespace, flt.namespaces))
    if flt.changes:
        scan_conditions.append(_C.event == any_(bindparam("f_changes", [c.value for c in flt.changes], type_=ARRAY(Text))))
    scan = select(_C.seq, _C.txid, _C.event, _C.changed_at, _C.memory_id)
    if scope is not None:
        scan = scan.join_from(memory_changes, namespaces, namespaces.c.name == _C.namespace).where(scope)
    scanned = scan.where(*scan_conditions).order_by(_C.txid, _C.seq).limit(scan_limit).cte("scanned")
    s = scanned.c
    last = select(cast(s.txid, Text), s.seq).order_by(s.txid.desc(), s.seq.desc()).limit(1).subquery()
    edge = conn.execute(
        select(
            select(func.count()).select_from(scanned).scalar_subquery().label("scanned"),
            select(last.c[0]).scalar_subquery().label("last_txid"),
            select(last.c[1]).scalar_subquery().label("last_seq"),
            exists().where(_C.txid >= below).label("held_back"),
            select(cast(change_feed_horizon.c.txid, Text)).where(change_feed_horizon.c.id == 1).scalar_subquery().label("h_txid"),
            select(change_feed_horizon.c.seq).where(change_feed_horizon.c.id == 1).scalar_subquery().label("h_seq"),
        )
    ).one()
    rows = conn.execute(
        select(
            cast(s.txid, Text).label("ch_txid"),
            s.seq.label("ch_seq"),
            s.event.label("ch_event"),
            s.changed_at.label("ch_changed_at"),
            *MEMORY_COLUMNS,
        )
        .select_from(scanned.join(memories, memories.c.id == s.memory_id))
        .where(true(), *_memory_conditions(flt))
        .order_by(s.txid, s.seq)
        .limit(limit)
    ).all()
    changes = tuple(
        ChangeRecord(_position(r.ch_txid, r.ch_seq), Change(r.ch_event), r.ch_changed_at, to_record(r))
        for r in rows
        if r.ch_event in _KNOWN
    )
    if len(rows) >= limit:
        next_position, full = _position(rows[-1].ch_txid, rows[-1].ch_seq), True
    elif edge.scanned >= scan_limit:
        next_position, full = _position(edge.last_txid, edge.last_seq), True
    else:
        # Everything below the bound was looked at: the next read may start there (never behind `after`).
        next_position, full = max(after, Position(bound, 0)), False
    return ChangeBatch(changes, next_position, full, bool(edge.held_back), _position(edge.h_txid, edge.h_seq))


_KNOWN = frozenset(c.value for c in Change)


def prune(conn: Connection, cutoff: datetime, batch: int) -> int:
    """Delete up to ``batch`` of the oldest changes, those recorded before ``cutoff``; returns how many.

    Only a prefix in feed order goes (a young change stops the step, older ones after it wait), and
    only finished transactions' rows, so the horizon is exact: every change at or before it is gone,
    every later one is kept, and no transaction can still add a row before it. Replicas pruning at
    once take turns on the horizon row.
    """
    current = conn.execute(
        select(cast(change_feed_horizon.c.txid, Text), change_feed_horizon.c.seq)
        .where(change_feed_horizon.c.id == 1)
        .with_for_update()
    ).one()
    rows = conn.execute(
        select(cast(_C.txid, Text), _C.seq, _C.changed_at < cutoff).where(_C.txid < _XMIN).order_by(_C.txid, _C.seq).limit(batch)
    ).all()
    old: Sequence = list(takewhile(lambda r: r[2], rows))
    if not old:
        return 0
    last = _position(old[-1][0], old[-1][1])
    deleted = conn.execute(delete(memory_changes).where(tuple_(_C.txid, _C.seq) <= tuple_(_xid(last.txid), last.seq))).rowcount
    if last > _position(current[0], current[1]):
        conn.execute(
            update(change_feed_horizon)
            .where(change_feed_horizon.c.id == 1)
            .values(txid=_xid(last.txid), seq=last.seq, pruned_at=func.now())
        )
    return deleted
