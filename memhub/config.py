"""Hub configuration: dataclasses with a docstring per field, read from MEMHUB_* variables.

Everything has a default that runs on one machine with nothing installed
beyond the package: embedded Postgres and Milvus Lite under one data
directory, the bundled embedding model, loopback only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from memhub.auth import AuthConfig
from memhub.core.namespaces import validate_namespace
from memhub.core.screening import ScreeningConfig
from memhub.curation.archive import ArchiveConfig
from memhub.curation.consolidation_config import ConsolidationConfig
from memhub.curation.fact_extraction import ExtractionConfig
from memhub.curation.near_dup import NearDupConfig
from memhub.curation.write_gate import GateConfig
from memhub.data_dir import default_data_dir
from memhub.embedding import EmbeddingConfig
from memhub.env_settings import env_float, env_int
from memhub.errors import InvalidArgument, StartupError
from memhub.feed.config import ChangeFeedConfig
from memhub.metrics.config import MetricsConfig
from memhub.rerank.config import RerankConfig
from memhub.retrieval_log.config import RetrievalLogConfig
from memhub.search.priors import PriorWeights
from memhub.session_state.config import SessionStateConfig


@dataclass(frozen=True)
class StoreConfig:
    data_dir: Path = field(default_factory=default_data_dir)
    """Where the embedded Postgres and Milvus Lite keep their files (MEMHUB_DATA_DIR)."""

    database_url: str | None = None
    """PostgreSQL 15+ URL (MEMHUB_DATABASE_URL); unset means the embedded server in data_dir/postgres."""

    milvus_uri: str | None = None
    """Milvus URI such as http://milvus:19530 (MEMHUB_MILVUS_URI), or a Milvus Lite data file ``<dir>/<name>.db``;
    unset means Milvus Lite in data_dir/milvus-index.db."""

    milvus_token_env: str = "MEMHUB_MILVUS_TOKEN"
    """Name of the environment variable holding the Milvus token, if the server needs one."""

    milvus_collection: str = "memhub_memories"
    """Collection name (MEMHUB_MILVUS_COLLECTION)."""

    lite_approximate_rows: int | None = None
    """Milvus Lite only: past this many rows, search an approximate dense index instead of an exact one
    (MEMHUB_LITE_APPROXIMATE_ROWS; unset or 0: always exact). Measured at 100k rows: about 4x faster,
    recall@10 0.73 (memhub/index/backend.py)."""

    def resolved_milvus_uri(self) -> str:
        # Not "milvus.db": that name is the directory the old Milvus Lite 3.x made.
        return self.milvus_uri or str(self.data_dir / "milvus-index.db")


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    """Interface to listen on (MEMHUB_HOST); loopback by default, 0.0.0.0 in containers."""

    port: int = 50051
    """gRPC port (MEMHUB_PORT); 0 picks a free one."""

    max_workers: int = 32
    """gRPC worker threads: bounds concurrent calls being served."""

    max_message_bytes: int = 8 * 1024 * 1024
    """Largest request or response message (MEMHUB_MAX_MESSAGE_BYTES)."""

    max_response_bytes: int = 4 * 1024 * 1024
    """List pages and search results are cut to stay under this (MEMHUB_MAX_RESPONSE_BYTES, at most
    max_message_bytes): 4 MiB is gRPC clients' default receive limit, so every client can read every reply."""


@dataclass(frozen=True)
class IndexerConfig:
    enabled: bool = True
    """Run the outbox indexer in this process (MEMHUB_INDEXER=0 to leave it to other replicas)."""

    batch_size: int = 256
    """Outbox rows claimed per batch (one bulk embedding, one Milvus upsert, one commit); memories are
    locked only after their embedding, so a large batch does not hold up forgets."""

    poll_interval_s: float = 1.0
    """Fallback polling when no NOTIFY arrives."""

    wait_indexed_timeout_s: float = 10.0
    """Longest a write with wait_indexed waits before answering indexed=false."""

    keyword_context_before: int = 2
    """Earlier turns of the same session (same namespace) indexed for keywords with an episodic memory
    (MEMHUB_KEYWORD_CONTEXT_BEFORE, 0 to 5; 0 with no turns after turns it off). A change applies
    to memories indexed afterwards; ``memhub reindex`` applies it to all."""

    keyword_context_after: int = 2
    """Later turns likewise (MEMHUB_KEYWORD_CONTEXT_AFTER, 0 to 5); each write then re-indexes the turn
    before it for keywords (its vector is reused, not embedded again)."""


