"""The hub's Prometheus instruments: names, help texts, label sets and buckets, in one process-wide registry.

Cardinality: every label value comes from a fixed set in the code (gRPC
method names of registered handlers only, status code names, policy actions,
failure categories, operation names). No agent id, group, namespace, token id
or error message is ever a label value: one agent creating namespaces or
forging tokens cannot grow the series count. Per-agent figures are in
AdminService.GetLimits and the audit log, which are access-controlled.

The registry is the process's (one hub per process in production); the
state gauges that belong to one hub (queue depths, samples of the stores)
are collected by that hub's endpoint (memhub/metrics/state.py). Recording is
gated by memhub/metrics/record.py: a hub serving no metrics records nothing.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from memhub.auth.failures import REASONS as AUTH_REASONS

# No "<name>_created" series: in the text format Prometheus stores each as one more gauge per child,
# doubling the series of every counter and histogram for a start time that process_start_time_seconds gives.
disable_created_metrics()

REGISTRY = CollectorRegistry(auto_describe=True)
"""Everything the process records; each hub's endpoint serves it with that hub's state gauges."""

ProcessCollector(registry=REGISTRY)  # process_cpu_seconds_total, process_resident_memory_bytes, open fds
PlatformCollector(registry=REGISTRY)  # python_info
GCCollector(registry=REGISTRY)  # python_gc_*

# Seconds: from half a millisecond (a cached policy decision, a primary-key read) to half a minute
# (a stalled store, a long stream).
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# Texts per model call: the batcher sends at most MEMHUB_EMBEDDING_BATCH_MAX (64 by default) at once.
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)

LIMIT_REASONS = ("agent-rate", "group-rate", "agent-concurrency", "group-concurrency", "agent-streams", "source-streams")
"""Every ``Refused.reason`` of memhub/api/call_limits.py."""
QUOTA_REASONS = ("namespaces-per-agent", "namespace-bytes", "namespace-memories", "quota")
"""Every ``quota_reason`` of memhub/core/quotas.py."""
FILTER_RULES = ("small_talk", "chatter", "no_words", "too_short")
"""Every rule of memhub/curation/write_filter.py that drops a memory."""
OVERFLOW_REASON = "overflow"
"""memhub/audit/aggregate.py's key for the events past its bound in one window."""
SECURITY_EVENT_REASONS = {
    "authenticate": (*AUTH_REASONS, OVERFLOW_REASON),
    "limit": (*LIMIT_REASONS, OVERFLOW_REASON),
    "quota": (*QUOTA_REASONS, OVERFLOW_REASON),
    "filter": (*FILTER_RULES, OVERFLOW_REASON),
}
"""Every (action, reason) memhub/audit/aggregate.py counts; anything else is counted as (action, "other")."""
INDEXER_OUTCOMES = ("ok", "index_error", "embedding_error", "database_error", "other_error")
EMBEDDING_LANES = ("query", "bulk")
POSTGRES_OPERATIONS = ("select", "insert", "update", "delete", "with", "other")

