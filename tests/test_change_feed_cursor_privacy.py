"""Cursors tell a subscriber nothing of namespaces it cannot read (issue 22).

The keepalive cursor used to be the stream's scan position, which moves over every change in the
hub: a subscriber comparing two heartbeats learned whether anybody wrote anywhere in between (one
bit of hub-wide activity per keepalive window). Now a heartbeat repeats what the subscriber already
knows until it is sent something, and resuming from any heartbeat still delivers every readable
event. The hub is test_change_feed_rights's: wanda (group watchers) reads and subscribes under
"watched" only; the tester writes everywhere.
"""

from __future__ import annotations

import uuid

from feed_support import Watcher
from test_change_feed_rights import FeedHub, feedhub  # noqa: F401 - the module's hub, shared as a fixture

from memhub.client import memory_input


def _id() -> str:
    return uuid.uuid4().hex[:10]


def _heartbeats(feed: Watcher, count: int) -> list[str]:
    """The cursors of the next ``count`` heartbeats (a readable change in between fails the test)."""
    out = []
    while len(out) < count:
        message = feed.next()
        assert message.WhichOneof("message") == "heartbeat", message
        out.append(message.heartbeat.cursor)
    return out


def _unreadable_write_seen(hub: FeedHub, secret: str, content: str) -> None:
    """Write in ``secret`` and wait until the feed has it (the tester's own stream delivers it): every stream's next
    step reads past it."""
    with Watcher(hub.stack.client, [secret]) as writer_feed:
        writer_feed.started()
        mid = hub.stack.client.write([memory_input(secret, content, type="fact")]).results[0].memory.id
        assert writer_feed.change().memory.id == mid


def test_keepalive_cursors_do_not_move_on_changes_the_subscriber_cannot_read(feedhub: FeedHub) -> None:  # noqa: F811
    run = _id()
    watched, secret = f"watched/{run}", f"shared/{run}"
    with feedhub.client("wanda", "watchers") as wanda:
        # Named namespace and "all I may read": the scan passes over the secret write either way.
        for namespaces in ([watched], []):
            with Watcher(wanda, namespaces) as feed:
                start = feed.started()
                assert _heartbeats(feed, 1) == [start]
                _unreadable_write_seen(feedhub, secret, f"The vault code is {uuid.uuid4().hex[:6]}")
                # The step before the second heartbeat began after the write was final: it read past it.
                assert _heartbeats(feed, 2) == [start, start], namespaces


def test_resuming_from_a_keepalive_cursor_loses_no_readable_event(feedhub: FeedHub) -> None:  # noqa: F811
    run = _id()
    watched, secret = f"watched/{run}", f"shared/{run}"
    writer = feedhub.stack.client
    with feedhub.client("wanda", "watchers") as wanda:
        with Watcher(wanda, [watched]) as feed:
            feed.started()
            first = writer.write([memory_input(watched, "The on-call rota changes on Mondays", type="fact")])
            assert feed.change().memory.id == first.results[0].memory.id
            _unreadable_write_seen(feedhub, secret, "Payroll runs on the 25th")
            cursor = _heartbeats(feed, 2)[-1]
        # Written while wanda was away: one readable, one not.
        _unreadable_write_seen(feedhub, secret, "The spare keys are in drawer 3")
        later = writer.write([memory_input(watched, "The standup moved to 9:30", type="fact")]).results[0].memory.id
        with Watcher(wanda, [watched], cursor=cursor) as again:
            assert again.started() == cursor  # a resumed stream's first heartbeat is the cursor it was given
            assert again.change().memory.id == later  # nothing readable lost, nothing delivered twice


def test_fresh_streams_start_from_cursors_that_never_compare_equal(feedhub: FeedHub) -> None:  # noqa: F811
    """Two streams opened without a cursor start at the head of the feed: were their cursors the sealed head, two
    equal ones would say nothing happened anywhere between the two opens."""
    with feedhub.client("wanda", "watchers") as wanda:
        with Watcher(wanda, [f"watched/{_id()}"]) as one, Watcher(wanda, [f"watched/{_id()}"]) as two:
            assert one.started() != two.started()
