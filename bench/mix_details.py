"""What a per-question rule would give, from the --details files of bench_longmemeval.py and bench_locomo.py.

    .venv/bin/python bench/mix_details.py FILE --base "hub defaults" --other "defaults without rerank" --rule aggregation

For each question the rule picks the other mode's ranking when it holds (the hub's own intent rules,
memhub/search/intent.py), the base mode's otherwise; recall@5/@10 per type (LongMemEval) or per category and
half (LoCoMo) is printed for base, other and the mix. It screens a rule before it is built into the hub; the
figures that decide a default come from the benches run against the hub with the rule in it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from longmemeval import load as load_lme  # noqa: E402

from memhub.search import intent  # noqa: E402

RULES: dict[str, Callable[[str], bool]] = {
    "aggregation": lambda text: intent.of(text).aggregation,
    "recommendation": lambda text: intent.of(text).recommendation,
    "always": lambda text: True,
}
_LOCOMO = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def _recall(gold: list, ranked: list[list], k: int) -> float:
    found = {x for xs in ranked[:k] for x in xs}
    return len(set(gold) & found) / len(gold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("details", type=Path)
    parser.add_argument("--base", default="hub defaults")
    parser.add_argument("--other", required=True)
    parser.add_argument("--rule", choices=list(RULES), default="aggregation")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.details.read_text().splitlines() if line]
    texts = {q.id: q.text for q in load_lme()} if rows and "type" in rows[0] else {}
    by_mode: dict[str, dict] = defaultdict(dict)
    seen: dict[tuple, int] = defaultdict(int)  # LoCoMo repeats a few questions word for word: keep every one
    for r in rows:
        if "type" in r:  # LongMemEval
            key, text, groups = r["q"], texts[r["q"]], ("all", r["type"])
        else:  # LoCoMo: headline categories only; halves by conversation
            if r["category"] not in _LOCOMO:
                continue
            base_key = (r["mode"], r["conv"], r["q"], tuple(r["gold"]))
            seen[base_key] += 1
            key, text = (*base_key[1:], seen[base_key]), r["q"]
            groups = ("all", _LOCOMO[r["category"]], "1-5" if r["conv"] < 5 else "6-10")
        by_mode[r["mode"]][key] = (text, groups, r["gold"], r["ranked"])
    for mode in (args.base, args.other):
        if mode not in by_mode:
            parser.error(f"mode {mode!r} not in the file; it has {sorted(by_mode)}")
    sums: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    picked = 0
    for key, (text, groups, gold, ranked) in by_mode[args.base].items():
        other = by_mode[args.other][key][3]
        use_other = RULES[args.rule](text)
        picked += use_other
        for name, r in (("base", ranked), ("other", other), ("mix", other if use_other else ranked)):
            for g in groups:
                for k in (5, 10):
                    sums[(name, g, k)].append(_recall(gold, r, k))
    groups_seen = sorted({g for (_, g, _) in sums}, key=lambda g: (g != "all", g))
    print(f"rule {args.rule}: the other mode for {picked} of {len(by_mode[args.base])} questions")
    print("".ljust(8) + "".join(g[:16].rjust(17) for g in groups_seen))
    for name in ("base", "other", "mix"):
        cells = []
        for g in groups_seen:
            a, b = sums[(name, g, 5)], sums[(name, g, 10)]
            cells.append(f"{100 * sum(a) / len(a):5.1f}/{100 * sum(b) / len(b):5.1f} ({len(a)})".rjust(17))
        print(name.ljust(8) + "".join(cells))


if __name__ == "__main__":
    main()
