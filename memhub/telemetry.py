"""OpenTelemetry tracing for memhub processes (the hub, the MCP bridge, the CLI).

    setup_tracing(TelemetryConfig.from_env(None, "memhub-hub"))
    ...
    with tracer(__name__).start_as_current_span("work"):
        ...
    shutdown_tracing()

Exporters: ``otlp`` (OTLP/gRPC, configured by the standard OTEL_EXPORTER_OTLP_*
variables, which the exporter reads itself), ``console`` (one JSON object per
span on **stderr**: stdout may carry a protocol, e.g. MCP over stdio),
``file`` (one JSON object per finished span appended to a file, so a test can
read the spans another process wrote: see `read_spans_file`) and ``none``
(no provider is installed; every span is a no-op and costs next to nothing).

One process, one configuration: the first `setup_tracing` call wins. Calling
it again with the same configuration does nothing; with another one it logs
a warning and is ignored (raising would crash a process whose parts each try
to set tracing up, and OpenTelemetry only lets the global TracerProvider be
set once anyway). `shutdown_tracing` flushes and detaches the exporter, after
which `setup_tracing` may be called again (tests do); the provider itself,
and so the resource (service.name) chosen first, stays for the process.

Context propagation is W3C trace context (OpenTelemetry's default
propagators, overridable with OTEL_PROPAGATORS). memhub never puts identity
(agent ids, groups, tokens) into baggage or spans, nor memory content or
query text into span attributes: only counts, lengths, ids of policies,
decisions, request ids and names of namespaces, those under agents/<id>
masked. Every span passes through memhub/span_privacy.py on its way to the
exporters, which also cuts error texts down to their codes.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_INSTANCE_ID, SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter, SpanExportResult

from memhub.errors import StartupError
from memhub.span_privacy import scrub

__all__ = [
    "EXPORTERS",
    "JsonLinesSpanExporter",
    "TelemetryConfig",
    "add_span_processor",
    "read_spans_file",
    "setup_tracing",
    "shutdown_tracing",
    "span_to_dict",
    "tracer",
]

log = logging.getLogger(__name__)

EXPORTERS = ("otlp", "console", "file", "none")
# The file exporter is for tests and local debugging: hand spans over quickly.
FILE_SCHEDULE_DELAY_MS = 100

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


# -- the file exporter ------------------------------------------------------------


def _plain(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple | list) else v for k, v in (attributes or {}).items()}


def span_to_dict(span: ReadableSpan) -> dict[str, Any]:
    """One finished span as a plain dict (the file exporter's line format)."""
    ctx = span.get_span_context()
    parent = span.parent
    return {
        "name": span.name,
        "trace_id": format(ctx.trace_id, "032x"),
        "span_id": format(ctx.span_id, "016x"),
        "parent_span_id": format(parent.span_id, "016x") if parent is not None else None,
        "parent_is_remote": bool(parent is not None and parent.is_remote),
        "kind": span.kind.name,
        "service_name": span.resource.attributes.get(SERVICE_NAME),
        "scope": span.instrumentation_scope.name if span.instrumentation_scope else None,
        "attributes": _plain(span.attributes),
        "status": {"code": span.status.status_code.name, "description": span.status.description},
        "events": [{"name": e.name, "time_unix_nano": e.timestamp, "attributes": _plain(e.attributes)} for e in span.events],
        "start_time_unix_nano": span.start_time,
        "end_time_unix_nano": span.end_time,
    }


class JsonLinesSpanExporter(SpanExporter):
    """Appends each finished span to `path` as one JSON object per line.

    Each export is written with a single O_APPEND write, so several processes
    may share one file and a reader never sees half a line from a finished
    write (`read_spans_file` skips a trailing partial line anyway). The file
    is created with mode 0600: spans name namespaces and policies.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        data = "".join(json.dumps(span_to_dict(s), ensure_ascii=False, separators=(",", ":")) + "\n" for s in spans)
        with self._lock:
            if self._fd is None:
                return SpanExportResult.FAILURE
            try:
                view = memoryview(data.encode("utf-8"))
                while view:
                    view = view[os.write(self._fd, view) :]
            except OSError as exc:
                log.warning("could not append %d spans to %s: %s", len(spans), self.path, exc)
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True  # every export is written through

    def shutdown(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def read_spans_file(path: Path | str) -> list[dict[str, Any]]:
    """The spans in a file written by JsonLinesSpanExporter (a trailing partial line is skipped)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    lines = text.split("\n")
    return [json.loads(line) for line in lines[:-1] if line.strip()]


# -- the process-wide provider ----------------------------------------------------


class _FanOut(SpanProcessor):
    """The one processor memhub adds to the provider: forwards to a changeable set of processors."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._processors: tuple[SpanProcessor, ...] = ()

    def add(self, processor: SpanProcessor) -> None:
        with self._lock:
            self._processors = (*self._processors, processor)

    def remove(self, processor: SpanProcessor) -> None:
        with self._lock:
            self._processors = tuple(p for p in self._processors if p is not processor)

    def on_start(self, span, parent_context=None) -> None:  # noqa: ANN001
        for p in self._processors:
            p.on_start(span, parent_context=parent_context)

    def _on_ending(self, span) -> None:  # noqa: ANN001
        for p in self._processors:
            p._on_ending(span)

    def on_end(self, span: ReadableSpan) -> None:
        span = scrub(span)  # no identities leave the process (memhub/span_privacy.py)
        for p in self._processors:
            p.on_end(span)

    def shutdown(self) -> None:
        for p in self._processors:
            p.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return all([p.force_flush(timeout_millis) for p in self._processors])


_lock = threading.RLock()
_fanout = _FanOut()
_provider: trace.TracerProvider | None = None  # the provider _fanout is attached to
_configured: TelemetryConfig | None = None
_exporting: SpanProcessor | None = None  # the processor setup_tracing added


def _ensure_provider(service_name: str | None) -> trace.TracerProvider | None:
    """The SDK provider memhub's spans go to, installing one as the global provider if none is.

    If something else (e.g. `opentelemetry-instrument`) installed an SDK
    provider first, memhub attaches to it; a non-SDK provider cannot take
    processors, so then None is returned.
    """
    global _provider
    with _lock:
        if _provider is not None:
            return _provider
        current = trace.get_tracer_provider()
        if isinstance(current, trace.ProxyTracerProvider):
            attributes: dict[str, str] = {SERVICE_INSTANCE_ID: str(uuid.uuid4())}
            if service_name:
                attributes[SERVICE_NAME] = service_name
            provider = TracerProvider(resource=Resource.create(attributes))
            provider.add_span_processor(_fanout)
            trace.set_tracer_provider(provider)
            if trace.get_tracer_provider() is not provider:  # lost a race with another installer
                current = trace.get_tracer_provider()
            else:
                _provider = provider
                return provider
        if isinstance(current, TracerProvider):
            current.add_span_processor(_fanout)
            _provider = current
            return current
        log.warning("a non-SDK TracerProvider (%s) is installed; memhub cannot add its exporter to it", type(current).__name__)
        return None


def _make_exporter(config: TelemetryConfig) -> SpanExporter:
    if config.exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter  # noqa: PLC0415 - heavy import

        return OTLPSpanExporter()
    if config.exporter == "console":
        # stderr: stdout may be a protocol channel (MCP over stdio).
        return ConsoleSpanExporter(out=sys.stderr, formatter=lambda span: span.to_json(indent=None) + "\n")
    assert config.file_path is not None
    try:
        return JsonLinesSpanExporter(config.file_path)
    except OSError as exc:
        raise StartupError(
            f"cannot open the trace file {config.file_path} (MEMHUB_TRACES_FILE): {exc.strerror or exc}; "
            "check that its directory exists and is writable"
        ) from None


def setup_tracing(config: TelemetryConfig) -> None:
    """Install tracing for this process as `config` says (see the module docstring for repeated calls).

    "none" installs nothing (spans are no-ops); the others install the
    global SDK TracerProvider (once per process) with a BatchSpanProcessor
    for the exporter; the file exporter hands spans over every 100 ms.
    Raises StartupError when the trace file cannot be opened.
    """
    global _configured, _exporting
    with _lock:
        if _configured is not None:
            if config != _configured:
                log.warning(
                    "tracing is already set up for this process (%s, exporter %s); "
                    "ignoring the new configuration (%s, exporter %s)",
                    _configured.service_name,
                    _configured.exporter,
                    config.service_name,
                    config.exporter,
                )
            return
        if config.exporter == "none":
            _configured = config
            return
        exporter = _make_exporter(config)
        provider = _ensure_provider(config.service_name)
        if provider is None:
            exporter.shutdown()
            _configured = config
            return
        resource = getattr(provider, "resource", None)
        name = resource.attributes.get(SERVICE_NAME) if resource is not None else None
        if name != config.service_name:
            log.warning(
                "the tracer provider was installed earlier as service %r; spans keep that name, not %r", name, config.service_name
            )
        delay = FILE_SCHEDULE_DELAY_MS if config.exporter == "file" else None
        processor = BatchSpanProcessor(exporter, schedule_delay_millis=delay)
        _fanout.add(processor)
        _exporting = processor
        _configured = config
        log.info("tracing on: service %s, exporter %s", config.service_name, config.exporter)


def shutdown_tracing() -> None:
    """Flush every pending span, then shut the exporter down. Safe to call when tracing is off or twice."""
    global _configured, _exporting
    with _lock:
        processor, _exporting, _configured = _exporting, None, None
    _fanout.force_flush()
    if processor is not None:
        _fanout.remove(processor)
        processor.shutdown()


def add_span_processor(processor: SpanProcessor, *, service_name: str | None = None) -> Callable[[], None]:
    """Send this process's spans to `processor` too; returns a function that detaches it again.

    For tests (an InMemorySpanExporter behind a SimpleSpanProcessor) and for
    programs embedding the hub. Installs the global SDK provider if nothing
    has (named `service_name`, else OTEL_SERVICE_NAME or unknown_service).
    Works whether or not setup_tracing ran, before or after it.
    """
    if _ensure_provider(service_name) is None:
        raise RuntimeError("a non-SDK TracerProvider is installed; cannot add a span processor to it")
    _fanout.add(processor)

    def remove() -> None:
        _fanout.remove(processor)
        processor.shutdown()

    return remove


def tracing_active() -> bool:
    """Whether an SDK tracer provider is installed: spans are recorded somewhere (else every span is a no-op)."""
    return _provider is not None or isinstance(trace.get_tracer_provider(), TracerProvider)


def tracer(name: str) -> trace.Tracer:
    """A tracer for module `name`; usable before setup_tracing (it follows the provider installed later)."""
    return trace.get_tracer(name)
