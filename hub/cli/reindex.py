"""`memhub reindex`: rebuild the Milvus collection from Postgres.

Used after changing the embedding model (the hub refuses to start against an
index built with another model) or when the index is lost. It recreates the
collection, queues every active memory in the outbox and drains it here with
a progress bar. Stop the hub first when it uses an embedded Milvus Lite (one
process per data file); with a Milvus server or a shared `memhub
index-server`, running hubs keep serving meanwhile.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hub import logs
from hub.cli.serve import config_from_args


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reindex", help="rebuild the retrieval index from Postgres (e.g. after changing the embedding model)")
    p.add_argument("--data-dir", type=Path, help="the hub's data directory (MEMHUB_DATA_DIR), for the embedded stores")
    p.add_argument("--database-url", help="external PostgreSQL URL (MEMHUB_DATABASE_URL)")
    p.add_argument("--milvus-uri", help="external Milvus URI (MEMHUB_MILVUS_URI)")
    p.set_defaults(func=run, host=None, port=None, no_indexer=False, metrics_port=None, metrics_host=None)


def run(args: argparse.Namespace) -> int:
    # Imported here: every memhub command builds this parser, and the stores cost seconds to import.
    from tqdm import tqdm

    from hub.app import open_database, open_embedder, open_index, prepare_data_dirs
    from hub.core.indexer import Indexer
    from hub.db.context import Window

    logs.configure("warning")
    config = config_from_args(args)
    prepare_data_dirs(config)
    engine, _ = open_database(config)
    embedder = open_embedder(config)
    index = open_index(config, embedder)
    indexer = Indexer(
        engine, index, embedder, context=Window(config.indexer.keyword_context_before, config.indexer.keyword_context_after)
    )
    index.recreate(expected_rows=indexer.servable_count())
    queued = indexer.backfill()
    print(f"reindexing {queued} memories with {embedder.model_id} (dense index {index.dense_index_type})", file=sys.stderr)
    with tqdm(total=queued, unit="mem", file=sys.stderr) as bar:
        done = indexer.drain(timeout_s=24 * 3600, on_progress=bar.update)
    index.after_catch_up()
    index.close()
    engine.dispose()
    if not done:
        print("memhub reindex: the outbox did not drain; see the log", file=sys.stderr)
        return 1
    print(f"reindexed {queued} memories")
    return 0
