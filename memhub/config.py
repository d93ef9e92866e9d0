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

from memhub.auth.config import AuthConfig
from memhub.core.namespaces import validate_namespace
from memhub.core.screening import ScreeningConfig
from memhub.curation.archive import ArchiveConfig
from memhub.curation.consolidation_config import ConsolidationConfig
from memhub.curation.fact_extraction import ExtractionConfig
from memhub.curation.near_dup import NearDupConfig
from memhub.curation.write_gate import GateConfig
from memhub.data_dir import default_data_dir
from memhub.data_dir_lock import LITE_FILE_NAME
from memhub.embedding import EmbeddingConfig
from memhub.env_settings import env_flag, env_float, env_int
from memhub.errors import InvalidArgument, StartupError
from memhub.feed.config import ChangeFeedConfig
from memhub.index_config import IndexConfig
from memhub.limits_config import CallLimit, LimitsConfig, limits_from_env
from memhub.metrics.config import MetricsConfig
from memhub.rerank.config import RerankConfig
from memhub.retrieval_log.config import RetrievalLogConfig
from memhub.search.priors import PriorWeights
from memhub.session_state.config import SessionStateConfig

__all__ = [
    "CHANNEL_WEIGHT_NAMES",
    "AuditConfig",
    "CallLimit",
    "HubConfig",
    "IndexConfig",
    "IndexerConfig",
    "LimitsConfig",
    "PolicyConfig",
    "SearchConfig",
    "ServerConfig",
    "StoreConfig",
    "default_policy_dir",
]


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

    milvus_lite_file: Path | None = None
    """The Milvus Lite data file a `memhub index-server` at ``milvus_uri`` serves, on this machine
    (MEMHUB_MILVUS_LITE_FILE): the hub reads it back to see that Lite kept what it acknowledged (a full disk), as
    it does with the embedded engine's. `memhub serve --processes` sets it for its hub processes."""

    def resolved_milvus_uri(self) -> str:
        # Not "milvus.db": that name is the directory the old Milvus Lite 3.x made.
        return self.milvus_uri or str(self.data_dir / LITE_FILE_NAME)


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

    search_slots: int = 0
    """Searches (SearchMemories, AssembleContext) run at once; later ones wait their turn in arrival order
    (MEMHUB_SEARCH_SLOTS, 0 to 1000; 0: two per CPU the hub may use, at least 4). Fewer at once finish as many a
    second with a shorter tail under the GIL (memhub/api/search_slots.py)."""

    max_response_bytes: int = 4 * 1024 * 1024
    """List pages and search results are cut to stay under this (MEMHUB_MAX_RESPONSE_BYTES, at most
    max_message_bytes): 4 MiB is gRPC clients' default receive limit, so every client can read every reply."""

    processes: int = 1
    """Hub processes `memhub serve` runs on this port and these stores (MEMHUB_PROCESSES, 1 to 64): one process
    runs its Python a thread at a time, so more than one is how a hub uses more than one core
    (memhub/cli/serve_group.py)."""

    group_member: int = 0
    """This process's number among the hub processes of `memhub serve --processes N` (1 to N; 0: not one of them).
    Set only by that command, never from the environment: a member listens with SO_REUSEPORT (a hub sharing its
    port by accident would split clients between two data directories) and keeps a recall journal of its own."""

    @property
    def share_port(self) -> bool:
        return self.group_member > 0


@dataclass(frozen=True)
class IndexerConfig:
    enabled: bool = True
    """Run the outbox indexer in this process (MEMHUB_INDEXER=0 to leave it to other replicas)."""

    batch_size: int = 256
    """Outbox rows claimed per batch (one bulk embedding, one Milvus upsert, one commit); memories are
    locked only after their embedding, so a large batch does not hold up forgets."""

    workers: int = 2
    """Batches in flight at once (MEMHUB_INDEXER_WORKERS, 1 to 8): with two, the next batch is embedded while one
    is written to Milvus and committed, so indexing runs at the embedder's speed (memhub/core/indexer.py)."""

    poll_interval_s: float = 1.0
    """Fallback polling when no NOTIFY arrives."""

    wait_indexed_timeout_s: float = 10.0
    """Longest a write with wait_indexed waits before answering indexed=false."""

    keyword_context_before: int = 2
    """Earlier turns of the same session (same namespace) indexed for keywords with an episodic memory
    (MEMHUB_KEYWORD_CONTEXT_BEFORE, 0 to 5; 0 with no turns after turns it off). A change applies
    to memories indexed afterwards; ``memhub reindex`` applies it to all."""

    keyword_context_max_chars: int = 0
    """Only turns of at most this many characters get a keyword context (MEMHUB_KEYWORD_CONTEXT_MAX_CHARS, 0 to
    100000; 0: every turn): long turns carry their own words (memhub/db/context.py)."""

    keyword_context_after: int = 2
    """Later turns likewise (MEMHUB_KEYWORD_CONTEXT_AFTER, 0 to 5); each write then re-indexes the turn
    before it for keywords (its vector is reused, not embedded again)."""


