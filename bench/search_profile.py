"""Where a search's Python time goes: whole searches under cProfile, in-process, on a benchmark's data directory.

Issue 27 asks where the hub's CPU per search goes. py-spy's ``--gil`` mode (the one that shows only the thread
holding the interpreter) failed on a running hub here (py-spy 0.4.3 and 0.3.14: "No such file or directory"), and
without it a sampled hub mixes waiting threads with working ones. This opens the stores of a data directory that
``bench_throughput.py --data-dir`` (or ``bench_scale.py``) wrote, as anatomy.py does, runs searches one at a time on
this thread under cProfile, and prints:

- each pipeline stage's share of the profiled time (cumulative time of the stage's function in memhub/search/),
- the functions with the most time of their own.

Only the searching thread is profiled: the query's embedding runs on the embedder's thread and the dense and
keyword channels on the search pool's, so their native work shows here as waits (``Future.result``, ``wait``),
which is their wall-clock cost to this search, not their CPU; ``--cpu`` times this thread's CPU instead, so the
waits drop out and what is left is what the searching thread spends. Run it after the benchmark's hub has stopped:

    .venv/bin/python bench/search_profile.py DIR [--root bench] [--queries 300] [--top 30] [--cpu]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

from memhub.app import Hub
from memhub.config import HubConfig
from memhub.core.model import Caller, Channel, MemoryFilter, SearchQuery

#: The pipeline's stages, as memhub/search/pipeline.py calls them (module, function).
STAGES = (
    ("pipeline.py", "search"),
    ("channels.py", "gather"),
    ("fusion.py", "fuse"),
    ("time_channel.py", "boost"),
    ("graph.py", "add_channel"),
    ("preference.py", "add_channel"),
    ("expansion.py", "expand"),
    ("smoothing.py", "smooth_neighbours"),
    ("hydration.py", "hydrate"),
    ("multilingual.py", "rescore"),
    ("derived.py", "leave_out_restatements"),
    ("priors.py", "for_query"),
    ("reranking.py", "rerank"),
    ("derived.py", "collapse"),
    ("diversity.py", "spread_sessions"),
    ("speakers.py", "demote_other_speakers"),
    ("judging.py", "judged_hits"),
    ("budget.py", "fit_tokens"),
    ("context_turns.py", "attach"),
    ("budget.py", "fit_response"),
    ("recording.py", "recalled"),
)


def profile(
    data_dir: Path, policy_dir: Path, questions: list[str], root: str, cpu: bool = False
) -> tuple[pstats.Stats, float, int]:
    """Profiled searches of ``questions`` over ``root``: the stats, the wall-clock seconds, the searches run.

    ``cpu``: time this thread's CPU (``time.thread_time``) instead of the wall clock, so waits count nothing."""
    config = HubConfig.from_env({"MEMHUB_DATA_DIR": str(data_dir), "MEMHUB_POLICY_DIR": str(policy_dir)})
    hub = Hub.open(config)
    try:
        caller = Caller("bench", groups=("bench",))
        flt = MemoryFilter((root,))
        asked = [SearchQuery(q, flt, 10, tuple(Channel), False, 0) for q in questions]
        for q in asked[:20]:  # warm: caches, prepared statements, the model
            hub.service.search(caller, q)
        profiler = cProfile.Profile(time.thread_time) if cpu else cProfile.Profile()
        started = time.perf_counter()
        profiler.enable()
        for q in asked:
            hub.service.search(caller, q)
        profiler.disable()
        return pstats.Stats(profiler), time.perf_counter() - started, len(asked)
    finally:
        hub.close()


def stage_rows(stats: pstats.Stats) -> list[tuple[str, float]]:
    """(stage, cumulative seconds) for each stage found in the profile."""
    cumulative: dict[tuple[str, str], float] = {}
    for (path, _line, name), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        if "memhub/search/" in path:
            cumulative[(Path(path).name, name)] = cumulative.get((Path(path).name, name), 0.0) + ct
    return [
        (f"{module[:-3]}.{function}", cumulative[(module, function)])
        for module, function in STAGES
        if (module, function) in cumulative
    ]


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from hubproc import bench_policy_dir
    from loadgen import load_average
    from synthetic import queries

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", type=Path, help="a hub data directory holding a benchmark corpus")
    parser.add_argument("--root", default="bench", help="the corpus's namespace root (bench_scale's: bench/scale)")
    parser.add_argument("--queries", type=int, default=300, help="LoCoMo questions searched under the profiler")
    parser.add_argument("--top", type=int, default=30, help="functions listed by their own time")
    parser.add_argument("--cpu", action="store_true", help="this thread's CPU time instead of the wall clock")
    args = parser.parse_args()
    if not (args.data_dir / "postgres").is_dir():
        parser.error(f"{args.data_dir} holds no hub data (no postgres/ in it)")
    if not 20 <= args.queries <= 1500 or not 1 <= args.top <= 200:
        parser.error("--queries takes 20-1500, --top 1-200")
    started = load_average()
    questions = queries()[: args.queries]
    stats, seconds, n = profile(args.data_dir, bench_policy_dir(args.data_dir), questions, args.root, args.cpu)
    total = stats.total_tt  # type: ignore[attr-defined]
    print(f"{n} searches one at a time, {1000 * seconds / n:.1f} ms each in wall-clock time under the profiler")
    if args.cpu:
        print("times below: this thread's CPU (waits for the embedder, the search pool and the stores count nothing)")
    print(f"\n{'stage (cumulative, this thread)':44s} {'ms a search':>12s} {'share':>7s}")
    for stage, cumulative in stage_rows(stats):
        print(f"{stage:44s} {1000 * cumulative / n:12.2f} {100 * cumulative / total:6.1f}%")
    print(f"\nfunctions with the most time of their own (ms a search; share of {1000 * total / n:.1f} ms profiled):")
    own = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[: args.top]  # type: ignore[attr-defined]
    for (path, line, name), (_cc, calls, tt, _ct, _callers) in own:
        where = f"{'/'.join(Path(path).parts[-2:])}:{line} {name}"
        print(f"  {1000 * tt / n:7.3f} {100 * tt / total:5.1f}%  {calls / n:7.1f} calls  {where[:100]}")
    print(f"\nat the start: {started}; at the end: {load_average()}")


if __name__ == "__main__":
    main()
