"""Screen model-free rerank variants on both benchmarks at once, from the benches' --candidates files.

    .venv/bin/python bench/rerank_screen.py --locomo FILE --longmemeval FILE [--variants a,b]

Each variant reorders every question's unreranked top 30 (what the hub's rerank would see, written by
``bench_locomo.py --candidates`` and ``bench_longmemeval.py --candidates``) and the table gives recall@5/@10
as the benches count it: LoCoMo categories 1-4 on conversations 1-5 (where a setting is chosen), 6-10
(reported) and multi-hop; LongMemEval overall and per type. The first rows are the hub's orders: "no rerank",
"local (hub)" (its defaults) and "local before round 4" (the rerank before issue 25's fourth round); compare them
with the benches' own rows to see how closely the screen follows the hub. "length-fair" and "idf" are the
prototypes of the hub's ``length_free`` (at power 0.5) and ``rare_terms``. It screens; the figures that decide a
default come from the benches run against the hub with the change.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from longmemeval import load as load_lme  # noqa: E402

from memhub.rerank import Candidate  # noqa: E402
from memhub.rerank.local import LocalReranker, _content_view, content_terms  # noqa: E402
from memhub.search import intent  # noqa: E402
from memhub.search.diversity import reorder  # noqa: E402

Scorer = Callable[[str, Sequence[Candidate]], list[float]]
_LOCOMO = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_LME_TYPES = ("knowledge-update", "multi-session", "single-session-assistant", "single-session-preference")
_LME_TYPES += ("single-session-user", "temporal-reasoning")


def _local(**settings: Any) -> LocalReranker:  # noqa: ANN401 - LocalReranker's keyword arguments
    """A local reranker as it was before issue 25's fourth round (no best channel, rarity or length discount), with
    ``settings`` changed: each variant names everything it turns on."""
    return LocalReranker(**({"length_free": 0, "best_channel_weight": 0.0, "rare_terms": False} | settings))


def _words(content: str) -> int:
    return max(1, _content_view(content)[2])


class LengthFair(LocalReranker):
    """The hub's local rerank with a candidate's share of the query's words discounted for its length: a turn of
    ``n`` words above ``free`` counts ``(free / n) ** power`` of its coverage (a long turn holds many words by
    chance; a short statement of the fact holds few)."""

    def __init__(self, free: int, power: float, term_weight: float = 0.5, entity_weight: float = 0.25) -> None:
        super().__init__(term_weight, entity_weight)
        self.free, self.power = free, power

    def scores(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
        plain = _local(term_weight=self.term_weight, entity_weight=0.0).scores(query, candidates)
        named = _local(term_weight=0.0, entity_weight=self.entity_weight).scores(query, candidates)
        best = max(c.fused_score for c in candidates) or 1.0
        out = []
        for c, p, n in zip(candidates, plain, named, strict=True):
            base = c.fused_score / best
            factor = min(1.0, (self.free / _words(c.content)) ** self.power)
            out.append(base + (p - base) * factor + (n - base))
        return out


class Idf(LocalReranker):
    """Coverage weighted by each query word's rarity among the candidates (a word every candidate holds tells
    nothing apart), optionally with the length discount."""

    def __init__(self, free: int = 0, power: float = 0.0, best_channel: float = 0.0) -> None:
        super().__init__(0.5, 0.25)
        self.free, self.power, self.best = free, power, best_channel

    def scores(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
        terms = content_terms(query)
        named = _local(term_weight=0.0, entity_weight=self.entity_weight, best_channel_weight=self.best).scores(query, candidates)
        bases = [c.fused_score + self.best * c.best_channel for c in candidates]
        best = max(bases) or 1.0
        views = [_content_view(c.content)[0] for c in candidates]
        n = len(candidates)
        idf = {t: math.log((n + 1) / (sum(t in v for v in views) + 0.5)) for t in terms}
        total = sum(idf.values()) or 1.0
        out = []
        for b, c, v, e in zip(bases, candidates, views, named, strict=True):
            base = b / best
            covered = sum(w for t, w in idf.items() if t in v) / total
            factor = min(1.0, (self.free / _words(c.content)) ** self.power) if self.free else 1.0
            out.append(base + self.term_weight * covered * factor + (e - base))
        return out


def variants() -> dict[str, Scorer | None]:
    out: dict[str, Scorer | None] = {
        "no rerank": None,
        "local (hub)": LocalReranker().scores,
        "local before round 4": _local().scores,
    }
    for free in (20, 40, 60, 100):
        for power in (0.5, 1.0):
            out[f"length-fair {free} ^{power}"] = LengthFair(free, power).scores
    out["idf"] = Idf().scores
    for free in (40, 60):
        out[f"idf + length-fair {free} ^0.5"] = Idf(free, 0.5).scores
    for weight in (1.0, 2.0):
        out[f"idf + best channel {weight}"] = Idf(best_channel=weight).scores
    for weight in (0.0, 1.0, 1.5, 2.0, 3.0):
        out[f"rare terms + best {weight}"] = _local(best_channel_weight=weight, rare_terms=True).scores
        for free in (60, 100):
            out[f"rare terms + best {weight} + free {free}"] = _local(
                length_free=free, best_channel_weight=weight, rare_terms=True
            ).scores
    for weight in (0.5, 1.0, 2.0, 4.0):
        out[f"best channel {weight}"] = _local(best_channel_weight=weight).scores
        for free in (40, 60, 100):
            out[f"best channel {weight} + free {free}"] = _local(length_free=free, best_channel_weight=weight).scores
    return out


def _recall(gold: Sequence[Any], ranked: Sequence[Sequence[Any]], k: int) -> float:
    found = {u for units in ranked[:k] for u in units}
    return len(set(gold) & found) / len(gold)


def _order(
    text: str, cands: list[dict], scorer: Scorer | None, spread: float, session: Callable[[Any], str], share: float
) -> list[list[Any]]:
    kind = intent.of(text)
    order = list(range(len(cands)))
    # The hub skips the model-free rerank for recommendation questions (memhub/search/reranking.py).
    if scorer is not None and not kind.recommendation:
        objs = [Candidate(str(i), c["content"], c["score"], tuple(c["entities"]), _best_channel(c)) for i, c in enumerate(cands)]
        scores = scorer(text, objs)
        if share:
            scores = _share_with_neighbours(cands, objs, scores, share)
        order = sorted(order, key=lambda i: -scores[i])
    if spread and kind.aggregation:  # as memhub/search/diversity.py, with the sessions the data sets give
        items = [(i, session(cands[i]["units"][0]) if cands[i]["units"] else "") for i in order]
        order = reorder(items, spread)  # type: ignore[arg-type]  # any item will do
    return [cands[i]["units"] for i in order]


_INDEX_CHANNELS = ("RETRIEVAL_CHANNEL_DENSE", "RETRIEVAL_CHANNEL_KEYWORD")


def _best_channel(c: dict) -> float:
    """As memhub/search/reranking.py gives it the rerank: the best dense or keyword share 1 / (60 + rank) (both
    weigh 1 by default)."""
    ranks = [r for ch, r in c["channels"].items() if ch in _INDEX_CHANNELS]
    return 1 / (60 + min(ranks)) if ranks else 0.0


def _share_with_neighbours(cands: list[dict], objs: Sequence[Candidate], scores: list[float], share: float) -> list[float]:
    """Each candidate gains ``share`` of what the rerank gave its adjacent turns (the one before and after in its
    session, when they are candidates) above their fused part: the question's words are often in the turn that
    asks ("What inspired your painting?") and the fact in the reply. LoCoMo only (its dia ids say adjacency;
    LongMemEval's protocol gives the hub no sessions)."""
    best = max(o.fused_score for o in objs) or 1.0
    gain: dict[str, float] = {}
    for c, o, sc in zip(cands, objs, scores, strict=True):
        for u in c["units"]:
            if isinstance(u, str):
                gain[u] = max(gain.get(u, 0.0), sc - o.fused_score / best)
    out = []
    for c, sc in zip(cands, scores, strict=True):
        extra = 0.0
        for u in c["units"]:
            if isinstance(u, str):
                d, _, t = u.partition(":")
                extra = max(extra, gain.get(f"{d}:{int(t) - 1}", 0.0), gain.get(f"{d}:{int(t) + 1}", 0.0))
        out.append(sc + share * extra)
    return out


def _sessions(row: dict, lme: dict[str, list[int]]) -> Callable[[Any], str]:
    """A unit's session: LoCoMo's dia id says it ("D3:5": session 3); LongMemEval's turn index, from the data."""
    if "type" in row:
        return lambda i: str(lme[row["id"]][i])
    return lambda dia: dia.split(":")[0]


def _groups(row: dict) -> tuple[str, ...]:
    if "type" in row:
        return ("LME all", f"LME {row['type']}")
    halves = "LoCoMo 1-5" if row["conv"] < 5 else "LoCoMo 6-10"
    return ("LoCoMo all", halves, f"LoCoMo {_LOCOMO[row['category']]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path)
    parser.add_argument("--longmemeval", type=Path)
    parser.add_argument("--variants", default="", help="comma-separated names (default: all)")
    parser.add_argument(
        "--spread",
        type=float,
        default=0.0,
        help="session spread gap for aggregation questions (0: off, as the hub); LongMemEval's sessions come from the "
        "data, which its default protocol does not give the hub",
    )
    parser.add_argument(
        "--neighbour-share", type=float, default=0.0, help="share of its adjacent turns' rerank gain a candidate gets (LoCoMo)"
    )
    args = parser.parse_args()
    rows = []
    for path in (args.locomo, args.longmemeval):
        if path is not None:
            rows += [json.loads(line) for line in path.read_text().splitlines() if line]
    rows = [r for r in rows if "type" in r or r["category"] in _LOCOMO]
    if not rows:
        parser.error("give --locomo and/or --longmemeval candidate files")
    lme = {q.id: [t.session for t in q.turns] for q in load_lme()} if args.spread and any("type" in r for r in rows) else {}
    table = variants()
    wanted = [v for v in args.variants.split(",") if v] or list(table)
    unknown = [v for v in wanted if v not in table]
    if unknown:
        parser.error(f"unknown variants {unknown}; choose among {', '.join(table)}")
    columns = ["LoCoMo 1-5", "LoCoMo 6-10", "LoCoMo multi-hop", "LME all"] + [f"LME {t}" for t in _LME_TYPES]
    short = [c.replace("single-session-", "ss-").replace("LME ", "").replace("LoCoMo ", "") for c in columns]
    print("recall@5/@10; LoCoMo categories 1-4; LME = LongMemEval questions given")
    print("variant".ljust(40) + "".join(s[:13].rjust(14) for s in short))
    for name in wanted:
        sums: dict[tuple[str, int], list[float]] = defaultdict(list)
        for r in rows:
            ranked = _order(r["q"], r["candidates"], table[name], args.spread, _sessions(r, lme), args.neighbour_share)
            for g in _groups(r):
                for k in (5, 10):
                    sums[(g, k)].append(_recall(r["gold"], ranked, k))
        cells = []
        for c in columns:
            a, b = sums.get((c, 5)), sums.get((c, 10))
            cells.append(f"{100 * sum(a) / len(a):5.1f}/{100 * sum(b) / len(b):5.1f}" if a and b else "-")
        print(name[:39].ljust(40) + "".join(x.rjust(14) for x in cells))


if __name__ == "__main__":
    main()
