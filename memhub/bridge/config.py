"""The bridge's settings: one dataclass, built from command-line arguments and the environment.

Secrets (the agent's hub token, the HTTP bearer token) come from files or
environment variables only. Command-line arguments are readable by every
user of the machine (`ps`, /proc/<pid>/cmdline), so flags that would carry a
secret are refused outright (see cli.py).
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from memhub.bridge.hub_options import HubTls, RetryPolicy
from memhub.bridge.narrowing import Narrowing
from memhub.bridge.token_claims import agent_of
from memhub.core.namespaces import validate_namespace
from memhub.errors import InvalidArgument

log = logging.getLogger("memhub.bridge")

DEFAULT_HTTP_PORT = 8765
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
# Browser pages served from this machine; any other Origin is refused unless configured.
LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
# Shorter shared secrets can be guessed by anything that can reach the port.
MIN_HTTP_TOKEN_CHARS = 16


class SettingsError(ValueError):
    """A setting is missing or wrong; the message says which and how to fix it."""


@dataclass(frozen=True)
class BridgeSettings:
    """Everything one agent's bridge needs to run."""

    hub_address: str
    """The hub's gRPC address, HOST:PORT."""

    token: str = field(repr=False)
    """The agent's JWT for the hub. Never logged, never put in traces."""

    transport: Literal["stdio", "http"] = "stdio"
    """stdio (one client that started the bridge) or streamable HTTP (clients that connect to it)."""

    host: str = "127.0.0.1"
    """HTTP only: the address to listen on. Loopback unless the bridge must be reached from elsewhere."""

    port: int = DEFAULT_HTTP_PORT
    """HTTP only: the port; 0 picks a free one (the URL is printed on stderr)."""

    http_token: str | None = field(default=None, repr=False)
    """HTTP only: the bearer token clients must send. Required for HTTP."""

    allowed_origins: tuple[str, ...] = LOOPBACK_ORIGINS
    """HTTP only: Origin header values accepted ("scheme://host:*" allows any port). No Origin is always accepted."""

    narrowing: Narrowing = Narrowing()
    """The namespaces and tools this bridge is limited to (narrowing.py)."""

    hub_tls: HubTls | None = None
    """TLS to the hub; None for plaintext (a hub on the same machine or inside one pod)."""

    retry: RetryPolicy = RetryPolicy()
    """How long a tool call keeps trying to reach the hub."""

    def __post_init__(self) -> None:
        if not self.token.strip():
            raise SettingsError("the agent's hub token is empty")
        if self.transport == "http":
            if not self.http_token:
                raise SettingsError(
                    "streamable HTTP needs a bearer token of its own so that other local users and web pages "
                    "cannot act as this agent: put one in a file (--http-token-file FILE) or in "
                    "MEMHUB_BRIDGE_HTTP_TOKEN, e.g. `openssl rand -hex 32`"
                )
            if len(self.http_token) < MIN_HTTP_TOKEN_CHARS:
                raise SettingsError(
                    f"the HTTP bearer token has {len(self.http_token)} characters; use at least {MIN_HTTP_TOKEN_CHARS} "
                    "(e.g. `openssl rand -hex 32`) so it cannot be guessed"
                )
        if not 0 <= self.port <= 65535:
            raise SettingsError(f"--port {self.port} is not a TCP port (0 to 65535)")
        if self.retry.deadline_s <= 0:
            raise SettingsError("--deadline must be a positive number of seconds")

    @property
    def agent_id(self) -> str | None:
        """The agent named in the token, read WITHOUT verifying it: for defaults and logs only.

        The hub verifies the token on every call; nothing here grants anything on the strength of this value.
        """
        return agent_of(self.token)

    @property
    def default_namespace(self) -> str | None:
        """Where write_memory goes without a namespace: the narrowing's default, else the agent's own
        `agents/<id>` (what the shipped default policy lets every agent own) when the narrowing allows it,
        else the narrowing's only root, else none (then the model must name one)."""
        if self.narrowing.default_namespace:
            return self.narrowing.default_namespace
        agent = self.agent_id
        if agent:
            own = f"agents/{agent}"
            try:
                validate_namespace(own)
            except InvalidArgument:
                own = ""
            if own and self.narrowing.allows(own):
                return own
        if len(self.narrowing.namespaces) == 1:
            return self.narrowing.namespaces[0]
        return None


def read_secret(path: Path | None, env: Mapping[str, str], env_var: str, what: str) -> str | None:
    """A secret from a file (first line, stripped) or else from an environment variable; None when neither is set."""
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise SettingsError(f"cannot read the {what} file {path}: {exc.strerror}") from None
        if not text:
            raise SettingsError(f"the {what} file {path} is empty")
        _warn_if_readable_by_others(Path(path), what)
        return text.splitlines()[0].strip()
    value = env.get(env_var, "").strip()
    return value or None


def _warn_if_readable_by_others(path: Path, what: str) -> None:
    try:
        mode = path.stat().st_mode
    except OSError:
        return
    # Group-readable is how Kubernetes mounts a Secret for a pod's fsGroup (0440):
    # warn only when any user may read it.
    if mode & stat.S_IROTH:
        log.warning(
            f"the {what} file is readable by every user; `chmod 600 {path}`",
            extra={"path": str(path), "mode": oct(mode & 0o777)},
        )


def origins_from_env(env: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """Extra allowed origins from MEMHUB_BRIDGE_ALLOWED_ORIGINS (comma-separated)."""
    return tuple(o.strip() for o in env.get("MEMHUB_BRIDGE_ALLOWED_ORIGINS", "").split(",") if o.strip())