CHANNEL_WEIGHT_NAMES = ("dense", "keyword", "entity", "time", "expansion", "graph", "preference")


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
        ("graph", 0.0),
        ("preference", 1.0),
    )
    """Weight of each channel in the fusion (MEMHUB_CHANNEL_WEIGHTS, e.g. "entity=0.3,time=1";
    names not given keep these defaults; a channel weighted 0 does not run). Chosen on LoCoMo
    conversations 1-5 (docs/benchmarks.md): the entity channel cost recall there at 0.5 and 0.15. The graph channel
    (issue 25) is off: at 0.5 it moved LoCoMo by under 0.5 points either way and cost LongMemEval 7.5 @5 and
    1.8 @10 (its entities, mostly "user"-less names and products of long assistant answers, pull in turns of
    the wrong sessions); a request may name it, or MEMHUB_CHANNEL_WEIGHTS give it a weight."""

    expansion: bool = False
    """Run the second, expanded retrieval round by default (MEMHUB_EXPANSION=1). A request may turn it on or off."""

    session_spread: float = 0.0
    """For questions that need every relevant memory ("how many..."): places a hit loses per better hit of its own
    session (MEMHUB_SESSION_SPREAD, 0 to 100; 0 is off; memhub/search/diversity.py)."""

    aggregation_depth: int = 2
    """How many times deeper the channel lists of such questions go (MEMHUB_AGGREGATION_DEPTH, 1 to 4)."""

    speaker_places: int = 10
    """Places a candidate turn spoken by someone other than the question's subject moves down after the rerank
    (MEMHUB_SPEAKER_PLACES, 0 to 100; 0 is off; memhub/search/speakers.py). For an aggregation question they go
    behind every turn that stays."""

    multilingual_weight: float = 1.0
    """Weight of the multilingual model's order over the head when the question or a quarter of the head is in a
    script other than Latin (MEMHUB_MULTILINGUAL_WEIGHT, 0 to 10; 0 is off; memhub/search/multilingual.py). Only
    with the local embedding provider, whose model reads English: the others' models read more."""

    channel_depth: int = 30
    """How many hits each channel returns at least (three times top_k when that is more; MEMHUB_CHANNEL_DEPTH, 10 to
    300): fusion ranks what the channels agree on, so deeper lists give the rerank better candidates."""

    rerank_max_query_terms: int = 0
    """The model-free reranker skips queries with more content terms than this (MEMHUB_RERANK_MAX_QUERY_TERMS, 0 to
    100; 0: never skips)."""

    rrf_k: int = 60
    """The reciprocal rank fusion constant (MEMHUB_RRF_K, 1 to 1000; memhub/search/fusion.py)."""

    graph_max_degree: int = 100
    """The graph channel does not follow entities carried by more memories than this (MEMHUB_GRAPH_MAX_DEGREE, 1 to
    1000; memhub/search/graph.py)."""


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
    """The shipped policies: the repository's policies/ in a checkout, their copy inside an installed wheel.

    memhub/shipped_policies is a link to ../policies, so the wheel carries them as package data and a hub
    installed with pip starts on them too (it once looked for site-packages/policies and refused to start).
    Resolved, so messages name the folder to edit.
    """
    return (Path(__file__).parent / "shipped_policies").resolve()


@dataclass(frozen=True)
class PolicyConfig:
    dir: Path = field(default_factory=default_policy_dir)
    """Folder with schema.cedarschema and the *.cedar policies (MEMHUB_POLICY_DIR)."""

    files: tuple[str, ...] | None = None
    """Policy files to load, relative to dir (MEMHUB_POLICY_FILES, comma-separated); None: every *.cedar directly in dir."""

    poll_interval_s: float = 2.0
    """How often the files are checked for changes (a change is loaded without restart)."""


@dataclass(frozen=True)
class AuditConfig:
    retention_days: float | None = 90.0
    """Audit entries older than this are deleted (MEMHUB_AUDIT_RETENTION_DAYS; 0 keeps them forever)."""


