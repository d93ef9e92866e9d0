"""The bridge's start-up check: can this agent's token work, and does the hub answer and accept it?

Without it, a bridge with an expired token or no hub behind it starts
fine, the MCP client (Claude Desktop, say) lists its tools, and the problem
shows up only as a tool error in the middle of a conversation, where a
person rarely looks. So the bridge checks before it serves and, when
something is wrong, says what and what to do on stderr and exits non-zero;
a client shows that in its MCP log and as a server that failed to start.

1. The token's claims, read without verifying the signature (the hub
   verifies; the bridge has no key): a token that is not a JWT, has
   expired or is not valid yet cannot work anywhere.
2. One authenticated call to the hub, retried while the hub is unreachable
   for up to `wait_s` (a hub started at the same moment gets time to come
   up): unreachable, or refused (wrong audience or issuer, bad signature,
   revoked), is reported in the hub's own words.

Both run before the bridge answers its MCP client, so they load as little
as they can: the claims are read with the standard library
(token_claims.py), and the call goes over a raw channel with the generated
stub alone (HubProbe), not through memhub's client and its OpenTelemetry
instrumentation; the hub client adopts that channel afterwards.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Protocol

import grpc

from memhub.bridge.hub_options import attempt_timeout
from memhub.bridge.token_claims import NotAJwt, unverified_claims

if TYPE_CHECKING:
    from memhub.client_stubs import MemoryStub

log = logging.getLogger("memhub.bridge")

# The hub's default clock-skew leeway (memhub/auth/config.py): a token this close to its expiry is still accepted.
LEEWAY = timedelta(seconds=30)
# Less than this left and the operator hears about it now rather than when the tools stop working.
SHORT_LIFETIME = timedelta(days=1)
# The probe reads a memory that cannot exist: the hub authenticates the call first, then answers NOT_FOUND
# after one primary-key lookup. Any answer but UNAUTHENTICATED means the token was accepted.
PROBE_ID = "00000000-0000-0000-0000-000000000000"
TRANSIENT = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})


class StartupError(Exception):
    """The bridge cannot work as configured; the message says why and what to do."""


class Probe(Protocol):
    """What the check calls: HubProbe, or the bridge's own hub client (BridgeHubClient)."""

    def get(self, memory_id: str) -> object: ...


class HubProbe:
    """GetMemory as the agent, on a raw channel (hub_options.open_channel) through the generated stub only.

    `start` sends the first attempt at once and returns: gRPC's own threads connect and wait for the answer
    (on the other core, with the hub on its own) while this thread goes on loading the MCP SDK; the first
    `get` then takes that answer. Later attempts (check_hub's retries) are plain blocking calls."""

    def __init__(self, channel: grpc.Channel, token: str, timeout_s: float = 30.0) -> None:
        from memhub.v1 import memory_pb2, memory_pb2_grpc

        self._request = memory_pb2.GetMemoryRequest
        self._stub: MemoryStub = memory_pb2_grpc.MemoryServiceStub(channel)
        self._metadata = (("authorization", f"Bearer {token}"),)
        self._timeout = timeout_s
        self._pending: grpc.Future[memory_pb2.Memory] | None = None
        self.started: float | None = None
        """time.monotonic() when `start` sent the first attempt."""

    def start(self, wait_s: float) -> None:
        """Send the first attempt (of the probe's id), with the timeout check_hub gives a first attempt."""
        self.started = time.monotonic()
        self._pending = self._stub.GetMemory.future(
            self._request(id=PROBE_ID), timeout=first_attempt_s(wait_s), metadata=self._metadata
        )

    def get(self, memory_id: str) -> object:
        if self._pending is not None and memory_id == PROBE_ID:
            pending, self._pending = self._pending, None
            return pending.result()  # raises the call's grpc.RpcError, as a blocking call would
        timeout = attempt_timeout.get()
        return self._stub.GetMemory(
            self._request(id=memory_id), timeout=self._timeout if timeout is None else timeout, metadata=self._metadata
        )


def first_attempt_s(wait_s: float) -> float:
    """The time one attempt of the check may take with `wait_s` left: at least 0.5 s, at most 5 s."""
    return min(max(wait_s, 0.5), 5.0)


def renew_hint(agent: str | None) -> str:
    name = agent or "NAME"
    return (
        f"Issue a new one on the hub's machine (`memhub bridge init --agent {name} --force`, or "
        f"`memhub token issue --agent {name} --ttl 30d > FILE`) and restart the bridge (or the MCP client that starts it)."
    )


