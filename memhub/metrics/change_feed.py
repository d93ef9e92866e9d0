"""The open change-feed streams gauge, for the change feed to call (``memhub_change_feed_streams``).

The feed opens one stream per subscriber; wrap each stream's body in
``open_stream()`` (or pair ``stream_opened``/``stream_closed`` in a
try/finally), so a stream that ends in any way, cancelled or failed, is
taken off the gauge. The gauge counts whether or not metrics are served:
an increment skipped while recording was off would leave a later
decrement below zero.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from memhub.metrics.instruments import CHANGE_FEED_STREAMS, REGISTRY


def stream_opened() -> None:
    """One more change-feed stream is open on this replica."""
    CHANGE_FEED_STREAMS.inc()


def stream_closed() -> None:
    """A change-feed stream has ended (normally, cancelled or failed)."""
    CHANGE_FEED_STREAMS.dec()


@contextmanager
def open_stream() -> Iterator[None]:
    """Count the stream as open for the duration of the with-block."""
    stream_opened()
    try:
        yield
    finally:
        stream_closed()


def open_streams() -> int:
    """Streams open now (the gauge's value), for the admin view and tests."""
    return int(REGISTRY.get_sample_value("memhub_change_feed_streams") or 0)