@dataclass(frozen=True)
class HubConfig:
    store: StoreConfig = field(default_factory=StoreConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    indexer: IndexerConfig = field(default_factory=IndexerConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    """How the retrieval index searches (memhub/index_config.py)."""
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
    """Importance, recency, use and type in the ranking (MEMHUB_PRIORS, MEMHUB_RECENCY_HALF_LIFE; memhub/search/priors.py)."""
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
            milvus_lite_file=Path(env["MEMHUB_MILVUS_LITE_FILE"]).expanduser() if env.get("MEMHUB_MILVUS_LITE_FILE") else None,
        )
        max_message = env_int(env, "MEMHUB_MAX_MESSAGE_BYTES", ServerConfig.max_message_bytes, 64 * 1024, 64 * 2**20)
        server = ServerConfig(
            host=env.get("MEMHUB_HOST", "127.0.0.1"),
            port=env_int(env, "MEMHUB_PORT", 50051, 0, 65535),
            max_message_bytes=max_message,
            search_slots=env_int(env, "MEMHUB_SEARCH_SLOTS", ServerConfig.search_slots, 0, 1000),
            processes=env_int(env, "MEMHUB_PROCESSES", ServerConfig.processes, 1, 64),
            max_response_bytes=env_int(
                env, "MEMHUB_MAX_RESPONSE_BYTES", min(ServerConfig.max_response_bytes, max_message), 64 * 1024, max_message
            ),
        )
        indexer = IndexerConfig(
            enabled=env.get("MEMHUB_INDEXER", "1") not in ("0", "false", "no"),
            workers=env_int(env, "MEMHUB_INDEXER_WORKERS", 2, 1, 8),
            keyword_context_before=env_int(env, "MEMHUB_KEYWORD_CONTEXT_BEFORE", 2, 0, 5),
            keyword_context_after=env_int(env, "MEMHUB_KEYWORD_CONTEXT_AFTER", 2, 0, 5),
            keyword_context_max_chars=env_int(env, "MEMHUB_KEYWORD_CONTEXT_MAX_CHARS", 0, 0, 100_000),
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
            session_spread=env_float(env, "MEMHUB_SESSION_SPREAD", SearchConfig.session_spread, 0.0, 100.0),
            aggregation_depth=env_int(env, "MEMHUB_AGGREGATION_DEPTH", SearchConfig.aggregation_depth, 1, 4),
            speaker_places=env_int(env, "MEMHUB_SPEAKER_PLACES", SearchConfig.speaker_places, 0, 100),
            multilingual_weight=env_float(env, "MEMHUB_MULTILINGUAL_WEIGHT", SearchConfig.multilingual_weight, 0.0, 10.0),
            channel_depth=env_int(env, "MEMHUB_CHANNEL_DEPTH", SearchConfig.channel_depth, 10, 300),
            graph_max_degree=env_int(env, "MEMHUB_GRAPH_MAX_DEGREE", SearchConfig.graph_max_degree, 1, 1000),
            rrf_k=env_int(env, "MEMHUB_RRF_K", SearchConfig.rrf_k, 1, 1000),
            rerank_max_query_terms=env_int(env, "MEMHUB_RERANK_MAX_QUERY_TERMS", SearchConfig.rerank_max_query_terms, 0, 100),
        )
        rerank = RerankConfig(
            mode=env.get("MEMHUB_RERANK", "local"),
            depth=env_int(env, "MEMHUB_RERANK_DEPTH", 30, 1, 300),
            url=env.get("MEMHUB_RERANK_URL") or None,
            api=env.get("MEMHUB_RERANK_API", "tei"),
            model=env.get("MEMHUB_RERANK_MODEL", ""),
            term_weight=env_float(env, "MEMHUB_RERANK_TERM_WEIGHT", RerankConfig.term_weight, 0.0, 10.0),
            entity_weight=env_float(env, "MEMHUB_RERANK_ENTITY_WEIGHT", RerankConfig.entity_weight, 0.0, 10.0),
            best_channel_weight=env_float(env, "MEMHUB_RERANK_BEST_CHANNEL_WEIGHT", RerankConfig.best_channel_weight, 0.0, 10.0),
            rare_terms=env_flag(env, "MEMHUB_RERANK_RARE_TERMS", RerankConfig.rare_terms),
            length_free=env_int(env, "MEMHUB_RERANK_LENGTH_FREE", RerankConfig.length_free, 0, 10_000),
        )
        try:
            rerank.validate()
        except ValueError as exc:
            raise StartupError(f"rerank configuration: {exc}") from None
        return HubConfig(
            store=store,
            server=server,
            indexer=indexer,
            index=IndexConfig.from_env(env),
            search=search,
            rerank=rerank,
            embedding=embedding,
            auth=auth,
            policy=policy,
            audit=AuditConfig(retention_days=retention or None),
            limits=limits_from_env(env),
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
