"""LongMemEval_S dev split (170 questions): turn recall@5/@10 through the hub's gRPC API, per type, with an ablation.

    .venv/bin/python bench/bench_longmemeval.py [--modes a,b] [--env K=V] [--data-dir DIR] [--sessions]
                                                [--questions N] [--per-type N] [--details FILE]

Protocol (../shared/data/longmemeval_s_dev/README.md): one namespace per question, every haystack turn one
episodic memory ``"<role>: <content>"`` written in batches of 100 in session order, the question searched alone
in its namespace, top 10; gold = the turns marked has_answer. Dates and session ids are not given to the hub;
``--sessions`` gives them (each session written with its id, its turns dated with its date, the question asked
``as_of`` its date): a configuration to report apart.

``--data-dir`` keeps the hub's data (and which memory holds which turn) so a later run with other query modes or
``--env`` settings skips the ingest. The plain BM25 row (rank-bm25 over lowercase alphanumeric tokens, no hub) is
always printed for comparison. A derived memory (a preference drawn from a turn, derived_from it) counts for
nothing in the recall (only turns do); the table says how many of the top 10 such memories took.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import derived_preferences  # noqa: E402
import rerank_candidates  # noqa: E402
import search_modes  # noqa: E402
from hubproc import running_hub, wait_until_indexed  # noqa: E402
from longmemeval import DEFAULT_PATH, SHORT_TYPES, TYPES, Question, load  # noqa: E402
from rank_bm25 import BM25Okapi  # noqa: E402
from tqdm import tqdm  # noqa: E402

from memhub.client import MemhubClient, memory_input  # noqa: E402

BATCH = 100
TOP_K = 10
_TOKEN = re.compile(r"[a-z0-9]+")


@dataclass
class Result:
    """Per question: its type, recall at 5 and 10, derived memories in its top 10; search latencies."""

    recall: dict[str, tuple[str, float, float]] = field(default_factory=dict)
    derived: dict[str, int] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)

    def mean(self, k: int, qtype: str | None = None) -> float:
        xs = [r[1 if k == 5 else 2] for r in self.recall.values() if qtype is None or r[0] == qtype]
        return 100 * sum(xs) / len(xs) if xs else float("nan")

    def add(self, q: Question, ranked_turns: list[list[int]], derived: int, seconds: float) -> None:
        gold = q.gold
        at = {k: {t for turns in ranked_turns[:k] for t in turns} for k in (5, 10)}
        self.recall[q.id] = (q.type, len(gold & at[5]) / len(gold), len(gold & at[10]) / len(gold))
        self.derived[q.id] = derived
        self.latencies.append(seconds)


def _per_type(questions: list[Question], n: int) -> list[Question]:
    """The first ``n`` questions of each type (file order), taken a type at a time: the first of each type, then the
    second of each, so an ingest stopped early leaves every type with as many questions as the others, give or
    take one (the dev split's 170 took ~1.5 h to ingest on the shared machine)."""
    rank: dict[str, int] = defaultdict(int)
    ranked = []
    for q in questions:
        if rank[q.type] < n:
            ranked.append((rank[q.type], TYPES.index(q.type), q))
        rank[q.type] += 1
    return [q for _, _, q in sorted(ranked, key=lambda r: r[:2])]


def _namespace(q: Question) -> str:
    return f"lme/{q.id}"


def ingest(
    client: MemhubClient, questions: list[Question], sessions: bool, saved: Path | None
) -> dict[str, dict[str, list[int]]]:
    """Write every question's turns; return question id -> memory id -> turn indices (identical turns are stored once).

    Resumable: what was written is saved after each question, and the request ids make a repeated batch a replay.
    """
    mapping: dict[str, dict[str, list[int]]] = json.loads(saved.read_text()) if saved and saved.is_file() else {}
    todo = [q for q in questions if q.id not in mapping]
    filtered = 0
    t0 = time.perf_counter()
    with tqdm(total=sum(len(q.turns) for q in todo), desc="writing turns", unit="turn", file=sys.stderr) as bar:
        for q in todo:
            ns, ids = _namespace(q), {}
            for n, (session_id, batch) in enumerate(_batches(q, sessions)):
                reply = client.write(
                    [
                        memory_input(
                            ns,
                            q.turns[i].text,
                            kind="episodic",
                            type="event",
                            occurred_at=q.turns[i].occurred_at if sessions else None,
                        )
                        for i in batch
                    ],
                    request_id=f"lme-{q.id}-{n}",
                    session_id=session_id,
                )
                for i, result in zip(batch, reply.results, strict=True):
                    if result.HasField("memory"):
                        ids.setdefault(result.memory.id, []).append(i)
                    else:
                        filtered += 1
                bar.update(len(batch))
            mapping[q.id] = ids
            if saved is not None:
                saved.write_text(json.dumps(mapping))
    if todo:
        turns, seconds = sum(len(q.turns) for q in todo), time.perf_counter() - t0
        print(
            f"wrote {turns} turns in {seconds:.0f} s ({turns / seconds:.1f} turns/s acknowledged; "
            f"{filtered} filtered by the write gate)",
            file=sys.stderr,
        )
    return mapping


def _batches(q: Question, sessions: bool) -> list[tuple[str, list[int]]]:
    """(session id, turn indices) per write call: batches of 100 in session order; with ``sessions``, never across one."""
    if not sessions:
        idx = list(range(len(q.turns)))
        return [("", idx[s : s + BATCH]) for s in range(0, len(idx), BATCH)]
    by_session: dict[int, list[int]] = defaultdict(list)
    for i, t in enumerate(q.turns):
        by_session[t.session].append(i)
    return [
        (f"{q.id}/{q.turns[idx[0]].session_id}", idx[s : s + BATCH])
        for idx in by_session.values()
        for s in range(0, len(idx), BATCH)
    ]


def evaluate(
    client: MemhubClient,
    questions: list[Question],
    mapping: dict,
    modes: dict[str, dict[str, Any]],
    sessions: bool,
    details: Any,  # noqa: ANN401
    candidates: Any = None,  # noqa: ANN401
) -> dict[str, Result]:
    results = {mode: Result() for mode in modes}
    for q in tqdm(questions, desc="searching", unit="q", file=sys.stderr):
        ns, known = _namespace(q), mapping[q.id]
        for mode, options in modes.items():
            extra = {"as_of": q.asked_at} if sessions else {}
            t0 = time.perf_counter()
            hits = client.search(q.text, [ns], top_k=TOP_K, **options, **extra).hits
            seconds = time.perf_counter() - t0
            ranked = [known.get(h.memory.id, []) for h in hits]
            derived = sum(1 for h in hits if h.memory.id not in known)
            results[mode].add(q, ranked, derived, seconds)
            if details is not None:
                details.write(
                    json.dumps({"q": q.id, "type": q.type, "mode": mode, "gold": sorted(q.gold), "ranked": ranked}) + "\n"
                )
        if candidates is not None:
            key = {"id": q.id, "type": q.type, "gold": sorted(q.gold)}
            rerank_candidates.write(candidates, client, q.text, ns, known, key, **({"as_of": q.asked_at} if sessions else {}))
    return results


def bm25_row(questions: list[Question]) -> Result:
    """rank-bm25 (Okapi, its defaults) over each question's turns: the plain baseline the issue compares with."""
    out = Result()
    for q in tqdm(questions, desc="rank-bm25", unit="q", file=sys.stderr):
        model = BM25Okapi([_TOKEN.findall(t.text.lower()) or ["_"] for t in q.turns])
        t0 = time.perf_counter()
        scores = model.get_scores(_TOKEN.findall(q.text.lower()))
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:TOP_K]
        out.add(q, [[i] for i in order], 0, time.perf_counter() - t0)
    return out


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return 1000 * xs[min(len(xs) - 1, int(len(xs) * p))] if xs else float("nan")


