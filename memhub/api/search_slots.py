"""Searches run a few at a time; the others wait their turn, in the order they came, on the event loop.

Why. A search is mostly Python (fusion, rerank, hydration, the reply), and a
hub's Python runs one thread at a time under the GIL. With 16 searches in
progress at once every one of them waits for the GIL after each of its
Postgres and Milvus round trips, behind the 15 others, so every search is
stretched over the time of all of them and the unlucky ones far more: at
100k memories and 16 clients the p99 was 523-570 ms against a p50 of 282-292
ms. Four at a time served as many searches a second and cut the p99 to
385-474 ms (two: 406-432 ms), because a search that waits its turn before it
starts is not slowed once it runs (bench/bench_scale.py with
MEMHUB_SEARCH_SLOTS; docs/benchmarks.md, eighth round).

A waiting search holds no thread (it waits on the loop, like a call waiting
for its agent's slot), and its deadline or a cancel ends the wait
(``asyncio.Semaphore`` lets waiters in first come, first served, and a
cancelled waiter gives up its place). Per-agent limits and fair shares
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

Request = TypeVar("Request")
Response = TypeVar("Response")


def slots_for(configured: int) -> int:
    """Searches a hub runs at once: ``configured``, or when 0 two per CPU the hub may use and at least 4 (room for
    one search's round trips while another runs Python; measured best at 2 to 4 on a 2-core machine)."""
    return configured if configured > 0 else max(4, 2 * cpu_count())


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
        async with self.search_slots:
            return await handler(self, request, context)

    return gated
