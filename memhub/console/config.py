"""Console settings: a frozen dataclass read from MEMHUB_CONSOLE_* variables (flags override them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from memhub.env_settings import env_flag, env_float, env_int

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class ConsoleConfig:
    host: str = "127.0.0.1"
    """Interface the console listens on (MEMHUB_CONSOLE_HOST). Loopback by default: the console shows every
    memory its operators may read, so expose it only behind TLS and an access proxy."""

    port: int = 0
    """HTTP port (MEMHUB_CONSOLE_PORT, `--console-port` of `memhub serve`, `--port` of `memhub console`); 0 picks a
    free one. `memhub serve` runs no console unless one of these is set."""

    hub_address: str = ""
    """The hub's gRPC address HOST:PORT the console calls (`memhub console --hub`); set by `memhub serve` itself."""

    token_file: Path | None = None
    """A file holding the local operator's token (MEMHUB_CONSOLE_TOKEN_FILE, `--token-file`): the console then
    prints a sign-in link with a secret key, valid while it runs. The file is read when the link is used (so a
    renewed token is picked up); the token itself never goes into argv."""

    idle_timeout_s: float = 1800.0
    """A session unused this long is signed out (MEMHUB_CONSOLE_IDLE_TIMEOUT_S, 60 to 86400); it ends at its
    token's expiry in any case."""

    max_sessions: int = 256
    """Sessions held at once (MEMHUB_CONSOLE_MAX_SESSIONS, 1 to 10000); past it the least recently used ends."""

    secure_cookies: bool = False
    """Mark cookies Secure (MEMHUB_CONSOLE_SECURE_COOKIES=1): set it when the console is reached over HTTPS
    (a TLS-terminating proxy); browsers do not send Secure cookies over plain http://127.0.0.1."""

    allowed_hosts: tuple[str, ...] = ()
    """Host header values accepted besides loopback names and the listening host (MEMHUB_CONSOLE_ALLOWED_HOSTS,
    comma-separated): a request for any other host is refused, which defeats DNS rebinding."""

    call_timeout_s: float = 15.0
    """Deadline of each gRPC call the console makes (MEMHUB_CONSOLE_CALL_TIMEOUT_S, 1 to 300)."""

    def accepted_hosts(self) -> list[str]:
        """Host header names accepted; an IPv6 literal is matched in the bracketed form browsers send ([::1])."""
        names = {*LOOPBACK_HOSTS, self.host, *self.allowed_hosts} - {"0.0.0.0", "::", "[::]"}
        return sorted(f"[{n}]" if ":" in n and not n.startswith("[") else n.lower() for n in names)

    @classmethod
    def from_env(cls, env: Mapping[str, str], **overrides: object) -> ConsoleConfig:
        """Read the MEMHUB_CONSOLE_* variables; ``overrides`` (from command-line flags) win when not None."""
        d = cls()
        token_file = env.get("MEMHUB_CONSOLE_TOKEN_FILE") or None
        values: dict[str, object] = {
            "host": env.get("MEMHUB_CONSOLE_HOST") or d.host,
            "port": env_int(env, "MEMHUB_CONSOLE_PORT", d.port, 0, 65535),
            "token_file": Path(token_file) if token_file else None,
            "idle_timeout_s": env_float(env, "MEMHUB_CONSOLE_IDLE_TIMEOUT_S", d.idle_timeout_s, 60.0, 86400.0),
            "max_sessions": env_int(env, "MEMHUB_CONSOLE_MAX_SESSIONS", d.max_sessions, 1, 10_000),
            "secure_cookies": env_flag(env, "MEMHUB_CONSOLE_SECURE_COOKIES", d.secure_cookies),
            "allowed_hosts": tuple(h.strip() for h in env.get("MEMHUB_CONSOLE_ALLOWED_HOSTS", "").split(",") if h.strip()),
            "call_timeout_s": env_float(env, "MEMHUB_CONSOLE_CALL_TIMEOUT_S", d.call_timeout_s, 1.0, 300.0),
        }
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]
