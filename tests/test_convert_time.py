"""Replies set their timestamps without protobuf's FromDatetime (memhub/api/convert.py): the same values, always."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from google.protobuf.timestamp_pb2 import Timestamp

from memhub.api.convert import _set_time


def _datetimes(count: int) -> list[datetime]:
    rng = random.Random(5)
    out = [datetime(1970, 1, 1, tzinfo=timezone.utc), datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=timezone.utc)]
    for _ in range(count):
        naive = datetime(1, 1, 2) + timedelta(microseconds=rng.randrange(315_000_000_000_000_000))
        offset = timezone(timedelta(minutes=rng.randrange(-23 * 60, 23 * 60)))
        out += [naive, naive.replace(tzinfo=timezone.utc), naive.replace(tzinfo=offset)]
    return out


def test_set_time_gives_what_from_datetime_gives() -> None:
    for value in _datetimes(3000):
        expected, got = Timestamp(), Timestamp()
        expected.FromDatetime(value)
        _set_time(got, value)
        assert (got.seconds, got.nanos) == (expected.seconds, expected.nanos), value


def test_no_time_leaves_the_field_unset() -> None:
    ts = Timestamp()
    _set_time(ts, None)
    assert (ts.seconds, ts.nanos) == (0, 0)
