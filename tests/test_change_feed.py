"""SubscribeChanges on the shared test hub (embedded and external Postgres): every change kind, filters,
resuming from a cursor, cursors the hub refuses, pruning, the stream limit, the audit, and the race of
transactions that commit out of order."""

from __future__ import annotations

import threading
import uuid
from datetime import datetime, timedelta, timezone

import grpc
import psycopg
import pytest
from conftest import Stack, eventually
from feed_support import Watcher, kinds
from sqlalchemy import make_url, text

from memhub.client import change_name, memory_input
from memhub.core.model import Caller, Kind, MemoryType, NewMemory
from memhub.curation import archive
from memhub.db import changes as changes_db
from memhub.db import memories as memories_db
from memhub.feed.model import Change, ChangeRecord, FeedFilter
from memhub.feed.tail import FeedTail


def _write(stack: Stack, ns: str, content: str, **kw: object) -> str:
    return stack.client.write([memory_input(ns, content, **kw)]).results[0].memory.id


def test_a_write_arrives_with_the_memory_and_a_cursor(stack: Stack, ns: str) -> None:
    with Watcher(stack.client, [ns]) as feed:
        start = feed.started()
        mid = _write(stack, f"{ns}/notes", "The staging database runs Postgres 16 since the upgrade", type="fact", tags=["db"])
        event = feed.change()
    assert change_name(event.change) == "written"
    assert event.memory.id == mid and event.memory.content.startswith("The staging database")
    assert event.memory == stack.client.get(mid)  # exactly what GetMemory shows
    assert event.cursor and event.cursor != start and event.changed_at.seconds > 0


def test_every_kind_of_change_is_delivered(stack: Stack, ns: str) -> None:
    client = stack.client
    with Watcher(client, [ns]) as feed:
        feed.started()
        old = _write(stack, ns, "The deploy window is Tuesday morning", type="rule", subject_key="ops/window")
        new = _write(stack, ns, "The deploy window is Thursday morning", type="rule", subject_key="ops/window")
        assert kinds(feed.changes(3)) == [("written", old), ("superseded", old), ("written", new)]

        client.forget(ids=[new], reason="the window moved again")
        forgotten = feed.change()
        assert (change_name(forgotten.change), forgotten.memory.id) == ("forgotten", new)
        assert forgotten.memory.content == "" and forgotten.memory.tombstone.reason == "the window moved again"

        episode = _write(stack, ns, "We rolled back the billing cache after the ERR-4312 outage", type="event")
        feed.change()
        with stack.hub.engine.begin() as conn:  # make it old enough for an archive rule
            conn.execute(text("UPDATE memories SET created_at = now() - interval '40 days' WHERE id = :id"), {"id": episode})
            rule = archive.ArchiveRule(ns, (Kind.EPISODIC,), timedelta(days=30), 3)
            assert archive.archive_due(conn, (rule,)) == [episode]
        client.restore([episode])
        assert kinds(feed.changes(2)) == [("archived", episode), ("restored", episode)]

        short = client.write([memory_input(ns, "The temporary freeze lasts one second", type="fact", ttl=timedelta(seconds=1))])
        short_id = short.results[0].memory.id
        feed.change()
        expired = None
        for _ in range(600):  # the hub's sweep marks it once it is due; run it here until then
            stack.hub.indexer.sweep_expired()
            messages = feed.quiet(0.1)
            expired = next((m.change for m in messages if m.WhichOneof("message") == "change"), None)
            if expired is not None:
                break
        assert expired is not None and (change_name(expired.change), expired.memory.id) == ("expired", short_id)