def report(results: dict[str, Result], questions: list[Question]) -> None:
    counts = {t: sum(q.type == t for q in questions) for t in TYPES}
    print(f"\nLongMemEval_S dev: {len(questions)} questions, {sum(len(q.turns) for q in questions)} turns; turn recall@5/@10")
    header = ["configuration", "all", *[f"{SHORT_TYPES[t]} ({counts[t]})" for t in TYPES], "derived/10", "p50 ms", "p99 ms"]
    widths = [30, 11, *[15] * len(TYPES), 10, 7, 7]
    print(" ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths, strict=True))))
    for name, r in results.items():
        cells = [
            name,
            f"{r.mean(5):5.1f}/{r.mean(10):5.1f}",
            *[f"{r.mean(5, t):5.1f}/{r.mean(10, t):5.1f}" for t in TYPES],
            f"{sum(r.derived.values()) / max(1, len(r.derived)):.2f}",
            f"{_pct(r.latencies, 0.5):.1f}",
            f"{_pct(r.latencies, 0.99):.1f}",
        ]
        print(" ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--questions", type=int, default=0, help="only the first N questions (file order); 0: all")
    parser.add_argument("--per-type", type=int, default=0, help="only the first N questions of each type (file order); 0: all")
    parser.add_argument("--modes", default="hub defaults", help=f"comma-separated among: {', '.join(search_modes.MODES)}")
    parser.add_argument("--env", action="append", default=[], help="KEY=VALUE hub setting (repeatable)")
    parser.add_argument("--data-dir", type=Path, help="keep the hub's data here, and reuse it when present")
    parser.add_argument("--sessions", action="store_true", help="give the hub session ids and dates (reported apart)")
    parser.add_argument("--details", type=Path, help="write each search's ranked turns here (JSON lines)")
    parser.add_argument(
        "--candidates", type=Path, help="write each question's unreranked top 30 here, for bench/rerank_screen.py (JSON lines)"
    )
    parser.add_argument("--no-bm25", action="store_true", help="skip the rank-bm25 row")
    parser.add_argument(
        "--no-wait",
        action="store_true",
        help="search without waiting for the whole index (only when the questions asked are known to be indexed, e.g. "
        "no outbox rows of their namespaces: the kept data of a larger set still being indexed)",
    )
    parser.add_argument(
        "--derive-preferences",
        action="store_true",
        help="add the preference memories the write gate derives to kept data written without them (once)",
    )
    parser.add_argument(
        "--derive-types",
        default="",
        help="with --derive-preferences: only in the haystacks of these question types (comma-separated; default all)",
    )
    args = parser.parse_args()
    questions = load(args.data)
    if args.questions:
        questions = questions[: args.questions]
    if args.per_type < 0:
        parser.error(f"--per-type must be 0 (all) or more; got {args.per_type}")
    if args.per_type:
        questions = _per_type(questions, args.per_type)
    modes = search_modes.choose(args.modes, parser.error)
    extra = dict(kv.split("=", 1) for kv in args.env)
    saved = None
    if args.data_dir is not None:
        args.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # the hub refuses a data directory others can read
        saved = args.data_dir / "longmemeval-mapping.json"
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    with (
        running_hub(data_dir=args.data_dir, extra_env=extra) as hub,
        MemhubClient(hub.address, token=hub.token, timeout_s=120) as client,
    ):
        t0 = time.perf_counter()
        mapping = ingest(client, questions, args.sessions, saved)
        marker = args.data_dir / "preferences-derived" if args.data_dir is not None else None
        if args.derive_preferences and not (marker and marker.exists()):
            only = set(filter(None, args.derive_types.split(",")))
            by_id = {q.id: q for q in questions if not only or q.type in only}
            turns = [
                (_namespace(by_id[qid]), mid, by_id[qid].turns[idx[0]].text, None)
                for qid, ids in mapping.items()
                if qid in by_id
                for mid, idx in ids.items()
            ]
            print(f"derived preference memories written: {derived_preferences.add(client, turns, 'lme')}", file=sys.stderr)
            if marker is not None:
                marker.touch()
        if not args.no_wait:
            wait_until_indexed(client, progress=True)
        print(f"ingest until searchable: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        with (
            open(args.details, "w") if args.details else open(os.devnull, "w") as details,
            open(args.candidates, "w") if args.candidates else open(os.devnull, "w") as candidates,
        ):
            results = evaluate(
                client,
                questions,
                mapping,
                modes,
                args.sessions,
                details if args.details else None,
                candidates if args.candidates else None,
            )
    if not args.no_bm25:
        results["rank-bm25 (no hub)"] = bm25_row(questions)
    if extra:
        print(f"hub settings: {' '.join(args.env)}")
    print(f"protocol: {'with session ids and dates (--sessions)' if args.sessions else 'turns only (no session ids, no dates)'}")
    report(results, questions)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