def check_token(token: str, source: str, now: datetime | None = None) -> dict[str, Any]:
    """The token's claims, unverified; raises StartupError when the token cannot be valid at the hub."""
    now = now or datetime.now(timezone.utc)
    try:
        claims = unverified_claims(token)
    except NotAJwt:
        raise StartupError(
            f"the agent's token ({source}) is not a JWT (three base64url parts separated by dots): the file must hold "
            "only what `memhub token issue` printed. " + renew_hint(None)
        ) from None
    agent = claims.get("sub") if isinstance(claims.get("sub"), str) else None
    exp, nbf = _time(claims.get("exp")), _time(claims.get("nbf"))
    if exp is not None and exp + LEEWAY <= now:
        raise StartupError(
            f"the agent's token ({source}) expired at {_iso(exp)}, {_ago(now - exp)} ago: the hub refuses it. "
            + renew_hint(agent)
        )
    if nbf is not None and nbf - LEEWAY > now:
        raise StartupError(
            f"the agent's token ({source}) is not valid until {_iso(nbf)}, in {_ago(nbf - now)}: the clock of this "
            "machine or of the one that issued it is wrong. Fix the clock, or issue a new token."
        )
    if exp is not None and exp - now < SHORT_LIFETIME:
        log.warning(
            f"the agent's token expires in {_ago(exp - now)}, at {_iso(exp)}; after that every tool call fails. "
            f"A long-running set-up needs a longer-lived token: `memhub bridge init --agent {agent or 'NAME'} --force` "
            "issues one for 30 days (or `memhub token issue ... --ttl 30d`); then restart the bridge.",
            extra={"agent": agent, "expires_at": _iso(exp)},
        )
    return claims


def check_hub(
    hub: Probe, address: str, address_source: str, claims: dict[str, Any], wait_s: float, started: float | None = None
) -> None:
    """One authenticated call, retried while the hub is unreachable for up to `wait_s`; raises StartupError.

    `started`: time.monotonic() when the first attempt was sent ahead (HubProbe.start); the wait counts from then."""
    start = time.monotonic() if started is None else started
    deadline = start + wait_s
    pause, attempts, warned = 0.2, 0, False
    while True:
        attempts += 1
        token = attempt_timeout.set(first_attempt_s(deadline - time.monotonic()))
        try:
            hub.get(PROBE_ID)
            return
        except grpc.RpcError as exc:
            code, details = exc.code(), exc.details() or ""
        finally:
            attempt_timeout.reset(token)
        if code == grpc.StatusCode.UNAUTHENTICATED:
            raise StartupError(_refused(address, details, claims))
        if code not in TRANSIENT:
            # The hub answered and did not refuse the token (NOT_FOUND is the expected answer); anything
            # else is the hub's business and is reported by the tool calls that meet it.
            if code != grpc.StatusCode.NOT_FOUND:
                log.warning("the hub answered the start-up check with an error", extra={"code": code.name, "details": details})
            return
        if time.monotonic() + pause > deadline:
            break
        if not warned:
            log.warning(f"waiting up to {wait_s:g} s for the hub at {address}", extra={"hub": address, "code": code.name})
            warned = True
        time.sleep(pause)
        pause = min(pause * 2, 1.0)
    raise StartupError(
        f"cannot reach the hub at {address} ({address_source}): {code.name}: {details or 'no answer'} "
        f"({attempts} attempt{'s' if attempts != 1 else ''} over {time.monotonic() - start:.1f} s). Is `memhub serve` running? "
        "Start it, or point the bridge at it with --hub HOST:PORT (or MEMHUB_ADDRESS); a hub started with --port N "
        "listens on 127.0.0.1:N. Use --startup-wait SECONDS when the bridge starts before the hub."
    )


def _refused(address: str, details: str, claims: dict[str, Any]) -> str:
    said = ", ".join(f"{name} {claims[name]!r}" for name in ("sub", "aud", "iss") if claims.get(name) is not None)
    fix = renew_hint(claims.get("sub") if isinstance(claims.get("sub"), str) else None)
    if "audience" in details or "issuer" in details:
        fix = (
            "The token was issued for another hub or with other --audience/--issuer settings than this hub's "
            "MEMHUB_JWT_AUDIENCE/MEMHUB_JWT_ISSUER. " + fix
        )
    elif "signature" in details or "key" in details:
        fix = "The token was signed with another key than this hub's (another --data-dir?). " + fix
    return f"the hub at {address} refused the agent's token: {details} (the token says {said or 'nothing'}). {fix}"


def _time(value: Any) -> datetime | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return datetime.fromtimestamp(value, timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def _iso(moment: datetime) -> str:
    return moment.replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _ago(span: timedelta) -> str:
    seconds = abs(span.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"