def test_consolidation_is_reported_as_such(stack: Stack, ns: str) -> None:
    episodes = [
        "Friday's deploy of checkout v2.7 failed because the build cache was cold.",
        "If the build cache is cold, the deploy takes 40 minutes, so Priya pre-warms it before a release.",
        "Priya pre-warmed the build cache and the deploy of checkout v2.8 took 6 minutes.",
    ]
    stack.client.write([memory_input(ns, e, type="event") for e in episodes], session_id="deploy-1")
    with Watcher(stack.client, [ns], changes=["consolidated"]) as feed:
        feed.started()
        result = stack.client.consolidate(ns, summariser="extractive")
        written = [g.memory.id for g in result.groups if g.written]
        assert written, result
        events = feed.changes(len(written))
    assert kinds(events) == [("consolidated", mid) for mid in written]
    assert "consolidated" in events[0].memory.tags and len(events[0].memory.links.derived_from) == 3


def test_filters_and_descendants(stack: Stack, ns: str) -> None:
    """The same filters give the same events from the hub's shared tail (a stream open while the writes happen)
    and from the table (a stream that resumes later, from before them)."""
    filters = {"types": ["fact", "rule"], "tags": ["deploy"]}
    with Watcher(stack.client, [f"{ns}/team"], **filters) as feed:
        cursor = feed.started()
        _write(stack, f"{ns}/other", "Deploys need two approvals from the team", type="rule", tags=["deploy"])  # outside
        _write(stack, f"{ns}/team", "We met for lunch on Friday at noon", type="event", tags=["deploy"])  # type
        _write(stack, f"{ns}/team", "Deploys are blocked during the audit", type="rule", tags=["audit"])  # tag
        wanted = _write(stack, f"{ns}/team/ops", "Deploys freeze on Fridays after 3pm", type="rule", tags=["deploy", "ops"])
        last = _write(stack, f"{ns}/team", "Deploys resume on Monday mornings", type="fact", tags=["deploy"])
        live = feed.changes(2)
    with Watcher(stack.client, [f"{ns}/team"], cursor=cursor, **filters) as again:
        again.started()
        resumed = again.changes(2)
    assert [e.memory.id for e in live] == [wanted, last]  # the only matches; one from a descendant namespace
    assert [(e.memory.id, e.cursor) for e in resumed] == [(e.memory.id, e.cursor) for e in live]
    # Both ways a stream takes changes select the same ones: the table (SQL) and the hub's shared tail (Python).
    start = stack.hub.feed.codec.open(cursor)

    def table_read(flt: FeedFilter) -> list[ChangeRecord]:
        with stack.hub.engine.connect() as conn, conn.begin():
            conn.execute(text("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ"))
            return list(changes_db.read(conn, start, flt, None, scan_limit=2000, limit=100).changes)

    # The table (and the tail, which reads it) serve changes below the oldest transaction still open on the server,
    # the stable horizon: on a shared Postgres another client's open transaction may hold it back a moment.
    team = FeedFilter(namespaces=(f"{ns}/team",), types=(MemoryType.FACT, MemoryType.RULE), tags_any=("deploy",))
    eventually(lambda: len(table_read(team)) == 2, "the writes are below the stable horizon")
    selected = []
    for flt in (
        team,
        FeedFilter(namespaces=(ns,), kinds=(Kind.EPISODIC,)),
        FeedFilter(namespaces=(f"{ns}/other", f"{ns}/team/ops"), changes=(Change.WRITTEN,)),
        FeedFilter(namespaces=(ns,), changes=(Change.FORGOTTEN,)),
    ):
        from_table = table_read(flt)
        tail = FeedTail(stack.hub.engine, stack.hub.config.change_feed)
        tail.base = tail.head = start
        tail.advance()
        taken = tail.take(start, flt, 100)
        assert taken is not None and [c.memory.id for c in taken.changes] == [c.memory.id for c in from_table], flt
        selected.append(len(from_table))
    assert selected == [2, 1, 2, 0]