CHANNEL_WEIGHT_NAMES = ("dense", "keyword", "entity", "time", "expansion")


@dataclass(frozen=True)
class SearchConfig:
    neighbour_smoothing: float = 0.1
    """Share of the fused score of a hit's adjacent turns (same session) added to its own
    (MEMHUB_NEIGHBOUR_SMOOTHING, 0 to 1; 0 is off). A request may turn it on or off."""

    channel_weights: tuple[tuple[str, float], ...] = (
        ("dense", 1.0),
        ("keyword", 1.0),
        ("entity", 0.0),
        ("time", 0.5),
        ("expansion", 0.5),
    )
    """Weight of each channel in the fusion (MEMHUB_CHANNEL_WEIGHTS, e.g. "entity=0.3,time=1";
    names not given keep these defaults; a channel weighted 0 does not run). Chosen on LoCoMo
    conversations 1-5 (README, Benchmarks): the entity channel cost recall there at 0.5 and 0.15."""

    expansion: bool = False
    """Run the second, expanded retrieval round by default (MEMHUB_EXPANSION=1). A request may turn it on or off."""


def _weights(env: Mapping[str, str]) -> tuple[tuple[str, float], ...]:
    weights = dict(SearchConfig.channel_weights)
    raw = env.get("MEMHUB_CHANNEL_WEIGHTS", "")
    for part in filter(None, (p.strip() for p in raw.split(","))):
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or name not in CHANNEL_WEIGHT_NAMES:
            raise StartupError(
                f"MEMHUB_CHANNEL_WEIGHTS: {part!r} is not NAME=WEIGHT with NAME one of {', '.join(CHANNEL_WEIGHT_NAMES)}"
            )
        try:
            weight = float(value)
        except ValueError:
            raise StartupError(f"MEMHUB_CHANNEL_WEIGHTS: weight of {name} ({value!r}) is not a number") from None
        if not 0.0 <= weight <= 10.0:
            raise StartupError(f"MEMHUB_CHANNEL_WEIGHTS: weight of {name} is {weight}; use 0 to 10")
        weights[name] = weight
    return tuple(weights.items())


def default_policy_dir() -> Path:
    """The policies/ folder shipped beside the hub package."""
    return Path(__file__).resolve().parent.parent / "policies"


@dataclass(frozen=True)
class PolicyConfig:
    dir: Path = field(default_factory=default_policy_dir)
    """Folder with schema.cedarschema and the *.cedar policies (MEMHUB_POLICY_DIR)."""

    files: tuple[str, ...] | None = None
    """Policy files to load, relative to dir (MEMHUB_POLICY_FILES, comma-separated); None: every *.cedar directly in dir."""

    poll_interval_s: float = 2.0
    """How often the files are checked for changes (a change is loaded without restart)."""


@dataclass(frozen=True)
class CallLimit:
    """How much of one replica a caller (an agent, or a group's members together) may use."""

    concurrent: int = 0
    """Calls in progress at once (0: no cap); further calls wait in line (LimitsConfig.queue)."""

    rate: float = 0.0
    """Calls per second, sustained (0: no rate limit)."""

    burst: int = 0
    """Calls allowed at once above the rate (the token bucket's size; 0 means twice the rate, at least 1)."""

    @property
    def bucket(self) -> int:
        """The token bucket's size: ``burst``, or twice the rate."""
        return self.burst or max(1, int(2 * self.rate))


