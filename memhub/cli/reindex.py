"""`memhub reindex`: rebuild the Milvus index from Postgres, beside the live one, and switch every hub to it.

Used after changing the embedding model (the hub refuses to start against an
index built with another model) or when the index is damaged. Running hubs
keep serving from the old collection while the new one fills, then follow
the switch (memhub/core/index_rebuild.py): searches never see a half-built
index. With an embedded Milvus Lite (one process per data file) stop the hub
first, or share the file through `memhub index-server`.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from memhub import logs
from memhub.cli.serve import claim_data_file, config_from_args


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("reindex", help="rebuild the retrieval index from Postgres (e.g. after changing the embedding model)")
    p.add_argument("--data-dir", type=Path, help="the hub's data directory (MEMHUB_DATA_DIR), for the embedded stores")
    p.add_argument("--database-url", help="external PostgreSQL URL (MEMHUB_DATABASE_URL)")
    p.add_argument("--milvus-uri", help="external Milvus URI (MEMHUB_MILVUS_URI)")
    p.add_argument(
        "--grace",
        type=float,
        default=15.0,
        help="seconds the old collection is kept after the switch, for every hub to follow (default 15; 0 to 3600)",
    )
    p.set_defaults(func=run, host=None, port=None, no_indexer=False, metrics_port=None, metrics_host=None)


def run(args: argparse.Namespace) -> int:
    from memhub.errors import StartupError

    if not 0 <= args.grace <= 3600:
        raise StartupError(f"--grace must be between 0 and 3600 seconds, got {args.grace:g}")
    logs.configure("warning")
    # It opens the Milvus Lite file itself, as a hub does: refused at once while a hub serves it (and a hub
    # started meanwhile is refused, naming this).
    claim_data_file(args, "memhub reindex")

    # Imported here: every memhub command builds this parser, and the stores cost seconds to import.
    from sqlalchemy import func, select
    from tqdm import tqdm

    from memhub.app import open_database, open_embedder, open_index, prepare_data_dirs
    from memhub.core.index_rebuild import rebuild
    from memhub.db.context import Window
    from memhub.db.memory_rows import servable_condition
    from memhub.db.schema import memories

    config = config_from_args(args)
    prepare_data_dirs(config)
    engine, _ = open_database(config)
    embedder = open_embedder(config)

    def index_named(name: str):  # noqa: ANN202 - a MilvusIndex
        return open_index(dataclasses.replace(config, store=dataclasses.replace(config.store, milvus_collection=name)), embedder)

    window = Window(
        config.indexer.keyword_context_before,
        config.indexer.keyword_context_after,
        config.indexer.keyword_context_max_chars,
    )
    with engine.connect() as conn:
        expected = conn.execute(select(func.count()).select_from(memories).where(servable_condition())).scalar_one()
    print(f"reindexing {expected} memories with {embedder.model_id}", file=sys.stderr)
    try:
        with tqdm(total=expected, unit="mem", file=sys.stderr) as bar:
            done = rebuild(
                engine,
                index_named,
                config.store.milvus_collection,
                embedder,
                window,
                grace_s=args.grace,
                progress=bar.update,
            )
    finally:
        embedder.close()
        engine.dispose()
    r = done.reconciled
    print(
        f"reindexed {done.filled} memories into {done.collection} (replacing {done.replaced}; {done.refreshed} changed "
        f"meanwhile were applied again; {r.missing + r.extra} left to the hubs' indexers)"
    )
    return 0