def test_resuming_from_a_cursor_misses_nothing_and_repeats_with_the_same_cursor(stack: Stack, ns: str) -> None:
    ids = []
    with Watcher(stack.client, [ns]) as feed:
        feed.started()
        for i in range(3):
            ids.append(_write(stack, ns, f"Release note {i}: the importer handles {i + 2} formats now", type="fact"))
        first = feed.changes(3)
    # Written while nobody listened.
    for i in range(3, 5):
        ids.append(_write(stack, ns, f"Release note {i}: the importer handles {i + 2} formats now", type="fact"))
    with Watcher(stack.client, [ns], cursor=first[1].cursor) as again:
        assert again.started() == first[1].cursor  # the first heartbeat repeats where the stream starts
        resumed = again.changes(3)
    assert [e.memory.id for e in first] == ids[:3]
    assert [e.memory.id for e in resumed] == ids[2:]
    # The one seen on both streams is the same event: the same cursor, so a subscriber can skip it.
    assert resumed[0].cursor == first[2].cursor


def test_a_heartbeat_cursor_resumes_after_changes_made_while_disconnected(stack: Stack, ns: str) -> None:
    with Watcher(stack.client, [ns]) as feed:
        cursor = feed.started()
    mid = _write(stack, ns, "The nightly backup moved to 02:00 UTC", type="fact")
    with Watcher(stack.client, [ns], cursor=cursor) as feed:
        feed.started()
        assert feed.change().memory.id == mid


@pytest.mark.parametrize(
    "cursor,problem",
    [
        ("not-a-cursor", "is not a cursor of this hub"),
        ("A" * 44, "is not a cursor of this hub"),
        ("x" * 129, "at most 128"),
    ],
)
def test_malformed_cursors_are_invalid_arguments(stack: Stack, ns: str, cursor: str, problem: str) -> None:
    with Watcher(stack.client, [ns], cursor=cursor) as feed:
        err = feed.ended()
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert err.details().startswith("cursor:") and problem in err.details()


def test_an_edited_cursor_is_refused(stack: Stack, ns: str) -> None:
    with Watcher(stack.client, [ns]) as feed:
        cursor = feed.started()
    flipped = cursor[:10] + ("B" if cursor[10] != "B" else "C") + cursor[11:]
    with Watcher(stack.client, [ns], cursor=flipped) as feed:
        assert feed.ended().code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize(
    "namespaces,options,field",
    [(["Bad/Upper"], {}, "namespaces[0]"), ([], {"tags": ["has space"]}, "tags[0]"), ([], {"types": ["fact"] * 17}, "types")],
)
def test_bad_filters_name_the_field(stack: Stack, namespaces: list[str], options: dict, field: str) -> None:
    with Watcher(stack.client, namespaces, **options) as feed:
        err = feed.ended()
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT and err.details().startswith(field), err.details()


def test_a_cursor_older_than_the_retention_is_out_of_range_and_says_how_to_resync(stack: Stack, ns: str) -> None:
    with Watcher(stack.client, [ns]) as feed:
        cursor = feed.started()
        _write(stack, ns, "The cache TTL is 15 minutes for the pricing service", type="fact")
        feed.change()
    # As the periodic job would a retention later.
    assert stack.hub.feed.prune(now=datetime.now(timezone.utc) + timedelta(days=30)) >= 1
    with Watcher(stack.client, [ns], cursor=cursor) as feed:
        err = feed.ended()
    assert err.code() == grpc.StatusCode.OUT_OF_RANGE
    assert "pruned" in err.details() and "ListMemories" in err.details() and "without a cursor" in err.details()
    with Watcher(stack.client, [ns]) as feed:  # the resync the message describes starts cleanly
        feed.started()


def test_an_agent_may_hold_only_its_stream_limit(stack: Stack, ns: str) -> None:
    agent = f"lim{uuid.uuid4().hex[:8]}"
    client = stack.client_as(agent)
    limit = stack.hub.config.limits.streams_per_agent
    open_ = [Watcher(client, [ns]) for _ in range(limit)]
    try:
        for w in open_:
            w.started()
        with Watcher(client, [ns]) as extra:
            err = extra.ended()
        assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and "open streams" in err.details()
        with Watcher(stack.client, [ns]) as other:  # another agent is not affected
            other.started()
    finally:
        for w in open_:
            w.close()
    client.close()


