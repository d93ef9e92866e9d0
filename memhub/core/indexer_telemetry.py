"""What the indexer reports: each batch that claims rows is a root span ``indexer.batch`` (its embedding,
Milvus and Postgres work are children), the work after catching up is ``indexer.catch_up``, and a failed
batch is counted by the store that failed (memhub/metrics/)."""

from __future__ import annotations

import time

from opentelemetry import context as otel_context
from opentelemetry import trace

from memhub import outage_log, telemetry

tracer = telemetry.tracer("memhub.core.indexer")  # the scope the spans always had
BATCH_SPAN = "indexer.batch"
CATCH_UP_SPAN = "indexer.catch_up"


class BatchSpan:
    """The batch's root span, opened only once rows are claimed (but timed from the claim)."""

    def __init__(self) -> None:
        self._start_ns = time.time_ns()
        self.span: trace.Span | None = None
        self._token: object | None = None

    def open(self, claimed: int) -> None:
        # An empty Context: a root span, whatever the calling thread has current.
        self.span = tracer.start_span(
            BATCH_SPAN, context=otel_context.Context(), start_time=self._start_ns, attributes={"memhub.indexer.claimed": claimed}
        )
        self._token = otel_context.attach(trace.set_span_in_context(self.span))

    def set(self, key: str, value: int) -> None:
        if self.span is not None:
            self.span.set_attribute(key, value)

    def failed(self, exc: BaseException) -> None:
        if self.span is not None:
            self.span.set_attribute("error.type", type(exc).__name__)
            self.span.set_status(trace.StatusCode.ERROR, type(exc).__name__)

    def close(self) -> None:
        if self._token is not None:
            otel_context.detach(self._token)  # type: ignore[arg-type]
            self._token = None
        if self.span is not None:
            self.span.end()


_OUTCOMES = {"milvus": "index_error", "embedder": "embedding_error", "postgres": "database_error", "disk": "database_error"}


def outcome(exc: Exception) -> str:
    """The metrics outcome of a failed batch: which store (or the embedder) failed, as the outage log names it."""
    return _OUTCOMES.get(outage_log.classify(exc) or "", "other_error")
