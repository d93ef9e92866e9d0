"""Assembling one hub process: stores, embedder, index, indexer, service.

`Hub.open` does every start-up check before the server listens, so a
misconfigured hub fails at once with a message saying what to fix, instead
of failing its first requests.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from sqlalchemy import Engine

from hub.config import HubConfig
from hub.core.access import AllowAll, Authorizer
from hub.core.indexer import Indexer
from hub.core.recall_stats import RecallRecorder
from hub.core.service import MemoryService
from hub.db import engine as db_engine
from hub.db import migrate
from hub.embedding import Embedder, EmbeddingError, build_embedder
from hub.errors import StartupError
from hub.index.milvus_index import IndexModelMismatch, IndexUnavailable, MilvusIndex

log = logging.getLogger(__name__)


def open_database(config: HubConfig) -> tuple[Engine, str]:
    """Connect (starting the embedded server if no URL is set), migrate, and return (engine, url)."""
    url = config.store.database_url
    if url is None:
        url = db_engine.start_embedded(config.store.data_dir)
    engine = db_engine.connect(url, pool_size=max(8, config.server.max_workers // 2))
    migrate.upgrade(engine)
    return engine, url


def open_embedder(config: HubConfig) -> Embedder:
    try:
        return build_embedder(config.embedding)
    except EmbeddingError as exc:
        raise StartupError(f"cannot load the embedding model: {exc}") from None


def open_index(config: HubConfig, embedder: Embedder, *, check_model: bool = True) -> MilvusIndex:
    """Open the Milvus collection; with check_model, refuse one built with another embedding model."""
    uri = config.store.resolved_milvus_uri()
    if "://" not in uri:
        config.store.data_dir.mkdir(parents=True, exist_ok=True)
    try:
        index = MilvusIndex(
            uri,
            token=os.environ.get(config.store.milvus_token_env) or None,
            collection=config.store.milvus_collection,
            model_id=embedder.model_id,
            dimension=embedder.dimension,
        )
    except IndexUnavailable as exc:
        raise StartupError(str(exc)) from None
    if check_model:
        try:
            index.ensure_collection()
        except (IndexModelMismatch, IndexUnavailable) as exc:
            index.close()  # releases the Milvus Lite directory, so `memhub reindex` can open it
            raise StartupError(str(exc)) from None
    return index


@dataclass
class Hub:
    """The parts of a running hub, closed in reverse order by close()."""

    config: HubConfig
    engine: Engine
    database_url: str
    embedder: Embedder
    index: MilvusIndex
    indexer: Indexer
    recorder: RecallRecorder
    service: MemoryService

    @classmethod
    def open(cls, config: HubConfig, *, authorizer: Authorizer | None = None) -> Hub:
        engine, url = open_database(config)
        embedder = open_embedder(config)
        index = open_index(config, embedder)
        indexer = Indexer(
            engine,
            index,
            embedder,
            batch_size=config.indexer.batch_size,
            poll_interval_s=config.indexer.poll_interval_s,
            listen_url=_psycopg_url(url),
        )
        recorder = RecallRecorder(engine)
        service = MemoryService(
            engine,
            index,
            embedder,
            indexer,
            authorizer or AllowAll(),
            recorder,
            wait_indexed_timeout_s=config.indexer.wait_indexed_timeout_s,
        )
        return cls(config, engine, url, embedder, index, indexer, recorder, service)

    def start_background(self) -> None:
        if self.config.indexer.enabled:
            self.indexer.start()
        self.recorder.start()

    def close(self) -> None:
        self.indexer.stop()
        self.recorder.stop()
        self.service.close()
        self.index.close()
        self.embedder.close()
        self.engine.dispose()


def _psycopg_url(url: str) -> str:
    """psycopg.connect takes libpq URLs: drop SQLAlchemy's +driver suffix."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1).replace("postgres://", "postgresql://", 1)
