"""TelemetryConfig: how a memhub process exports spans, read from the environment (MEMHUB_TRACES_*, OTEL_*).

The OTLP/gRPC exporter reads its OTEL_EXPORTER_OTLP_* variables itself; they
are checked here first, so a bad value is a StartupError naming it rather
than an exporter that silently misreads it (memhub/telemetry.py installs it).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from memhub.errors import StartupError

EXPORTERS = ("otlp", "console", "file", "none")

_ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")


@dataclass(frozen=True)
class TelemetryConfig:
    """How this process exports spans.

    service_name: the resource's service.name (e.g. "memhub-hub", "memhub-bridge").
    exporter: "otlp" | "console" | "file" | "none".
    file_path: for "file": finished spans are appended there as JSON lines.
    """

    service_name: str
    exporter: str = "none"
    file_path: Path | None = None

    def __post_init__(self) -> None:
        if self.exporter not in EXPORTERS:
            raise ValueError(f"exporter must be one of {', '.join(EXPORTERS)}, got {self.exporter!r}")
        if self.exporter == "file" and self.file_path is None:
            raise ValueError('the "file" exporter needs file_path')
        if not self.service_name:
            raise ValueError("service_name must be non-empty")

    @staticmethod
    def from_env(env: Mapping[str, str] | None, service_name: str) -> TelemetryConfig:
        """Read the configuration from `env` (os.environ when None).

        - MEMHUB_TRACES_EXPORTER: otlp | console | file | none. Default: otlp
          when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT
          is set, else none. OTEL_SDK_DISABLED=true turns tracing off whatever it says.
        - MEMHUB_TRACES_FILE: the file for the "file" exporter (required with it;
          ignored by the others).
        - OTEL_SERVICE_NAME overrides `service_name`; OTEL_RESOURCE_ATTRIBUTES
          adds resource attributes.
        - For "otlp", the OTEL_EXPORTER_OTLP_* values are checked here (a bad
          one raises StartupError naming it) but read by the exporter itself
          from the process environment when setup_tracing creates it.

        Raises StartupError naming the variable when a value is invalid.
        """
        env = os.environ if env is None else env
        service_name = (env.get("OTEL_SERVICE_NAME") or "").strip() or service_name
        raw = (env.get("MEMHUB_TRACES_EXPORTER") or "").strip().lower()
        if raw and raw not in EXPORTERS:
            raise StartupError(f"MEMHUB_TRACES_EXPORTER must be one of {', '.join(EXPORTERS)}; got {raw!r}")
        exporter = raw or ("otlp" if any((env.get(v) or "").strip() for v in _ENDPOINT_VARS) else "none")
        if (env.get("OTEL_SDK_DISABLED") or "").strip().lower() == "true":
            exporter = "none"
        file_path = None
        if exporter == "file":
            value = (env.get("MEMHUB_TRACES_FILE") or "").strip()
            if not value:
                raise StartupError("MEMHUB_TRACES_EXPORTER=file needs MEMHUB_TRACES_FILE, the file to append spans to")
            file_path = Path(value).expanduser()
        if exporter == "otlp":
            _check_otlp_env(env)
        return TelemetryConfig(service_name=service_name, exporter=exporter, file_path=file_path)


def _check_otlp_env(env: Mapping[str, str]) -> None:
    """Refuse OTEL_EXPORTER_OTLP_* values the OTLP/gRPC exporter would silently misread."""
    for name in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        value = (env.get(name) or "").strip().lower()
        if value and value != "grpc":
            raise StartupError(
                f"{name}={value!r} is not supported: memhub exports traces with OTLP over gRPC; "
                "set it to grpc (collectors listen on port 4317 for it) or unset it"
            )
    for name in _ENDPOINT_VARS:
        value = (env.get(name) or "").strip()
        if not value:
            continue
        parsed = urlparse(value)
        if any(c.isspace() for c in value) or ("://" in value and (parsed.scheme not in ("http", "https") or not parsed.netloc)):
            raise StartupError(
                f"{name}={value!r} is not an OTLP/gRPC endpoint; use e.g. http://collector:4317 or https://host:4317"
            )
        if "://" not in value and ":" not in value:
            raise StartupError(f"{name}={value!r} has no port; use e.g. http://{value}:4317")
    for name in ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"):
        value = (env.get(name) or "").strip()
        if value:
            try:
                ok = float(value) > 0
            except ValueError:
                ok = False
            if not ok:
                raise StartupError(f"{name}={value!r} must be a positive number")
    for name in ("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"):
        value = (env.get(name) or "").strip().lower()
        if value and value not in ("gzip", "deflate", "none"):
            raise StartupError(f"{name}={value!r} must be gzip, deflate or none")
    for name in ("OTEL_EXPORTER_OTLP_TRACES_INSECURE", "OTEL_EXPORTER_OTLP_INSECURE"):
        value = (env.get(name) or "").strip().lower()
        if value and value not in ("true", "false"):
            raise StartupError(f"{name}={value!r} must be true or false")
    for name in ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"):
        value = (env.get(name) or "").strip()
        for item in filter(None, (part.strip() for part in value.split(","))):
            key, sep, _ = item.partition("=")
            if not sep or not key.strip():
                # Never echo the value: headers usually carry an API key.
                raise StartupError(f"{name} must be a comma-separated list of key=value pairs (one item has no key=)")
