"""What the index reconciliation and the Lite durability check cost at 100k memories.

    .venv/bin/python bench/bench_index_reconcile.py [--rows 100000] [--admin-url postgresql://postgres@127.0.0.1:5432/postgres]

Builds a scratch database (the external Postgres) holding ``--rows`` active
memories and an embedded Milvus Lite collection holding the same ids (random
unit vectors: the check compares ids, never vectors), then times:
- ``reconcile`` when both agree (the scheduled pass, every 10 min by default);
- ``reconcile`` after 300 rows were deleted from the index behind the hub's back;
- ``MilvusIndex.unpersisted`` when the data file holds every row (the count
  path run after each flush) and when it does not (the id-diff path);
- a dense search before and during a reconciliation (it runs off the request
  path, but shares the engine).
Prints seconds per operation and the load average; the database is dropped.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import numpy as np
import psycopg
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memhub.core.index_reconcile import reconcile  # noqa: E402
from memhub.db import engine as db_engine  # noqa: E402
from memhub.db import migrate  # noqa: E402
from memhub.index import IndexedMemory, IndexFilter, MilvusIndex  # noqa: E402


def scratch_db(admin_url: str) -> str:
    name = f"memhub_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


def fill_postgres(url: str, ids: list[str]) -> None:
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        with cur.copy(
            "COPY memories (id, namespace, kind, type, content, content_hash, importance, confidence, occurred_at, "
            "source_agent, status, embedding_model) FROM STDIN"
        ) as copy:
            for i, mid in enumerate(ids):
                content = f"bench memory {i}"
                digest = hashlib.sha256(content.encode()).hexdigest()
                copy.write_row(
                    (mid, f"bench/ns{i % 17}", "semantic", "fact", content, digest, 3, 1.0, "2026-01-01", "bench", "active", "m")
                )
        conn.commit()


def timed(what: str, fn, repeat: int = 3) -> float:  # noqa: ANN001
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - started)
    best = min(runs)
    print(f"{what}: {statistics.median(runs):.3f} s median, {best:.3f} s best ({repeat} runs) -> {out}")
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--admin-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    args = ap.parse_args()
    url = scratch_db(args.admin_url)
    tmp = Path(tempfile.mkdtemp(prefix="memhub-bench-reconcile-"))
    try:
        engine = db_engine.connect(url, pool_size=4)
        migrate.upgrade(engine)
        ids = sorted(str(uuid.uuid4()) for _ in range(args.rows))
        started = time.perf_counter()
        fill_postgres(url, ids)
        print(f"Postgres: {args.rows} memories in {time.perf_counter() - started:.1f} s")
        index = MilvusIndex(str(tmp / "index.db"), collection="bench", model_id="m", dimension=384)
        index.ensure_collection()
        rng = np.random.default_rng(0)
        started = time.perf_counter()
        for lo in range(0, len(ids), 2000):
            vecs = rng.standard_normal((min(2000, len(ids) - lo), 384)).astype(np.float32)
            index.upsert(
                [
                    IndexedMemory(mid, f"bench/ns{(lo + j) % 17}", "semantic", "fact", "bench memory", (), 0, 0, 0, vecs[j])
                    for j, mid in enumerate(ids[lo : lo + 2000])
                ]
            )
        index.flush()
        print(f"Milvus Lite: {index.count()} rows in {time.perf_counter() - started:.1f} s")
        flt = IndexFilter(namespaces=tuple(f"bench/ns{i}" for i in range(3)))
        query = rng.standard_normal(384).astype(np.float32)

        def search_p50(n: int = 30) -> float:
            t = []
            for _ in range(n):
                s = time.perf_counter()
                index.search_dense(query, flt, 10)
                t.append(time.perf_counter() - s)
            return statistics.median(t)

        print(f"dense search p50, idle: {search_p50() * 1000:.1f} ms")
        timed("reconcile, index matches", lambda: reconcile(engine, index))
        timed("unpersisted, file holds every row (count path)", lambda: index.unpersisted())
        # The durability check's id-diff path: compare the live ids with what the file holds.
        from memhub.index import lite_durability

        timed(
            "lite_durability.missing_ids (id-diff path, all ids)",
            lambda: len(lite_durability.missing_ids(index._server.db_file, "bench", index.ids_in_range(None, None))),  # noqa: SLF001
        )
        index.delete(ids[::333][:300])
        with engine.begin() as conn:
            conn.exec_driver_sql("DELETE FROM outbox")
        timed("reconcile, 300 rows missing from the index", lambda: reconcile(engine, index).missing, repeat=1)
        # A search while a reconciliation runs beside it.
        done = threading.Event()

        def loop() -> None:
            while not done.is_set():
                reconcile(engine, index)

        t = threading.Thread(target=loop, daemon=True)
        t.start()
        time.sleep(0.5)
        print(f"dense search p50, during back-to-back reconciliations: {search_p50() * 1000:.1f} ms")
        done.set()
        t.join(120)
        index.close()
        engine.dispose()
    finally:
        with psycopg.connect(args.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)')
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