@dataclass(frozen=True)
class LimitsConfig:
    """What one agent may take from a replica, so that it cannot hurt the others (issue 10).

    Every limit is per hub process: with N replicas behind a balancer an agent gets up to N times as
    much. Calls over a rate limit, or that found the line full or waited too long for a slot, are
    refused with RESOURCE_EXHAUSTED and a `retry-after` trailing metadata entry (seconds); refusals
    are audited in aggregate (action "limit") and counted for AdminService.GetLimits.
    """

    agent: CallLimit = CallLimit(concurrent=4, rate=100.0)
    """Every agent's own limit (MEMHUB_AGENT_MAX_CONCURRENT, MEMHUB_AGENT_RATE, MEMHUB_AGENT_BURST; bursts of twice
    the rate unless set). Four calls at a time, the rest waiting in line; while other agents are active the fair
    share (below) holds it lower, so a flood leaves another agent's p50 under 2x on a 2-core replica
    (bench/attack_search_flood.py); 100 calls/s is far above what an LLM agent needs."""

    agents: tuple[tuple[str, CallLimit], ...] = ()
    """Overrides for named agents (MEMHUB_AGENT_LIMITS="indexer-bot=16/500/1000,..."; CONCURRENT/RATE[/BURST],
    0 for no limit)."""

    groups: tuple[tuple[str, CallLimit], ...] = ()
    """Limits shared by all members of a group, on top of each agent's own (MEMHUB_GROUP_LIMITS, same form)."""

    queue: int = 64
    """Calls of one agent (or group) that may wait for a slot; more are refused at once (MEMHUB_LIMIT_QUEUE)."""

    queue_timeout_s: float = 10.0
    """Longest a call waits for a slot before it is refused (MEMHUB_LIMIT_QUEUE_TIMEOUT_S)."""

    streams_per_agent: int = 4
    """Open streaming calls (server reflection) per agent; more are refused at once (MEMHUB_STREAMS_PER_AGENT).
    Streams do not take the agent's call slots."""

    public_streams_per_source: int = 16
    """Open unauthenticated streams (health Watch) per client address (MEMHUB_PUBLIC_STREAMS_PER_SOURCE)."""

    stream_idle_timeout_s: float = 60.0
    """A stream whose client sends nothing for this long is closed with DEADLINE_EXCEEDED
    (MEMHUB_STREAM_IDLE_TIMEOUT_S)."""

    fair_share_slots: int = 0
    """While several agents are active, each may have at most this many divided by their number of calls in progress
    (at least 1, at most its own limit); 0 means the CPUs the hub may use (MEMHUB_FAIR_SHARE_SLOTS; memhub/api/fair_share.py).
    A lone agent keeps its whole limit."""

    fair_share_window_s: float = 10.0
    """An agent counts as active this long after its last call ended (MEMHUB_FAIR_SHARE_WINDOW_S)."""

    max_concurrent_calls: int = 4096
    """Calls the whole process holds open at once, the last guard of its memory (gRPC's maximum_concurrent_rpcs;
    MEMHUB_MAX_CONCURRENT_CALLS). Per-agent limits bind long before this."""

    namespaces_per_agent: int = 1000
    """Namespaces one agent may create (MEMHUB_NAMESPACES_PER_AGENT, 0: no quota). Namespaces cost every
    reader nothing now (searches decide on policy prefixes), but each is a row and an index filter entry."""

    namespace_max_memories: int = 1_000_000
    """Stored (not forgotten) memories per namespace (MEMHUB_NAMESPACE_MAX_MEMORIES, 0: no quota)."""

    namespace_max_bytes: int = 1 << 30
    """Content bytes (UTF-8) of the stored memories per namespace (MEMHUB_NAMESPACE_MAX_BYTES, 0: no quota)."""

    def limit_for(self, agent_id: str) -> CallLimit:
        return dict(self.agents).get(agent_id, self.agent)


@dataclass(frozen=True)
class AuditConfig:
    retention_days: float | None = 90.0
    """Audit entries older than this are deleted (MEMHUB_AUDIT_RETENTION_DAYS; 0 keeps them forever)."""


