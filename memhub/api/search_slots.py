"""Searches run a few at a time; the others wait their turn, in the order they came, on the event loop.

Why. A search is mostly Python (fusion, rerank, hydration, the reply), and a
hub's Python runs one thread at a time under the GIL. With 16 searches in
progress at once every one of them waits for the GIL after each of its
Postgres and Milvus round trips, behind the 15 others, so every search is
stretched over the time of all of them and the unlucky ones far more. On
100k memories written through the API, 16 clients, three alternated rounds:
p99 645-708 ms with no bound, 470-499 ms with four at a time, which also
served more searches a second (43.7-53.7 against 38.6-48.8: less CPU a
search, fewer threads handing the GIL back and forth); at 10k the p99 went
from 490-613 to 368-465 ms (bench/bench_scale.py, bench/bench_throughput.py
with MEMHUB_SEARCH_SLOTS; docs/benchmarks.md, eighth round).

A waiting search holds no thread (it waits on the loop, like a call waiting
for its agent's slot), and its deadline or a cancel ends the wait
(``asyncio.Semaphore`` lets waiters in first come, first served, and a
cancelled waiter gives up its place). ``memhub_searches_waiting`` says how
many wait now. Per-agent limits and fair shares
(memhub/api/call_limits.py) are applied before a call reaches this line, so
one agent's flood waits in its own line there and holds at most its share of
this one.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from memhub.api.fair_share import cpu_count
from memhub.metrics.instruments import SEARCHES_WAITING

Request = TypeVar("Request")
Response = TypeVar("Response")


def slots_for(configured: int, processes: int = 1) -> int:
    """Searches a hub process runs at once: ``configured``, or when 0 two per CPU the hub may use and at least 4
    (room for one search's round trips while another runs Python; measured best at 2 to 4 on a 2-core machine),
    shared out among the ``processes`` of `memhub serve --processes`, at least 2 each (two processes on 2 cores
    served 1.22-1.48x one hub's searches a second with 2 each; with 4 each, 0.92-1.29x at more CPU a search)."""
    if configured > 0:
        return configured
    return max(2, max(4, 2 * cpu_count()) // max(1, processes))


class HasSearchSlots(Protocol):
    search_slots: asyncio.Semaphore
    """Held by each search while it runs."""


def one_of_the_searches(
    handler: Callable[[Any, Request, Any], Awaitable[Response]],
) -> Callable[[Any, Request, Any], Awaitable[Response]]:
    """Wrap an async RPC handler (``status.blocking_rpc``'s) so that it runs only while it holds one of its
    servicer's ``search_slots``."""

    @functools.wraps(handler)
    async def gated(self: HasSearchSlots, request: Request, context: Any) -> Response:
        slots = self.search_slots
        waits = slots.locked()
        if waits:  # counted whether or not metrics are served, like memhub/metrics/change_feed.py's gauge
            SEARCHES_WAITING.inc()
        try:
            await slots.acquire()
        finally:  # given up (deadline, cancel) or let in: no longer waiting either way
            if waits:
                SEARCHES_WAITING.dec()
        try:
            return await handler(self, request, context)
        finally:
            slots.release()

    return gated
