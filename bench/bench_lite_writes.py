"""What each kind of index write costs Milvus Lite as its collection grows: why the indexer inserts new rows.

    .venv/bin/python bench/bench_lite_writes.py [--rows 10000 --rows 100000] [--calls 20]

For each size, fills an embedded Lite collection with ``--rows`` generated rows
(random unit vectors, short texts), then times ``--calls`` calls of each write
the indexer can make for one memory: an upsert of a new id and of a held one,
an insert of a new id, a delete of a held id and of an absent one, a batch of
10 new ids, and replacements of 64 and 256 held rows in one call. It prints
the wall time and the CPU the Lite process used per call.

Milvus carries out an upsert as a delete and an insert. Lite's delete of a held
id scans the collection, and so does its upsert of any id, new or held; a
delete of an absent id does not. So ``MilvusIndex.upsert`` inserts the ids the
collection lacks when its caller holds the memories exclusively (the
indexer's row locks; ``exclusive``), after one query for the held ids.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np
import psutil
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from loadgen import load_average  # noqa: E402

from memhub.index import IndexedMemory, MilvusIndex  # noqa: E402

DIM = 384
REPLACED = 256
"""Held rows in the largest replacement timed (MilvusIndex's replacement calls carry up to this many)."""


class Rows:
    """Generated index rows: unit vectors, short texts, 17 namespaces."""

    def __init__(self, seed: int = 7) -> None:
        self._rng = np.random.default_rng(seed)
        self._n = 0

    def make(self, count: int) -> list[IndexedMemory]:
        vectors = self._rng.standard_normal((count, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        now = int(time.time() * 1000)
        out = []
        for v in vectors:
            self._n += 1
            ns = f"bench/ns{self._n % 17:02d}"
            out.append(IndexedMemory(str(uuid.uuid4()), ns, "semantic", "fact", f"generated row {self._n}", (), now, now, 0, v))
        return out


def lite_process() -> psutil.Process:
    """The Lite engine of the one index this process has open."""
    for child in psutil.Process().children(recursive=True):
        if "milvus" in child.name():
            return child
    raise SystemExit("no Milvus Lite process runs under this one; is milvus-lite installed (scripts/setup.sh)?")


def timed(lite: psutil.Process, calls: int, call: Callable[[int], object]) -> tuple[float, float, float]:
    """Median wall ms, mean wall ms and mean Lite CPU ms of ``calls`` calls of ``call(i)``."""
    walls = []
    cpu_before = sum(lite.cpu_times()[:2])
    for i in range(calls):
        started = time.perf_counter()
        call(i)
        walls.append(1000 * (time.perf_counter() - started))
    cpu = 1000 * (sum(lite.cpu_times()[:2]) - cpu_before) / calls
    return statistics.median(walls), statistics.fmean(walls), cpu


def measure(size: int, calls: int) -> list[tuple[str, tuple[float, float, float]]]:
    folder = Path(tempfile.mkdtemp(prefix="memhub-bench-lite-"))
    index = MilvusIndex(str(folder / "index.db"), collection="bench", model_id="bench", dimension=DIM)
    try:
        index.ensure_collection()
        rows = Rows()
        filled: list[IndexedMemory] = []  # the first rows, to replace
        with tqdm(total=size, desc=f"filling {size} rows", unit="row") as bar:
            for start in range(0, size, 2048):
                batch = rows.make(min(2048, size - start))
                bar.update(index.insert_new(batch))
                if len(filled) < REPLACED * calls:
                    filled += batch
        index.flush()
        lite = lite_process()
        one = [rows.make(1) for _ in range(calls)]
        ten = [rows.make(10) for _ in range(calls)]
        victims = rows.make(calls)
        index.insert_new(victims)
        print(f"timing writes at {index.count()} rows...", file=sys.stderr)
        timings = [
            ("upsert, 1 new id", timed(lite, calls, lambda i: index.upsert(one[i]))),
            ("upsert, 1 new id, exclusive", timed(lite, calls, lambda i: index.upsert(rows.make(1), exclusive=True))),
            ("upsert, 1 held id (a replacement)", timed(lite, calls, lambda i: index.upsert(one[i]))),
            ("insert, 1 new id", timed(lite, calls, lambda i: index.insert_new(rows.make(1)))),
            ("upsert, 10 new ids", timed(lite, calls, lambda i: index.upsert(ten[i]))),
            ("upsert, 10 new ids, exclusive", timed(lite, calls, lambda i: index.upsert(rows.make(10), exclusive=True))),
            ("delete, 1 held id", timed(lite, calls, lambda i: index.delete([victims[i].id]))),
            ("delete, 1 absent id", timed(lite, calls, lambda i: index.delete([str(uuid.uuid4())]))),
        ]
        for n in (64, REPLACED):  # one call each (MilvusIndex replaces up to 256 rows a call)
            held = [filled[i * n : (i + 1) * n] for i in range(calls)]
            timings.append((f"upsert, {n} held ids", timed(lite, calls, lambda i, h=held: index.upsert(h[i]))))
        return timings
    finally:
        index.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, action="append", help="collection size (repeatable; default 10000 and 100000)")
    parser.add_argument("--calls", type=int, default=20, help="calls timed per kind of write")
    args = parser.parse_args()
    sizes = args.rows or [10_000, 100_000]
    if not 1 <= args.calls <= 1000:
        parser.error("--calls takes 1-1000")
    least = REPLACED * args.calls  # the replacements take held rows of their own each call
    if not all(least <= n <= 2_000_000 for n in sizes):
        parser.error(f"--rows takes {least}-2000000 with --calls {args.calls}")
    started = load_average()
    results = [(size, measure(size, args.calls)) for size in sizes]
    print(f"\nMilvus Lite writes, one call at a time ({args.calls} calls each), 384-d rows")
    print(f"at the start: {started}; at the end: {load_average()}")
    for size, rows in results:
        print(f"\n{size} rows{'':24s} {'p50 ms':>8s} {'mean ms':>8s} {'Lite CPU ms':>12s}")
        for name, (p50, mean, cpu) in rows:
            print(f"{name:32s} {p50:8.1f} {mean:8.1f} {cpu:12.1f}")


if __name__ == "__main__":
    main()
