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

The configuration is in memhub/telemetry_config.py, the file exporter in
memhub/span_file.py; both are re-exported here, memhub's one entry point for tracing.
"""

from __future__ import annotations

import logging
import sys
import threading
import uuid
from collections.abc import Callable

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_INSTANCE_ID, SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from memhub.errors import StartupError
from memhub.span_file import JsonLinesSpanExporter, read_spans_file, span_to_dict
from memhub.span_privacy import scrub
from memhub.telemetry_config import EXPORTERS, TelemetryConfig

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

# The file exporter is for tests and local debugging: hand spans over quickly.
FILE_SCHEDULE_DELAY_MS = 100

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
