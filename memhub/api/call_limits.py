"""Per-agent and per-group call limits: token buckets, call slots with a bounded line, stream counts.

Plain asyncio, driven from the gRPC server's event loop (memhub/api/limits.py):
a call waiting for a slot waits on the loop and holds no thread, so a flood
from one token queues behind that token's own slots while other agents'
calls go straight through.

Accounts are keyed ("agent", id) and ("group", name); a call passes its
agent's account and the accounts of those of its groups that have a limit.
A refused call spends nothing: rate buckets are all checked before any is
charged, and slots already taken are given back. Slots are taken in a fixed
order (agent, then groups by name) so two calls never wait for each other.

While several agents are active, an agent's slots are fewer than its limit:
its fair share of the replica (memhub/api/fair_share.py). A call already running
is never stopped; waiting calls are let in as slots free or shares grow.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from memhub.api.fair_share import Activity, cpu_count
from memhub.config import CallLimit, LimitsConfig
from memhub.core.model import Caller

_PRUNE_ABOVE = 10_000
"""Idle accounts are dropped once there are more than this many (agents come and go)."""


class Refused(Exception):
    """The call may not run now; ``message`` says why and what to do, ``retry_after_s`` when to try again."""

    def __init__(self, reason: str, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.retry_after_s = retry_after_s


class _LineFull(Exception):
    pass


class _TimedOut(Exception):
    pass


class _Bucket:
    """A token bucket: ``rate`` tokens a second, at most ``size`` saved up."""

    def __init__(self, rate: float, size: int, now: float) -> None:
        self.rate = rate
        self.size = size
        self.tokens = float(size)
        self.at = now

    def wait(self, now: float) -> float:
        """Seconds until one token is available (0: now)."""
        self.tokens = min(self.size, self.tokens + (now - self.at) * self.rate)
        self.at = now
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.rate

    def full(self, now: float) -> bool:
        return self.tokens + (now - self.at) * self.rate >= self.size


class _Slots:
    """``size`` calls at a time (fewer while ``cap`` says so); the rest wait in a first-come line."""

    def __init__(
        self, size: int, cap: Callable[[], int | None] = lambda: None, on_wait: Callable[[], None] = lambda: None
    ) -> None:
        self.size = size
        self.active = 0
        self.line: deque[asyncio.Future] = deque()
        self._cap = cap
        self._on_wait = on_wait

    def _room(self) -> bool:
        cap = self._cap()
        return self.active < (self.size if cap is None else min(self.size, cap))

    async def acquire(self, queue: int, timeout: float) -> None:
        """Take a slot, waiting at most ``timeout`` s behind at most ``queue`` others; raises _LineFull, _TimedOut."""
        if not self.line and self._room():
            self.active += 1
            return
        if len(self.line) >= queue:
            raise _LineFull
        if timeout <= 0:
            raise _TimedOut
        loop = asyncio.get_running_loop()
        ticket = loop.create_future()
        self.line.append(ticket)
        self._on_wait()
        timer = loop.call_later(timeout, lambda: ticket.done() or ticket.set_exception(_TimedOut()))
        try:
            await ticket
        except BaseException:
            # Timed out, or the caller went away: leave the line. A slot handed over at that very moment is passed on.
            if ticket.done() and not ticket.cancelled() and ticket.exception() is None:
                self.release()
            elif ticket in self.line:
                self.line.remove(ticket)
            raise
        finally:
            timer.cancel()

    def release(self) -> None:
        """Free the slot, and let waiters in while there is room."""
        self.active -= 1
        self.fill()

    def fill(self) -> None:
        """Hand free slots to the first waiters still waiting (also when the cap has grown)."""
        while self.line and self._room():
            ticket = self.line.popleft()
            if not ticket.done():
                self.active += 1
                ticket.set_result(None)


@dataclass
class _Account:
    limit: CallLimit
    bucket: _Bucket | None
    slots: _Slots | None
    streams: int = 0
    refused: int = 0

    def idle(self, now: float) -> bool:
        busy = self.slots is not None and (self.slots.active or self.slots.line)
        return not busy and not self.streams and (self.bucket is None or self.bucket.full(now))


@dataclass
class Ticket:
    """Given back when the call ends."""

    release: Callable[[], None] = field(default=lambda: None)


@dataclass(frozen=True)
class AccountState:
    """One account as the admin view shows it."""

    kind: str
    name: str
    running: int
    waiting: int
    streams: int
    refused: int


def _retry_after(seconds: float) -> float:
    return max(0.1, math.ceil(seconds * 10) / 10)


class CallLimiter:
    """Admits calls under LimitsConfig. Everything but ``snapshot`` runs on the server's event loop."""

    def __init__(self, config: LimitsConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self._config = config
        self._clock = clock
        self._groups = dict(config.groups)
        self._accounts: dict[tuple[str, str], _Account] = {}
        self._public_streams: dict[str, int] = {}
        self._lock = threading.Lock()  # only for snapshot() from another thread; the loop itself never contends
        self._activity = Activity(config.fair_share_slots or cpu_count(), config.fair_share_window_s)
        self._rebalance_timer: asyncio.TimerHandle | None = None

    @property
    def config(self) -> LimitsConfig:
        return self._config

    # -- accounts ---------------------------------------------------------------------

    def _account(self, kind: str, name: str, limit: CallLimit) -> _Account:
        key = (kind, name)
        account = self._accounts.get(key)
        if account is None:
            now = self._clock()
            if len(self._accounts) >= _PRUNE_ABOVE:
                self._prune(now)
            bucket = _Bucket(limit.rate, limit.bucket, now) if limit.rate > 0 else None
            slots = None
            if limit.concurrent > 0 and kind == "agent":
                slots = _Slots(limit.concurrent, self._fair_share, self._schedule_rebalance)
            elif limit.concurrent > 0:
                slots = _Slots(limit.concurrent)  # a group's members share it: their fairness is their agents'
            account = _Account(limit, bucket, slots)
            with self._lock:
                self._accounts[key] = account
        return account

    def _prune(self, now: float) -> None:
        with self._lock:
            for key in [k for k, a in self._accounts.items() if a.idle(now)]:
                del self._accounts[key]

    # -- fair shares (memhub/api/fair_share.py) ------------------------------------------

    def _fair_share(self) -> int | None:
        return self._activity.share(self._clock())

    def _rebalance(self) -> None:
        """An agent went idle, or a recent one stopped counting: shares may have grown, so let waiters in."""
        for agent in self._activity.busy_agents():
            account = self._accounts.get(("agent", agent))
            if account is not None and account.slots is not None and account.slots.line:
                account.slots.fill()
        self._schedule_rebalance()

    def _schedule_rebalance(self) -> None:
        """While calls wait and recent agents hold shares, look again when the oldest of those stops counting."""
        if self._rebalance_timer is not None:
            return
        self._activity.active(self._clock())  # drops the agents whose window has passed: the next expiry is ahead
        expiry = self._activity.next_expiry()
        if expiry is None or not any(
            (a := self._accounts.get(("agent", agent))) is not None and a.slots is not None and a.slots.line
            for agent in self._activity.busy_agents()
        ):
            return
        self._rebalance_timer = asyncio.get_running_loop().call_later(
            max(0.0, expiry - self._clock()) + 0.001, self._on_rebalance_timer
        )

    def _on_rebalance_timer(self) -> None:
        self._rebalance_timer = None
        self._rebalance()

    def _call_ended(self, agent: str) -> None:
        if self._activity.end(agent, self._clock()):
            self._rebalance()

    def _accounts_of(self, caller: Caller) -> list[tuple[str, _Account]]:
        """(what to call it in a message, account): the agent's, then its limited groups' by name."""
        out = [("this agent's", self._account("agent", caller.agent_id, self._config.limit_for(caller.agent_id)))]
        for group in sorted(g for g in set(caller.groups) if g in self._groups):
            out.append(("a group's shared", self._account("group", group, self._groups[group])))
        return out

    # -- admission --------------------------------------------------------------------

    async def admit(self, caller: Caller) -> Ticket:
        """Wait for the caller's slots; raise Refused (nothing spent) when it is over a rate or the line is full."""
        accounts = self._accounts_of(caller)
        now = self._clock()
        for label, account in accounts:
            if account.bucket is not None:
                wait = account.bucket.wait(now)
                if wait > 0:
                    account.refused += 1
                    limit = account.limit
                    burst = account.bucket.size
                    raise Refused(
                        "agent-rate" if label.startswith("this") else "group-rate",
                        f"over {label} rate limit ({limit.rate:g} calls/s, bursts of {burst}); "
                        f"retry after {_retry_after(wait):g} s",
                        _retry_after(wait),
                    )
        for _, account in accounts:
            if account.bucket is not None:
                account.bucket.tokens -= 1
        agent = caller.agent_id
        self._activity.begin(agent)
        taken: list[_Slots] = []
        deadline = now + self._config.queue_timeout_s
        try:
            for label, account in accounts:
                if account.slots is None:
                    continue
                try:
                    await account.slots.acquire(self._config.queue, deadline - self._clock())
                except (_LineFull, _TimedOut) as exc:
                    account.refused += 1
                    waited = isinstance(exc, _TimedOut) and self._config.queue_timeout_s > 0
                    why = (
                        f"waited {self._config.queue_timeout_s:g} s for a free slot"
                        if waited
                        else f"found {self._config.queue} calls already waiting"
                    )
                    raise Refused(
                        "agent-concurrency" if label.startswith("this") else "group-concurrency",
                        f"too many calls at once: {label} limit is {account.limit.concurrent} running and this call "
                        f"{why}; retry after 1 s, or make fewer calls at a time",
                        1.0,
                    ) from None
                taken.append(account.slots)
        except BaseException:
            for slots in reversed(taken):
                slots.release()
            self._call_ended(agent)
            raise

        def release() -> None:
            for slots in reversed(taken):
                slots.release()
            self._call_ended(agent)

        return Ticket(release)

    def open_stream(self, caller: Caller) -> Ticket:
        """Count one more open stream for the caller; Refused past streams_per_agent."""
        account = self._account("agent", caller.agent_id, self._config.limit_for(caller.agent_id))
        cap = self._config.streams_per_agent
        if cap and account.streams >= cap:
            account.refused += 1
            raise Refused("agent-streams", f"this agent already has {cap} open streams, the limit; close one first")
        account.streams += 1

        def release() -> None:
            account.streams -= 1

        return Ticket(release)

    def open_public_stream(self, source: str) -> Ticket:
        """Count one more unauthenticated stream (health Watch) from ``source``; Refused past the cap."""
        cap = self._config.public_streams_per_source
        count = self._public_streams.get(source, 0)
        if cap and count >= cap:
            raise Refused("source-streams", f"this address already has {cap} open health streams, the limit")
        with self._lock:
            self._public_streams[source] = count + 1

        def release() -> None:
            with self._lock:
                left = self._public_streams[source] - 1
                if left:
                    self._public_streams[source] = left
                else:
                    del self._public_streams[source]

        return Ticket(release)

    # -- the admin view ---------------------------------------------------------------

    def snapshot(self) -> list[AccountState]:
        """The accounts with something running, waiting, open or refused (safe from any thread)."""
        with self._lock:
            items = list(self._accounts.items())
        out = []
        for (kind, name), a in items:
            running = a.slots.active if a.slots else 0
            waiting = len(a.slots.line) if a.slots else 0
            if running or waiting or a.streams or a.refused:
                out.append(AccountState(kind, name, running, waiting, a.streams, a.refused))
        return sorted(out, key=lambda s: (s.kind, s.name))