RPC_REQUESTS = Counter(
    "memhub_rpc_requests",
    "gRPC calls finished, by service, method and status code (streams count when they end).",
    ["service", "method", "code"],
    registry=REGISTRY,
)
RPC_DURATION = Histogram(
    "memhub_rpc_duration_seconds",
    "Time from a call's arrival to its answer, as the hub sees it (token check, limits and waiting for a slot "
    "included); for streaming methods the stream's lifetime.",
    ["service", "method", "code"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
POLICY_DECISIONS = Counter(
    "memhub_policy_decisions",
    "Policy decisions as audited, by action and effect: one per namespace decided, one per search or list scope.",
    ["action", "effect"],
    registry=REGISTRY,
)
AUTH_FAILURES = Counter(
    "memhub_auth_failures",
    "Calls refused with UNAUTHENTICATED, by reason (a fixed category, never the token's own text).",
    ["reason"],
    registry=REGISTRY,
)
LIMIT_REFUSALS = Counter(
    "memhub_limit_refusals",
    "Calls refused with RESOURCE_EXHAUSTED by a rate, concurrency or stream limit, by reason.",
    ["reason"],
    registry=REGISTRY,
)
QUOTA_REFUSALS = Counter(
    "memhub_quota_refusals",
    "Writes refused with RESOURCE_EXHAUSTED by a storage or namespace quota, by reason.",
    ["reason"],
    registry=REGISTRY,
)
INDEXER_BATCHES = Counter(
    "memhub_indexer_batches",
    "Indexer batches that claimed outbox rows (or failed trying), by outcome.",
    ["outcome"],
    registry=REGISTRY,
)
INDEXER_ROWS = Counter(
    "memhub_indexer_outbox_rows",
    "Outbox rows applied to the index by this replica (its throughput).",
    registry=REGISTRY,
)
INDEXER_MEMORIES = Counter(
    "memhub_indexer_memories",
    "Memories written to (upsert) or removed from (delete) the index by this replica.",
    ["operation"],
    registry=REGISTRY,
)
INDEXER_DURATION = Histogram(
    "memhub_indexer_batch_duration_seconds",
    "Time of one indexer batch, from the claim to the commit (embedding and the Milvus write included).",
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
EMBEDDING_BATCH = Histogram(
    "memhub_embedding_batch_texts",
    "Texts per call to the embedding model, by lane (query: searches, coalesced; bulk: indexing chunks).",
    ["lane"],
    buckets=BATCH_BUCKETS,
    registry=REGISTRY,
)
EMBEDDING_DURATION = Histogram(
    "memhub_embedding_duration_seconds",
    "Time of one call to the embedding model (local inference or one HTTP request), by lane.",
    ["lane"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
EMBEDDING_FAILURES = Counter(
    "memhub_embedding_failures",
    "Calls to the embedding model that failed, by lane.",
    ["lane"],
    registry=REGISTRY,
)
MILVUS_DURATION = Histogram(
    "memhub_milvus_call_duration_seconds",
    "Time of one retrieval-index operation (retries after a heal included), by operation and outcome.",
    ["operation", "outcome"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
POSTGRES_DURATION = Histogram(
    "memhub_postgres_statement_duration_seconds",
    "Time of one SQL statement on the hub's connection pool, by its first keyword and outcome.",
    ["operation", "outcome"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
CHANGE_FEED_STREAMS = Gauge(
    "memhub_change_feed_streams",
    "Change-feed streams open on this replica now.",
    registry=REGISTRY,
)
SEARCHES_WAITING = Gauge(
    "memhub_searches_waiting",
    "Searches waiting now for one of this replica's search slots (MEMHUB_SEARCH_SLOTS; memhub/api/search_slots.py).",
    registry=REGISTRY,
)
SECURITY_EVENTS = Counter(
    "memhub_security_events",
    "Events the audit log counts in aggregate (memhub/audit/aggregate.py), by audit action and reason: failed "
    "authentications, calls refused by a limit or a quota, writes the write filter dropped.",
    ["action", "reason"],
    registry=REGISTRY,
)
RETRIEVAL_LOG_DROPPED = Counter(
    "memhub_retrieval_log_dropped",
    "Searches left out of the retrieval log because its queue was full (MEMHUB_RETRIEVAL_LOG_QUEUE).",
    registry=REGISTRY,
)
SAMPLE_FAILURES = Counter(
    "memhub_state_sample_failures",
    "Samples of the stores (outbox, memories per status) that failed or timed out, by sample.",
    ["sample"],
    registry=REGISTRY,
)

# Known label values start at 0, so that rate() and "no refusals yet" read as 0 instead of no data.
for _reason in AUTH_REASONS:
    AUTH_FAILURES.labels(_reason)
for _reason in LIMIT_REASONS:
    LIMIT_REFUSALS.labels(_reason)
for _reason in QUOTA_REASONS:
    QUOTA_REFUSALS.labels(_reason)
for _outcome in INDEXER_OUTCOMES:
    INDEXER_BATCHES.labels(_outcome)
for _lane in EMBEDDING_LANES:
    EMBEDDING_FAILURES.labels(_lane)
for _sample in ("outbox", "statuses"):
    SAMPLE_FAILURES.labels(_sample)
for _action, _reasons in SECURITY_EVENT_REASONS.items():
    for _reason in _reasons:
        SECURITY_EVENTS.labels(_action, _reason)
