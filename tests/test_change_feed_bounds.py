"""What a change-feed stream may cost the hub: a client that stops reading is dropped with its resume cursor
and never makes the hub hold more than one batch; keepalive heartbeats; the idle timeout; a hub that stops
ends its streams with UNAVAILABLE and the cursor to resume from.

Each hub here is a hub of its own (external Postgres, its own Milvus Lite file) with short feed settings.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import psycopg
import pytest
from conftest import eventually
from feed_support import Watcher
from security.hubs import SpecialStack, special_hub
from sqlalchemy import make_url

from memhub.client import memory_input, resume_cursor
from memhub.feed.config import ChangeFeedConfig
from memhub.v1 import changes_pb2 as cpb
from memhub.v1 import changes_pb2_grpc as cpb_grpc

SLOW_S = 2.0
BATCH = 8


@pytest.fixture(scope="module")
def boundhub(tmp_path_factory: pytest.TempPathFactory, external_pg_admin_url: str) -> Iterator[SpecialStack]:
    folder: Path = tmp_path_factory.mktemp("feed-bounds")
    config = ChangeFeedConfig(keepalive_s=1.0, poll_interval_s=0.2, slow_consumer_s=SLOW_S, batch=BATCH, idle_timeout_s=0)
    with special_hub(folder, external_pg_admin_url, change_feed=config) as stack:
        yield stack


def _content(i: int) -> str:
    # About 6 KB, distinct words (nothing is folded into an earlier memory): the stream's bytes fill the client's
    # flow-control window quickly.
    return f"Measurement {i}: " + " ".join(uuid.uuid4().hex for _ in range(180))


def test_a_client_that_stops_reading_is_dropped_and_the_hub_holds_at_most_one_batch(boundhub: SpecialStack) -> None:
    ns = f"slow{uuid.uuid4().hex[:8]}"
    # A client with a small receive window that never grows: once it stops reading, the hub's sends stall.
    channel = grpc.insecure_channel(
        boundhub.address, options=[("grpc.http2.lookahead_bytes", 16 * 1024), ("grpc.http2.bdp_probe", 0)]
    )
    stub = cpb_grpc.ChangeFeedServiceStub(channel)
    call = stub.SubscribeChanges(cpb.SubscribeChangesRequest(namespaces=[ns]), metadata=boundhub.client.metadata)
    assert next(call).WhichOneof("message") == "heartbeat"
    feed = boundhub.hub.feed
    dropped_before = feed.dropped_streams()
    ids: list[str] = []
    most_held = 0
    for start in range(0, 120, 10):
        reply = boundhub.client.write([memory_input(ns, _content(i), type="fact") for i in range(start, start + 10)])
        ids += [r.memory.id for r in reply.results]
        most_held = max(most_held, feed.held_events())

    def dropped() -> bool:
        nonlocal most_held
        most_held = max(most_held, feed.held_events())
        return feed.dropped_streams() > dropped_before

    eventually(dropped, "the hub dropped the stream of the client that stopped reading")
    # Writes after the drop cost the stalled stream nothing more.
    for start in range(120, 160, 10):
        reply = boundhub.client.write([memory_input(ns, _content(i), type="fact") for i in range(start, start + 10)])
        ids += [r.memory.id for r in reply.results]
        most_held = max(most_held, feed.held_events())
    assert most_held <= BATCH and feed.held_events() == 0 and feed.open_streams() == 0
    received, err = [], None
    try:
        for message in call:  # what was already on its way arrives, then the status
            if message.WhichOneof("message") == "change":
                received.append(message.change)
    except grpc.RpcError as exc:
        err = exc
    channel.close()
    assert err is not None and err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert f"accepted no message for {SLOW_S:g} s" in err.details() and "subscribe again with" in err.details()
    assert received and len(received) < len(ids)  # it was dropped part way
    cursor = resume_cursor(err)
    # The hub names the last message whose send completed: the last one received, or the one before it when
    # the stalled send had already reached the client.
    assert cursor in [e.cursor for e in received[-2:]] and cursor in err.details()
    with Watcher(boundhub.client, [ns], cursor=cursor) as rest:
        rest.started()
        later = rest.until(set(ids) - {e.memory.id for e in received})
    assert {e.memory.id for e in received} | {e.memory.id for e in later} == set(ids)


def test_a_quiet_stream_gets_heartbeats_whose_cursor_resumes_it(boundhub: SpecialStack) -> None:
    ns = f"quiet{uuid.uuid4().hex[:8]}"
    with Watcher(boundhub.client, [ns]) as feed:
        feed.started()
        beats = [feed.next(), feed.next()]  # keepalive 1 s, nothing else to send
        assert [m.WhichOneof("message") for m in beats] == ["heartbeat", "heartbeat"]
    mid = boundhub.client.write([memory_input(ns, "Heartbeats carry a usable cursor", type="fact")]).results[0].memory.id
    with Watcher(boundhub.client, [ns], cursor=beats[-1].heartbeat.cursor) as feed:
        feed.started()
        assert feed.change().memory.id == mid


def test_an_idle_stream_is_closed_with_its_cursor(tmp_path_factory: pytest.TempPathFactory, external_pg_admin_url: str) -> None:
    folder = tmp_path_factory.mktemp("feed-idle")
    config = ChangeFeedConfig(keepalive_s=1.0, poll_interval_s=0.2, idle_timeout_s=3.0)
    with special_hub(folder, external_pg_admin_url, change_feed=config) as stack:
        ns = f"idle{uuid.uuid4().hex[:8]}"
        with Watcher(stack.client, [ns]) as feed:
            feed.started()
            err = feed.ended()
        assert err.code() == grpc.StatusCode.DEADLINE_EXCEEDED and "no change for 3 s" in err.details()
        cursor = resume_cursor(err)
        assert cursor and cursor in err.details()
        mid = stack.client.write([memory_input(ns, "Written after the idle stream closed", type="fact")]).results[0].memory.id
        with Watcher(stack.client, [ns], cursor=cursor) as feed:
            feed.started()
            assert feed.change().memory.id == mid


def test_a_stopping_hub_ends_its_streams_with_unavailable_and_the_cursor(
    tmp_path_factory: pytest.TempPathFactory, external_pg_admin_url: str
) -> None:
    folder = tmp_path_factory.mktemp("feed-stop")
    with special_hub(folder, external_pg_admin_url, change_feed=ChangeFeedConfig(poll_interval_s=0.2)) as stack:
        ns = f"stop{uuid.uuid4().hex[:8]}"
        feed = Watcher(stack.client, [ns])
        feed.started()
        mid = stack.client.write([memory_input(ns, "Written before the hub stopped", type="fact")]).results[0].memory.id
        assert feed.change().memory.id == mid
        assert stack.server is not None
        stopping = threading.Thread(target=lambda: stack.server.stop(grace=30))
        began = time.monotonic()
        stopping.start()
        err = feed.ended()
        stopping.join(60)
        waited = time.monotonic() - began
        feed.close()
    assert err.code() == grpc.StatusCode.UNAVAILABLE and "the hub is stopping" in err.details()
    assert resume_cursor(err) and resume_cursor(err) in err.details()
    assert not stopping.is_alive() and waited < 30  # the streams did not hold the stop for its whole grace


def test_a_stream_rides_out_postgres_dropping_every_connection(boundhub: SpecialStack, external_pg_admin_url: str) -> None:
    """What a Postgres restart or failover does to the hub: every backend of its database ends, the LISTEN one too.
    The open stream stays open and hears the next write."""
    ns = f"heal{uuid.uuid4().hex[:8]}"
    database = make_url(boundhub.hub.database_url).database
    with Watcher(boundhub.client, [ns]) as feed:
        feed.started()
        with psycopg.connect(external_pg_admin_url, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (database,),
            ).fetchone()[0]
        assert killed > 0
        mid = None
        for _ in range(20):  # a call right after the kill may fail once, with UNAVAILABLE
            try:
                mid = boundhub.client.write([memory_input(ns, "Written after Postgres dropped every connection", type="fact")])
                break
            except grpc.RpcError as exc:
                assert exc.code() == grpc.StatusCode.UNAVAILABLE
                time.sleep(0.5)
        assert mid is not None
        event = feed.change()
    assert event.memory.id == mid.results[0].memory.id
