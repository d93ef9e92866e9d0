"""Metrics settings: where /metrics is served and how often the stores are sampled for it.

    MEMHUB_METRICS_PORT=9464           (unset: no endpoint, and nothing is recorded; 0: any free port)
    MEMHUB_METRICS_HOST=127.0.0.1      (0.0.0.0 in containers, so Prometheus can reach it)
    MEMHUB_METRICS_SAMPLE_S=15         (outbox depth and index lag)
    MEMHUB_METRICS_STATUS_SAMPLE_S=60  (memories per status: a scan of the memories table)

A malformed value stops the hub at start with a message naming the variable.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass

from memhub.env_settings import env_float
from memhub.errors import StartupError

_HOSTNAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")


@dataclass(frozen=True)
class MetricsConfig:
    port: int | None = None
    """TCP port of the Prometheus endpoint (MEMHUB_METRICS_PORT, `memhub serve --metrics-port`). None: no endpoint
    and no recording at all, so a hub that nobody scrapes pays nothing; 0 picks a free port (tests)."""

    host: str = "127.0.0.1"
    """Interface the endpoint listens on (MEMHUB_METRICS_HOST, `--metrics-host`). Loopback by default: the
    endpoint has no authentication, and its figures (call rates, refusals) are for operators."""

    sample_interval_s: float = 15.0
    """How often the outbox is sampled for its depth and the index lag (MEMHUB_METRICS_SAMPLE_S, 1 to 3600).
    Scrapes never query a store: they read the last sample, so scraping often (or abusively) costs no SQL."""

    status_interval_s: float = 60.0
    """How often memories are counted per status (MEMHUB_METRICS_STATUS_SAMPLE_S, 5 to 86400): a GROUP BY over the
    memories table, so less often than the outbox; each query runs under a statement timeout."""

    @property
    def enabled(self) -> bool:
        return self.port is not None

    @staticmethod
    def from_env(env: Mapping[str, str]) -> MetricsConfig:
        """Read the MEMHUB_METRICS_* variables; StartupError names the one that is malformed."""
        d = MetricsConfig()
        return MetricsConfig(
            port=_port(env.get("MEMHUB_METRICS_PORT", "")),
            host=_host(env.get("MEMHUB_METRICS_HOST", "") or d.host),
            sample_interval_s=env_float(env, "MEMHUB_METRICS_SAMPLE_S", d.sample_interval_s, 1.0, 3600.0, "seconds"),
            status_interval_s=env_float(env, "MEMHUB_METRICS_STATUS_SAMPLE_S", d.status_interval_s, 5.0, 86_400.0, "seconds"),
        )


def _port(raw: str) -> int | None:
    raw = raw.strip()
    if not raw:
        return None
    if not raw.isdigit() or not 0 <= int(raw) <= 65535:
        raise StartupError(f"MEMHUB_METRICS_PORT={raw!r} is not a port (0 to 65535; unset it to serve no metrics)")
    return int(raw)


def _host(raw: str) -> str:
    host = raw.strip()
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    if not _HOSTNAME.fullmatch(host):
        raise StartupError(f"MEMHUB_METRICS_HOST={raw!r} is not an IP address or host name (e.g. 127.0.0.1 or 0.0.0.0)")
    return host
