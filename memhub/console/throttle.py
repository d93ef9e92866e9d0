"""Failed sign-ins counted per client address and per claimed identity, never for the console as a whole.

One console-wide counter let anyone make every operator's valid token get
429 with 21 garbage sign-ins a minute. What is decided instead:

- A token the hub accepts always signs in, whatever any counter says: the
  hub verifies it in one call, and a counter that could refuse it would be a
  lockout button for whoever shares the operator's address (every local user
  of a loopback console, every client behind one proxy) or can claim its
  identity (``sub`` is readable and forgeable in any JWT).
- Garbage (text that is no usable JWT, or expired: it can never sign in) is
  counted per client address; past ``limit`` in ``window_s`` that address's
  garbage is answered 429 with Retry-After.
- A well-formed token the hub refuses is counted for its address and for the
  identity it claims (a hash of its unverified ``sub``); past the limit of
  either, the answer is 429 instead of the hub's reason.
- Every try, throttled or not, is still presented to the hub, which audits
  it (pages/auth.py): the counters decide answers, never what is recorded.

Memory is bounded: at most ``max_keys`` keys per counter; past that the key
that failed least recently is forgotten, which can only let someone try
again sooner and never refuses anyone.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

LIMIT = 20
WINDOW_S = 60.0
MAX_KEYS = 10_000


class FailureCounts:
    """Failures per key in a fixed window opened by each key's first failure."""

    def __init__(self, limit: int, window_s: float, max_keys: int) -> None:
        self._limit = limit
        self._window = window_s
        self._max_keys = max_keys
        self._lock = threading.Lock()
        self._windows: OrderedDict[str, list[float]] = OrderedDict()  # key -> [window start, failures]

    def add(self, key: str) -> None:
        now = time.monotonic()
        with self._lock:
            window = self._windows.get(key)
            if window is None or now - window[0] >= self._window:
                window = self._windows[key] = [now, 0]
            window[1] += 1
            self._windows.move_to_end(key)
            while len(self._windows) > self._max_keys:
                self._windows.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._windows)

    def retry_after(self, key: str) -> int:
        """Seconds until ``key`` may be answered normally again; 0 when it is under the limit."""
        now = time.monotonic()
        with self._lock:
            window = self._windows.get(key)
            if window is None or now - window[0] >= self._window or window[1] <= self._limit:
                return 0
            return max(1, math.ceil(self._window - (now - window[0])))


@dataclass(frozen=True)
class Try:
    """Who made a sign-in try, as the throttle counts it."""

    address: str
    identity: str = ""
    """A hash of the unverified ``sub`` of a well-formed token ("" for garbage)."""


class SigninThrottle:
    def __init__(self, limit: int = LIMIT, window_s: float = WINDOW_S, max_keys: int = MAX_KEYS) -> None:
        self._by_address = FailureCounts(limit, window_s, max_keys)
        self._by_identity = FailureCounts(limit, window_s, max_keys)

    @staticmethod
    def attempt(client_host: str, claimed_subject: str | None = None) -> Try:
        identity = "" if claimed_subject is None else hashlib.sha256(claimed_subject.encode()).hexdigest()[:32]
        return Try(address_key(client_host), identity)

    def record_garbage(self, attempt: Try) -> int:
        """Count a try that could never sign in; the Retry-After to answer (0: answer normally)."""
        self._by_address.add(attempt.address)
        return self._by_address.retry_after(attempt.address)

    def record_refused(self, attempt: Try) -> int:
        """Count a well-formed token the hub refused; the Retry-After to answer (0: answer normally)."""
        self._by_address.add(attempt.address)
        if attempt.identity:
            self._by_identity.add(attempt.identity)
        return max(self._by_address.retry_after(attempt.address), self._by_identity.retry_after(attempt.identity))


def address_key(host: str) -> str:
    """The address a client is counted under: IPv4 as is, IPv6 by its /64 (one host usually holds a whole /64,
    and counting single IPv6 addresses would let it try 2^64 times as often)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host[:64]  # a unix socket or a test client: whatever the server names it
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)
