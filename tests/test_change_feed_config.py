"""MEMHUB_CHANGE_FEED_* settings and change-feed cursors, without a hub."""

from __future__ import annotations

import os

import pytest

from memhub.config import HubConfig
from memhub.errors import InvalidArgument, StartupError
from memhub.feed.config import ChangeFeedConfig
from memhub.feed.cursor import CursorCodec
from memhub.feed.model import Position


def test_defaults_and_overrides_are_read_from_the_environment() -> None:
    assert HubConfig.from_env({}).change_feed == ChangeFeedConfig()
    config = ChangeFeedConfig.from_env(
        {
            "MEMHUB_CHANGE_FEED_RETENTION_HOURS": "24",
            "MEMHUB_CHANGE_FEED_KEEPALIVE_S": "5",
            "MEMHUB_CHANGE_FEED_IDLE_TIMEOUT_S": "0",
            "MEMHUB_CHANGE_FEED_BATCH": "16",
            "MEMHUB_CHANGE_FEED_THREADS": "2",
        }
    )
    assert (config.retention_s, config.keepalive_s, config.idle_timeout_s, config.batch, config.read_threads) == (
        86_400,
        5,
        0,
        16,
        2,
    )
    assert ChangeFeedConfig.from_env({"MEMHUB_CHANGE_FEED_RETENTION_HOURS": "0"}).retention_s is None  # kept forever


@pytest.mark.parametrize(
    "name,value,problem",
    [
        ("MEMHUB_CHANGE_FEED_RETENTION_HOURS", "a week", "is not a number"),
        ("MEMHUB_CHANGE_FEED_RETENTION_HOURS", "0.001", "under a minute"),
        ("MEMHUB_CHANGE_FEED_BATCH", "1000", "out of range"),
        ("MEMHUB_CHANGE_FEED_BATCH", "2.5", "not a whole number"),
        ("MEMHUB_CHANGE_FEED_KEEPALIVE_S", "0", "out of range"),
        ("MEMHUB_CHANGE_FEED_SLOW_CONSUMER_S", "nan", "out of range"),
        ("MEMHUB_CHANGE_FEED_POLL_S", "0.001", "out of range"),
    ],
)
def test_a_malformed_setting_names_the_variable(name: str, value: str, problem: str) -> None:
    with pytest.raises(StartupError) as exc:
        HubConfig.from_env({name: value})
    assert str(exc.value).startswith(f"{name}=") and problem in str(exc.value)


def test_cursors_round_trip_and_reveal_nothing_but_equality() -> None:
    codec = CursorCodec(os.urandom(32))
    a, b = codec.seal(Position(1_000, 7)), codec.seal(Position(1_000, 8))
    assert codec.open(a) == Position(1_000, 7) and codec.seal(Position(1_000, 7)) == a  # deterministic: an event's id
    assert a != b and len(a) == len(b) <= 128 and "1000" not in a


@pytest.mark.parametrize(
    "mangle", [lambda c: c[:-1], lambda c: c[:5] + ("A" if c[5] != "A" else "B") + c[6:], lambda c: c + "=="]
)
def test_edited_truncated_or_foreign_cursors_are_refused(mangle) -> None:  # noqa: ANN001
    codec = CursorCodec(os.urandom(32))
    cursor = codec.seal(Position(42, 1))
    for bad in (mangle(cursor), CursorCodec(os.urandom(32)).seal(Position(42, 1)), "", "%%%"):
        with pytest.raises(InvalidArgument) as exc:
            codec.open(bad)
        assert exc.value.field == "cursor" and "not a cursor of this hub" in exc.value.problem
