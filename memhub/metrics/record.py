"""What the hub's code calls to record a metric: one function per event, each a no-op while nothing serves metrics.

Recording is switched on by a hub that serves /metrics (``activate`` when
its endpoint starts, ``deactivate`` when it stops): a hub without
MEMHUB_METRICS_PORT pays one global check per event and nothing else
(bench/bench_metrics.py measures both). Callers pass values from fixed
sets only (memhub/metrics/instruments.py says which).
"""

from __future__ import annotations

import threading

from memhub.metrics import instruments as m

_lock = threading.Lock()
_active = 0


def activate() -> None:
    """Start recording (one more endpoint serves the process's metrics)."""
    global _active
    with _lock:
        _active += 1


def deactivate() -> None:
    """Stop recording once the last endpoint has stopped."""
    global _active
    with _lock:
        _active = max(0, _active - 1)


def recording() -> bool:
    return _active > 0


def rpc(service: str, method: str, code: str, seconds: float) -> None:
    """A gRPC call ended with status ``code`` (the StatusCode's name) after ``seconds``."""
    if _active:
        m.RPC_REQUESTS.labels(service, method, code).inc()
        m.RPC_DURATION.labels(service, method, code).observe(seconds)


def policy_decision(action: str, allowed: bool, count: int = 1) -> None:
    """``count`` audited decisions of ``action`` with one effect."""
    if _active and count:
        m.POLICY_DECISIONS.labels(action, "allow" if allowed else "deny").inc(count)


def auth_failure(reason: str) -> None:
    """A call refused with UNAUTHENTICATED; ``reason`` is a category of memhub/auth/failures.py."""
    if _active:
        m.AUTH_FAILURES.labels(reason).inc()


def limit_refused(reason: str) -> None:
    """A call refused by a rate, concurrency or stream limit (memhub/api/call_limits.py ``Refused.reason``)."""
    if _active:
        m.LIMIT_REFUSALS.labels(reason).inc()


def quota_refused(reason: str) -> None:
    """A write refused by a storage or namespace quota (memhub/core/quotas.py ``quota_reason``)."""
    if _active:
        m.QUOTA_REFUSALS.labels(reason).inc()


def indexer_batch(outcome: str, seconds: float, rows: int = 0, upserted: int = 0, deleted: int = 0) -> None:
    """One indexer batch: ``outcome`` is "ok" or one of the *_error outcomes; rows are counted when it committed."""
    if not _active:
        return
    m.INDEXER_BATCHES.labels(outcome).inc()
    m.INDEXER_DURATION.observe(seconds)
    if outcome == "ok":
        m.INDEXER_ROWS.inc(rows)
        if upserted:
            m.INDEXER_MEMORIES.labels("upsert").inc(upserted)
        if deleted:
            m.INDEXER_MEMORIES.labels("delete").inc(deleted)


def embedding_call(lane: str, texts: int, seconds: float, ok: bool) -> None:
    """One call to the embedding model with ``texts`` texts, on the "query" or "bulk" lane."""
    if not _active:
        return
    m.EMBEDDING_BATCH.labels(lane).observe(texts)
    m.EMBEDDING_DURATION.labels(lane).observe(seconds)
    if not ok:
        m.EMBEDDING_FAILURES.labels(lane).inc()


def milvus_call(operation: str, seconds: float, ok: bool) -> None:
    """One retrieval-index operation ("search_dense", "upsert"...)."""
    if _active:
        m.MILVUS_DURATION.labels(operation, "ok" if ok else "error").observe(seconds)


def postgres_statement(operation: str, seconds: float, ok: bool) -> None:
    """One SQL statement; ``operation`` is one of instruments.POSTGRES_OPERATIONS."""
    if _active:
        m.POSTGRES_DURATION.labels(operation, "ok" if ok else "error").observe(seconds)


def sample_failed(sample: str) -> None:
    """A sample of the stores ("outbox" or "statuses") failed."""
    if _active:
        m.SAMPLE_FAILURES.labels(sample).inc()


def security_event(action: str, reason: str) -> None:
    """One event memhub/audit/aggregate.py counts; a pair outside instruments.SECURITY_EVENT_REASONS is counted
    under (action, "other") and an unknown action as ("other", "other"), so no caller can add series."""
    if not _active:
        return
    reasons = m.SECURITY_EVENT_REASONS.get(action)
    if reasons is None:
        action, reason = "other", "other"
    elif reason not in reasons:
        reason = "other"
    m.SECURITY_EVENTS.labels(action, reason).inc()


def retrieval_log_dropped(count: int = 1) -> None:
    """``count`` searches the retrieval log's full queue left out."""
    if _active and count:
        m.RETRIEVAL_LOG_DROPPED.inc(count)
