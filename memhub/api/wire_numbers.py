"""Numbers from the wire turned into Python values without overflowing: an out-of-range one is INVALID_ARGUMENT.

protobuf's own conversions raise on values the wire allows: ``Duration.ToTimedelta`` overflows past
999,999,999 days (2^62 seconds is an OverflowError) and ``Timestamp.ToDatetime`` past year 9999, which a
handler turned into INTERNAL (issue 22). These check the raw fields first and name the field and the range.
tests/security/test_wire_numbers.py sweeps every numeric field of every request.
"""

from __future__ import annotations

from datetime import timedelta

from google.protobuf.duration_pb2 import Duration

from memhub.errors import InvalidArgument

_NANOS = 1_000_000_000


def bounded_duration(value: Duration, field: str, high: timedelta) -> timedelta:
    """``value`` as a timedelta in (0, ``high``]; InvalidArgument naming ``field`` and the range otherwise."""
    allowed = f"use a positive duration of at most {high.days:,} days ({int(high.total_seconds()):,} seconds)"
    seconds, nanos = value.seconds, value.nanos
    # Checked on the integers: no float or timedelta of an arbitrary wire value is ever made.
    if not -_NANOS < nanos < _NANOS or (seconds > 0 and nanos < 0) or (seconds < 0 and nanos > 0):
        raise InvalidArgument(field, f"has nanos {nanos}, not a valid duration; {allowed}")
    if not 0 <= seconds <= high.total_seconds() or (seconds == 0 and nanos <= 0):
        raise InvalidArgument(field, f"is {seconds:,} seconds; {allowed}")
    result = timedelta(seconds=seconds, microseconds=nanos // 1000)
    if result > high:
        raise InvalidArgument(field, f"is {seconds:,} seconds; {allowed}")
    return result
