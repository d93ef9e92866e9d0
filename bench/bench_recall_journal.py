"""Cost of the recall journal on record() (the search path's part): 20 ids per call, with and without it."""

import tempfile
import time
import uuid
from pathlib import Path

from sqlalchemy import create_engine

from memhub.core.recall_stats import RecallRecorder

ids = [str(uuid.uuid4()) for _ in range(20)]
eng = create_engine("postgresql+psycopg://127.0.0.1:5432/postgres")  # never connected: no flush runs


def run(rec, n=20000):
    t = time.perf_counter()
    for _ in range(n):
        rec.record(ids)
    return (time.perf_counter() - t) / n * 1e6


with tempfile.TemporaryDirectory() as d:
    plain, journaled = RecallRecorder(eng), RecallRecorder(eng, journal=Path(d) / "recall-pending.log")
    for _ in range(3):
        a, b = run(plain), run(journaled)
        print(f"record(20 ids): without journal {a:.1f} us, with {b:.1f} us, ratio {b / a:.1f}x, added {b - a:.1f} us")
