"""How the bridge reaches the hub: TLS, the time budget of a tool call, and the deadline of one attempt.

Kept apart from hub_client.py and hub_calls.py, which load memhub's gRPC
client with its OpenTelemetry instrumentation and the MCP SDK's errors: the
settings and the start-up check need only these, and under stdio they run
before the bridge answers its client's `initialize` (see cli.py).
Re-exported by hub_client.py (HubTls, attempt_timeout) and hub_calls.py
(RetryPolicy), where they were first defined.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from pathlib import Path

import grpc

from memhub.client_channel_options import channel_options

# Seconds the current attempt may take; unset outside hub_calls.HubCaller and the start-up check (then the
# client's own timeout applies).
attempt_timeout: contextvars.ContextVar[float | None] = contextvars.ContextVar("memhub_bridge_attempt_timeout", default=None)


@dataclass(frozen=True)
class HubTls:
    """TLS to the hub."""

    ca_file: Path | None = None
    """PEM bundle of the CA(s) that signed the hub's certificate; None trusts the system's roots."""

    def credentials(self) -> grpc.ChannelCredentials:
        root = None
        if self.ca_file is not None:
            try:
                root = Path(self.ca_file).read_bytes()
            except OSError as exc:
                raise ValueError(f"cannot read the hub CA file {self.ca_file}: {exc.strerror}") from None
        return grpc.ssl_channel_credentials(root_certificates=root)


@dataclass(frozen=True)
class RetryPolicy:
    """How long the bridge keeps trying to reach the hub for one tool call."""

    deadline_s: float = 10.0
    """Overall time budget per tool call, all attempts and waits included."""

    initial_backoff_s: float = 0.1
    """Wait after the first failed attempt; doubles after each further one."""

    max_backoff_s: float = 2.0
    """Upper bound of one wait."""


def open_channel(address: str, tls: HubTls | None) -> grpc.Channel:
    """A raw (untraced) channel to the hub, plaintext or TLS, with the options every hub channel gets. It
    connects at its first call; the start-up check makes that call, and the hub client then adopts the
    channel, tracing included (hub_client.py), so the tools' calls reuse the connection."""
    if tls is None:
        return grpc.insecure_channel(address, options=channel_options())
    return grpc.secure_channel(address, tls.credentials(), options=channel_options())
