"""Calling the hub from async tools: a worker thread per attempt, retries within a deadline, errors a model can act on.

The hub client is synchronous (grpcio's sync stubs); tools are async. Each
attempt runs in `asyncio.to_thread`, which copies the caller's context
variables into the thread, so the OpenTelemetry span of the tool call is the
parent of the gRPC client span and the trace continues into the hub.

What is retried: UNAVAILABLE (hub down or restarting), DEADLINE_EXCEEDED
(one attempt ran out of time) and ABORTED (a concurrent write conflicted;
the hub says retrying is safe), except a compare-and-set's ABORTED, which is
its answer: the session-state tools pass retry_aborted=False, and an ABORTED
that reports a memory's version conflict (an expected_version that no longer
holds, in its trailing metadata) is never retried: the same call would fail
again, so the model is told the current version at once. Writes and forgets carry a request id made
once per tool call, so a retry of a call that did commit is answered from
the hub's idempotency record instead of acting twice. Everything else is the
hub's answer, not a transport failure, and becomes a ToolError at once.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

import grpc
from mcp.server.mcpserver.exceptions import ToolError
from opentelemetry import trace

from memhub.bridge.hub_options import RetryPolicy as RetryPolicy  # re-exported: defined there, for the settings
from memhub.bridge.hub_options import attempt_timeout
from memhub.client import VersionConflict, version_conflict

log = logging.getLogger("memhub.bridge.hub")

T = TypeVar("T")

# The least time worth giving one more attempt (a refused connection fails in about a millisecond).
MIN_ATTEMPT_S = 0.05

RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED})

# What the model should read before the hub's own message. The hub's messages already name the
# field, action and namespace ("permission denied: agent 'carol' may not write in namespace ..."),
# so they are passed on verbatim; the prefixes only add what the model can do about it.
_HINTS: dict[grpc.StatusCode, str] = {
    grpc.StatusCode.INVALID_ARGUMENT: "the memory hub rejected an argument: {msg}. Fix that argument and call again.",
    grpc.StatusCode.PERMISSION_DENIED: "{msg}. This agent is not allowed to do that there; do not retry, "
    "use a namespace it may use (its own agents/<id> space, for example) or ask a human operator.",
    grpc.StatusCode.NOT_FOUND: "not found: {msg}. It does not exist or this agent may not see it.",
    grpc.StatusCode.FAILED_PRECONDITION: "the memory hub refused the request: {msg}",
    grpc.StatusCode.ALREADY_EXISTS: "the memory hub refused the request: {msg}",
    grpc.StatusCode.ABORTED: "{msg}. Nothing was changed: read the key again (session_state_get) and decide whether "
    "your change still applies before putting it with the current version as expected_version.",
    grpc.StatusCode.RESOURCE_EXHAUSTED: "the memory hub is overloaded or a limit was hit: {msg}",
    grpc.StatusCode.UNAUTHENTICATED: "the memory hub refused this bridge's credentials: {msg}. "
    "The agent's token is missing, expired or revoked; a human operator must issue a new one "
    "(memhub token issue) and restart the bridge. Retrying will not help.",
}


class HubCaller:
    """Runs hub calls for the tools: one worker thread per attempt, retries, error mapping."""

    def __init__(self, address: str, policy: RetryPolicy = RetryPolicy()) -> None:
        self.address = address
        self.policy = policy

    async def __call__(self, fn: Callable[[], T], *, attempt_s: float = 0.0, retry_aborted: bool = True) -> T:
        """Run `fn` (a blocking MemhubClient call) until it succeeds, fails for good, or the deadline passes.

        `attempt_s`: the least time one attempt may take, for calls that do long work on the hub (a
        consolidation embeds and summarises hundreds of episodes). Retries still stop at the deadline,
        so an unreachable hub is reported as soon as for any other call.
        `retry_aborted`: False for a compare-and-set, whose ABORTED is the answer (the version moved on),
        reported at once; retrying the same expected version could only fail again.
        Raises ToolError with a message meant for the model.
        """
        retryable = RETRYABLE if retry_aborted else RETRYABLE - {grpc.StatusCode.ABORTED}
        start = time.monotonic()
        deadline = start + self.policy.deadline_s
        backoff = self.policy.initial_backoff_s
        attempts = 0
        code, details = grpc.StatusCode.UNAVAILABLE, ""
        while True:
            attempts += 1
            token = attempt_timeout.set(max(deadline - time.monotonic(), attempt_s, 0.001))
            try:
                return await asyncio.to_thread(fn)
            except grpc.RpcError as exc:
                code, details = exc.code(), exc.details() or ""
                conflict = version_conflict(exc)
                if conflict is not None:  # the same call would fail the same way: the model must re-read first
                    raise conflict_error(details, conflict) from None
                if code not in retryable:
                    raise hub_error(code, details) from None
                log.warning(
                    "hub call failed, will retry within the deadline",
                    extra={"code": code.name, "details": details, "attempt": attempts, "hub": self.address},
                )
            finally:
                attempt_timeout.reset(token)
            # Jitter: many bridges that lost one hub at the same moment should not retry in lock step.
            wait = random.uniform(backoff / 2, backoff)
            remaining = deadline - time.monotonic()
            if remaining < 2 * MIN_ATTEMPT_S:
                break
            # Keep trying until the deadline: the last wait is cut short so one more attempt fits.
            await asyncio.sleep(min(wait, remaining - MIN_ATTEMPT_S))
            backoff = min(backoff * 2, self.policy.max_backoff_s)
        elapsed = time.monotonic() - start
        trace.get_current_span().set_attribute("memhub.hub.status_code", code.name)
        if code == grpc.StatusCode.ABORTED:
            raise ToolError(f"the memory hub kept reporting a conflict ({details}); call again in a moment")
        raise ToolError(
            f"the memory hub at {self.address} is unreachable: {code.name}: {details or 'no answer'} "
            f"({attempts} attempt{'s' if attempts != 1 else ''} over {elapsed:.1f} s). Memory is unavailable "
            "for now: tell the user, carry on without it, and try again later."
        )


def conflict_error(details: str, conflict: VersionConflict) -> ToolError:
    """A failed expected version: what holds the memory now, and what to do (never retried as it is)."""
    trace.get_current_span().set_attribute("memhub.hub.status_code", grpc.StatusCode.ABORTED.name)
    return ToolError(
        f"the memory changed since you read it: {details.rstrip('.')}. Nothing was changed. Its current version is "
        f"{conflict.current_version}" + (f" (memory {conflict.current_id})" if conflict.current_id else "") + ": "
        "read it again (memory_history, explain_memory or search_memories), then decide whether to call again "
        "with that expected_version."
    )


def hub_error(code: grpc.StatusCode, details: str) -> ToolError:
    """A non-retryable hub status as a ToolError whose text keeps the hub's own message."""
    # Recorded on the SDK's `tools/call` span: the SDK marks the span `error.type=tool_error`, this says which.
    trace.get_current_span().set_attribute("memhub.hub.status_code", code.name)
    template = _HINTS.get(code, "the memory hub failed: {code}: {msg}")
    return ToolError(template.format(msg=details.rstrip(".") or code.name, code=code.name))
