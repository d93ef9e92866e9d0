"""How fast `memhub reindex`'s fill writes a collection: rows/s into a scratch collection, both ways it runs.

    .venv/bin/python bench/bench_fill.py --data-dir DIR [--memories 30000] [--ways generated,reuse]

The first run on ``DIR`` loads ``--memories`` synthetic memories there (bench/bulk_load.py; kept for the next
runs). Each run then fills a new scratch collection beside the hub's one from Postgres with
memhub/core/index_rebuild.py's ``fill`` and drops it, timing:
- ``generated``: vectors handed in by an embedder (what bench_scale.py ``--generate-vectors`` does; an
  operator's reindex after a model change embeds here instead);
- ``reuse``: vectors read from the hub's collection (an operator's reindex after a layout change).
To compare versions, run it back to back with ``PYTHONPATH=<other checkout>`` (``fill``'s signature is stable).
"""

from __future__ import annotations

import argparse
import inspect
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bulk_load  # noqa: E402
import numpy as np  # noqa: E402
from loadgen import load_average  # noqa: E402
from locomo import DEFAULT_PATH  # noqa: E402
from sqlalchemy import func, select  # noqa: E402
from synthetic import bodies, spliced  # noqa: E402

from memhub.app import Hub  # noqa: E402
from memhub.core.index_rebuild import fill  # noqa: E402
from memhub.db.schema import memories  # noqa: E402

WAYS = ("generated", "reuse")
# A checkout from before the fill inserted into new collections (PYTHONPATH, for before/after figures) upserts.
NEW_COLLECTION = "new_collection" in inspect.signature(fill).parameters


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="the bench hub's data (loaded on the first run)")
    parser.add_argument("--memories", type=int, default=30_000)
    parser.add_argument("--ways", default=",".join(WAYS), help=f"comma-separated, of {', '.join(WAYS)}")
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH, help="LoCoMo json")
    args = parser.parse_args()
    ways = [w for w in args.ways.split(",") if w]
    if not ways or any(w not in WAYS for w in ways):
        parser.error(f"--ways takes a comma-separated list of {', '.join(WAYS)}")
    if args.memories < 1:
        parser.error("--memories must be positive")
    print(f"at the start: {load_average()}; fill inserting into new collections: {NEW_COLLECTION}")
    items = list(spliced(args.memories, args.data))
    data = args.data_dir
    if not (data / "milvus-index.db").exists():
        data.mkdir(mode=0o700, parents=True, exist_ok=True)
        took = bulk_load.load(data, items, bodies(args.data))
        print(f"loaded {len(items)} memories in {took:.0f} s (the fill of this checkout included)")
    opened = Hub.open(bulk_load.hub_config(data))
    try:
        with opened.engine.connect() as conn:
            rows = conn.execute(select(func.count()).select_from(memories)).scalar_one()
        cached = data / "bench-turn-vectors.npy"  # embedding the turns again takes a minute on a loaded machine
        if not cached.exists():
            np.save(cached, bulk_load.turn_embeddings(opened.embedder, bodies(args.data)))
        vectors = bulk_load.generated_vectors(items, np.load(cached))
        generated = bulk_load.GeneratedVectors(opened.embedder, vectors)
        base = opened.index.collection
        window = bulk_load.window_of(opened.config)
        for way in ways:
            scratch = f"{opened.index.base_name}_fillbench"
            target = bulk_load.open_collection(opened, scratch)
            try:
                opened.index.drop_collection(scratch)
                created = target.ensure_collection()
                started = time.perf_counter()
                filled = fill(
                    opened.engine,
                    target,
                    generated,  # type: ignore[arg-type]  # an Embedder
                    window,
                    lambda n: None,
                    reuse_from=base if way == "reuse" else None,
                    **({"new_collection": created} if NEW_COLLECTION else {}),
                )
                target.flush()
                took = time.perf_counter() - started
                held = target.count()
                opened.index.drop_collection(scratch)
            finally:
                target.close()
            print(
                f"fill, {way:9s}: {filled} rows in {took:.1f} s = {filled / took:,.0f} rows/s "
                f"(collection held {held}; {rows} memories in Postgres; {load_average()})",
                flush=True,
            )
    finally:
        opened.close()
    print(f"at the end: {load_average()}")


if __name__ == "__main__":
    main()