def test_the_subscription_is_audited(stack: Stack, ns: str) -> None:
    agent = f"aud{uuid.uuid4().hex[:8]}"
    client = stack.client_as(agent)
    _write(stack, ns, "A namespace for the whole-hub subscription to count", type="fact")
    with Watcher(client, [ns]) as feed:
        feed.started()
    with Watcher(client) as everything:
        everything.started()
    client.close()
    stack.hub.audit.flush()
    with stack.hub.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT action, namespace, decision, rpc FROM audit_log WHERE agent_id = :a ORDER BY id"), {"a": agent}
        ).all()
    rpc = "memhub.v1.ChangeFeedService/SubscribeChanges"
    assert [tuple(r) for r in rows] == [
        ("read", ns, "allow", rpc),
        ("subscribe", ns, "allow", rpc),
        ("subscribe", "", "allow", rpc),  # every namespace: one entry, like a search
    ]
    with stack.hub.engine.connect() as conn:
        detail = conn.execute(
            text("SELECT detail FROM audit_log WHERE agent_id = :a AND namespace = '' AND action = 'subscribe'"), {"a": agent}
        ).scalar_one()
    assert detail["namespaces"] >= 1


def _new(ns: str, content: str) -> NewMemory:
    return NewMemory(ns, Kind.SEMANTIC, MemoryType.FACT, content, (), (), 3, 0.8, None, None, None, None, None, ())


@pytest.mark.parametrize("a_numbered_first", [True, False], ids=["a-has-the-lower-seq", "a-has-the-higher-seq"])
def test_a_transaction_that_commits_after_a_later_one_is_not_skipped(stack: Stack, ns: str, a_numbered_first: bool) -> None:
    """The race a plain sequence number loses. A starts first and commits last; B commits in between.

    With A numbered first, a reader going by seq alone would deliver B, move its cursor past A's
    number, and never deliver A. The feed holds B back while A runs, then delivers both; and a
    resume from the first event's cursor delivers the second.
    """
    caller = Caller("tester", groups=("testers",))
    model = stack.hub.embedder.model_id
    a_text, b_text = "Transaction A started first and commits last", "Transaction B started second and commits first"
    # The namespace exists before: two transactions creating it would queue on its row (or the namespace quota's
    # lock), and B could not commit while A runs.
    _write(stack, ns, "The namespace of the race exists before it starts", type="fact")
    with Watcher(stack.client, [ns]) as feed:
        feed.started()
        with stack.hub.engine.connect() as conn_a, stack.hub.engine.connect() as conn_b:
            tx_a = conn_a.begin()
            conn_a.execute(text("SELECT pg_current_xact_id()"))  # A's transaction id is taken now, before B's
            if a_numbered_first:
                [a] = memories_db.insert_memories(conn_a, caller, "", [_new(ns, a_text)], model)
            tx_b = conn_b.begin()
            [b] = memories_db.insert_memories(conn_b, caller, "", [_new(ns, b_text)], model)
            tx_b.commit()
            if not a_numbered_first:
                [a] = memories_db.insert_memories(conn_a, caller, "", [_new(ns, a_text)], model)
            held = feed.quiet(1.5)  # B is committed, A still running
            tx_a.commit()
        events = feed.until({a.memory.id, b.memory.id})
    # (A stream "from now" may also repeat a change committed just before it opened: the setup write.)
    assert b.memory.id not in [m.change.memory.id for m in held if m.WhichOneof("message") == "change"]
    with stack.hub.engine.connect() as conn:
        seq = dict(
            conn.execute(
                text("SELECT memory_id::text, seq FROM memory_changes WHERE memory_id IN (:a, :b)"),
                {"a": a.memory.id, "b": b.memory.id},
            ).all()
        )
    assert (seq[a.memory.id] < seq[b.memory.id]) is a_numbered_first
    order = [e.memory.id for e in events if e.memory.id in (a.memory.id, b.memory.id)]
    assert order == [a.memory.id, b.memory.id]  # A's transaction is older: its change comes first
    with Watcher(stack.client, [ns], cursor=events[0].cursor) as again:
        again.started()
        assert again.change().memory.id == b.memory.id