@dataclass(frozen=True)
class HubConfig:
    store: StoreConfig = field(default_factory=StoreConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    indexer: IndexerConfig = field(default_factory=IndexerConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    rerank: RerankConfig = field(default_factory=RerankConfig)
    embedding: EmbeddingConfig = field(default_factory=EmbeddingConfig)
    auth: AuthConfig = field(default_factory=AuthConfig)
    """Token verification. With no key configured, the hub uses (and on first start creates) data_dir/jwt-secret."""
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    audit: AuditConfig = field(default_factory=AuditConfig)
    limits: LimitsConfig = field(default_factory=LimitsConfig)
    screening: ScreeningConfig = field(default_factory=ScreeningConfig)
    """Flagging of instruction-like content and the namespaces where flagged writes are quarantined."""
    near_dup: NearDupConfig = field(default_factory=NearDupConfig)
    """Folding near-duplicate writes into the memory they repeat (MEMHUB_NEAR_DUP, MEMHUB_NEAR_DUP_COSINE)."""
    gate: GateConfig = field(default_factory=GateConfig)
    """The write filter and secret handling (MEMHUB_WRITE_FILTER, MEMHUB_SECRETS; memhub/curation/write_gate.py)."""
    extraction: ExtractionConfig = field(default_factory=ExtractionConfig)
    """The optional LLM fact extractor of the write gate (MEMHUB_EXTRACTOR; memhub/curation/fact_extraction.py)."""
    priors: PriorWeights = field(default_factory=PriorWeights)
    """Importance, recency, use and type in the ranking (MEMHUB_PRIORS, MEMHUB_RECENCY_HALF_LIFE; memhub/core/priors.py)."""
    archive: ArchiveConfig = field(default_factory=lambda: ArchiveConfig.from_env({}))
    """Rules that move old, never-recalled memories out of the index (MEMHUB_ARCHIVE_RULES, memhub/curation/archive.py)."""
    consolidation: ConsolidationConfig = field(default_factory=ConsolidationConfig)
    """The summariser and the consolidation schedule (memhub/curation/consolidation_config.py)."""
    retrieval_log: RetrievalLogConfig = field(default_factory=RetrievalLogConfig)
    """What is logged of every search (query hash by default), for how long, and the queue's bound."""
    change_feed: ChangeFeedConfig = field(default_factory=ChangeFeedConfig)
    """Retention, keepalive and the bounds of SubscribeChanges streams (MEMHUB_CHANGE_FEED_*, memhub/feed/config.py)."""
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    """The Prometheus endpoint (MEMHUB_METRICS_PORT, off by default) and its samples of the stores (memhub/metrics/)."""
    session_state: SessionStateConfig = field(default_factory=SessionStateConfig)
    """The shared session state's TTLs, limits and pruning (MEMHUB_SESSION*, memhub/session_state/config.py)."""

    @staticmethod
    def from_env(env: Mapping[str, str] | None = None) -> HubConfig:
        """Build from MEMHUB_* variables; a malformed value raises StartupError naming the variable."""
        env = os.environ if env is None else env
        store = StoreConfig(
            data_dir=Path(env["MEMHUB_DATA_DIR"]).expanduser() if env.get("MEMHUB_DATA_DIR") else default_data_dir(),
            database_url=env.get("MEMHUB_DATABASE_URL") or None,
            milvus_uri=env.get("MEMHUB_MILVUS_URI") or None,
            milvus_collection=env.get("MEMHUB_MILVUS_COLLECTION", "memhub_memories"),
            lite_approximate_rows=env_int(env, "MEMHUB_LITE_APPROXIMATE_ROWS", 0, 0, 10**9) or None,
        )
        max_message = env_int(env, "MEMHUB_MAX_MESSAGE_BYTES", ServerConfig.max_message_bytes, 64 * 1024, 64 * 2**20)
        server = ServerConfig(
            host=env.get("MEMHUB_HOST", "127.0.0.1"),
            port=env_int(env, "MEMHUB_PORT", 50051, 0, 65535),
            max_message_bytes=max_message,
            max_response_bytes=env_int(
                env, "MEMHUB_MAX_RESPONSE_BYTES", min(ServerConfig.max_response_bytes, max_message), 64 * 1024, max_message
            ),
        )
        indexer = IndexerConfig(
            enabled=env.get("MEMHUB_INDEXER", "1") not in ("0", "false", "no"),
            keyword_context_before=env_int(env, "MEMHUB_KEYWORD_CONTEXT_BEFORE", 2, 0, 5),
            keyword_context_after=env_int(env, "MEMHUB_KEYWORD_CONTEXT_AFTER", 2, 0, 5),
        )
        embedding = EmbeddingConfig(
            provider=env.get("MEMHUB_EMBEDDING_PROVIDER", "local"),
            base_url=env.get("MEMHUB_EMBEDDING_BASE_URL") or None,
            model=env.get("MEMHUB_EMBEDDING_MODEL") or None,
            dimension=env_int(env, "MEMHUB_EMBEDDING_DIMENSION", 384, 1, 65536),
            quantize=env.get("MEMHUB_EMBEDDING_QUANTIZE", "dynamic"),
        )
        try:
            embedding.validate()
        except ValueError as exc:
            raise StartupError(f"embedding configuration: {exc}") from None
        auth = AuthConfig.from_env(env, store.data_dir)
        files = env.get("MEMHUB_POLICY_FILES")
        policy = PolicyConfig(
            dir=Path(env["MEMHUB_POLICY_DIR"]).expanduser() if env.get("MEMHUB_POLICY_DIR") else default_policy_dir(),
            files=tuple(f.strip() for f in files.split(",") if f.strip()) if files else None,
        )
        retention = env_int(env, "MEMHUB_AUDIT_RETENTION_DAYS", 90, 0, 36_500)
        search = SearchConfig(
            neighbour_smoothing=env_float(env, "MEMHUB_NEIGHBOUR_SMOOTHING", 0.1, 0.0, 1.0),
            channel_weights=_weights(env),
            expansion=env.get("MEMHUB_EXPANSION", "0") in ("1", "true", "yes"),
        )
        rerank = RerankConfig(
            mode=env.get("MEMHUB_RERANK", "local"),
            depth=env_int(env, "MEMHUB_RERANK_DEPTH", 30, 1, 300),
            url=env.get("MEMHUB_RERANK_URL") or None,
            api=env.get("MEMHUB_RERANK_API", "tei"),
            model=env.get("MEMHUB_RERANK_MODEL", ""),
        )
        try:
            rerank.validate()
        except ValueError as exc:
            raise StartupError(f"rerank configuration: {exc}") from None
        return HubConfig(
            store=store,
            server=server,
            indexer=indexer,
            search=search,
            rerank=rerank,
            embedding=embedding,
            auth=auth,
            policy=policy,
            audit=AuditConfig(retention_days=retention or None),
            limits=_limits(env),
            screening=_screening(env),
            near_dup=NearDupConfig.from_env(env),
            gate=GateConfig.from_env(env),
            extraction=ExtractionConfig.from_env(env),
            priors=PriorWeights.from_env(env),
            archive=ArchiveConfig.from_env(env),
            consolidation=ConsolidationConfig.from_env(env),
            retrieval_log=RetrievalLogConfig.from_env(env),
            change_feed=ChangeFeedConfig.from_env(env),
            metrics=MetricsConfig.from_env(env),
            session_state=SessionStateConfig.from_env(env),
        )


def _screening(env: Mapping[str, str]) -> ScreeningConfig:
    roots = []
    for part in filter(None, (p.strip() for p in env.get("MEMHUB_QUARANTINE_NAMESPACES", "").split(","))):
        try:
            roots.append(validate_namespace(part, "namespace"))
        except InvalidArgument as exc:
            raise StartupError(f"MEMHUB_QUARANTINE_NAMESPACES: {part!r} is not a namespace ({exc})") from None
    return ScreeningConfig(quarantine_namespaces=tuple(roots))


def _call_limit(text: str, what: str) -> CallLimit:
    parts = text.split("/")
    try:
        if not 2 <= len(parts) <= 3:
            raise ValueError
        concurrent, rate = int(parts[0]), float(parts[1])
        burst = int(parts[2]) if len(parts) == 3 else 0
    except ValueError:
        raise StartupError(f"{what}: {text!r} is not CONCURRENT/RATE[/BURST], e.g. 8/50 or 8/50/100") from None
    if not (0 <= concurrent <= 10_000 and 0 <= rate <= 1e6 and 0 <= burst <= 10**7):  # also refuses NaN
        raise StartupError(f"{what}: {text!r} is out of range (0 to 10000 / 0 to 1000000 / 0 to 10000000)")
    return CallLimit(concurrent, rate, burst)


def _named_limits(env: Mapping[str, str], name: str) -> tuple[tuple[str, CallLimit], ...]:
    out = []
    for part in filter(None, (p.strip() for p in env.get(name, "").split(","))):
        who, sep, spec = part.partition("=")
        if not sep or not who.strip():
            raise StartupError(f"{name}: {part!r} is not NAME=CONCURRENT/RATE[/BURST]")
        out.append((who.strip(), _call_limit(spec.strip(), f"{name} ({who.strip()})")))
    return tuple(out)


def _limits(env: Mapping[str, str]) -> LimitsConfig:
    d = LimitsConfig()
    agent = CallLimit(
        concurrent=env_int(env, "MEMHUB_AGENT_MAX_CONCURRENT", d.agent.concurrent, 0, 10_000),
        rate=env_float(env, "MEMHUB_AGENT_RATE", d.agent.rate, 0.0, 1e6),
        burst=env_int(env, "MEMHUB_AGENT_BURST", d.agent.burst, 0, 10**7),
    )
    return LimitsConfig(
        agent=agent,
        agents=_named_limits(env, "MEMHUB_AGENT_LIMITS"),
        groups=_named_limits(env, "MEMHUB_GROUP_LIMITS"),
        queue=env_int(env, "MEMHUB_LIMIT_QUEUE", d.queue, 0, 100_000),
        queue_timeout_s=env_float(env, "MEMHUB_LIMIT_QUEUE_TIMEOUT_S", d.queue_timeout_s, 0.0, 3600.0),
        streams_per_agent=env_int(env, "MEMHUB_STREAMS_PER_AGENT", d.streams_per_agent, 0, 10_000),
        public_streams_per_source=env_int(env, "MEMHUB_PUBLIC_STREAMS_PER_SOURCE", d.public_streams_per_source, 0, 10_000),
        stream_idle_timeout_s=env_float(env, "MEMHUB_STREAM_IDLE_TIMEOUT_S", d.stream_idle_timeout_s, 0.0, 86_400.0),
        fair_share_slots=env_int(env, "MEMHUB_FAIR_SHARE_SLOTS", d.fair_share_slots, 0, 100_000),
        fair_share_window_s=env_float(env, "MEMHUB_FAIR_SHARE_WINDOW_S", d.fair_share_window_s, 0.0, 3600.0),
        max_concurrent_calls=env_int(env, "MEMHUB_MAX_CONCURRENT_CALLS", d.max_concurrent_calls, 16, 1_000_000),
        namespaces_per_agent=env_int(env, "MEMHUB_NAMESPACES_PER_AGENT", d.namespaces_per_agent, 0, 10**9),
        namespace_max_memories=env_int(env, "MEMHUB_NAMESPACE_MAX_MEMORIES", d.namespace_max_memories, 0, 10**12),
        namespace_max_bytes=env_int(env, "MEMHUB_NAMESPACE_MAX_BYTES", d.namespace_max_bytes, 0, 10**15),
    )
