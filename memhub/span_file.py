"""Spans as JSON lines in a file: the ``file`` exporter, so a test can read the spans another process wrote.

One JSON object per finished span (``span_to_dict``), appended with one
O_APPEND write per export; ``read_spans_file`` reads them back.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import SERVICE_NAME
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

log = logging.getLogger(__name__)


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