def test_a_transaction_left_open_in_another_database_does_not_stall_the_feed(stack: Stack, ns: str) -> None:
    """xmin counts every database of the server; after a moment held back, the feed bounds itself by its own."""
    other = make_url(stack.hub.database_url).set(database="postgres", drivername="postgresql")
    with psycopg.connect(other.render_as_string(hide_password=False)) as elsewhere:
        elsewhere.execute("SELECT pg_current_xact_id()")  # holds a transaction id until the rollback below
        with Watcher(stack.client, [ns]) as feed:
            feed.started()
            mid = _write(stack, ns, "Written while another database has a transaction open", type="fact")
            event = feed.change()
        elsewhere.rollback()
    assert event.memory.id == mid


def test_a_stream_from_now_is_not_sent_earlier_writes_while_another_database_holds_a_transaction(stack: Stack, ns: str) -> None:
    """Now is this database's own bound: another database's open transaction keeps the server's xmin below the
    write made before the stream opened, and the stream was sent that write (seen in CI: another test worker's
    transaction, and an example's feed printed the note written before it subscribed)."""
    other = make_url(stack.hub.database_url).set(database="postgres", drivername="postgresql")
    with psycopg.connect(other.render_as_string(hide_password=False)) as elsewhere:
        elsewhere.execute("SELECT pg_current_xact_id()")  # holds a transaction id until the rollback below
        _write(stack, ns, "Written before the stream opened, while another database waits", type="fact")
        with Watcher(stack.client, [ns]) as feed:
            feed.started()
            after = _write(stack, ns, "Written after the stream opened", type="fact")
            first = feed.change()
        elsewhere.rollback()
    assert first.memory.id == after, "the write made before the stream opened was sent"


def test_out_of_order_commits_from_many_writers_are_all_delivered(stack: Stack, ns: str) -> None:
    """Concurrent writers commit in every order; the subscriber disconnects and resumes from its cursor again and
    again meanwhile, and ends up with every memory."""
    writers, per_writer = 6, 15
    ids: set[str] = set()
    lock = threading.Lock()
    start = threading.Barrier(writers)

    def write(w: int) -> None:
        client = stack.client_as("tester")
        start.wait()
        for _ in range(per_writer):
            token = uuid.uuid4().hex  # distinct words: nothing is folded into an earlier memory
            result = client.write([memory_input(ns, f"Writer {w} saw reading {token} during the load test", type="fact")])
            assert not result.results[0].deduplicated
            with lock:
                ids.add(result.results[0].memory.id)
        client.close()

    with Watcher(stack.client, [ns]) as feed:
        cursor = feed.started()
    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    seen: set[str] = set()
    reconnects = 0
    while any(t.is_alive() for t in threads) or not ids <= seen:
        reconnects += 1
        with Watcher(stack.client, [ns], cursor=cursor) as feed:
            feed.started()
            for message in [feed.next()] + feed.quiet(0.3):  # a few messages, then drop the stream
                if message.WhichOneof("message") == "change":
                    seen.add(message.change.memory.id)
                    cursor = message.change.cursor
                else:
                    cursor = message.heartbeat.cursor
        assert reconnects < 2000, f"{len(ids - seen)} memories never arrived"
    for t in threads:
        t.join()
    assert len(ids) == writers * per_writer and ids <= seen and reconnects > 1
