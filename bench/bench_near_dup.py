"""How the near-duplicate rule behaves on real text: false merges among LoCoMo turns, true merges of rewritten copies.

The hub folds a write into an active memory when both hold (memhub/curation/near_dup.py): the embeddings are
within the cosine threshold (MEMHUB_NEAR_DUP_COSINE, 0.85) and the content words are the same. This
script measures, with the hub's own embedder and rule, on LoCoMo turns (../shared/data; the utterance
without its "[date] Speaker:" label):

1. False merges: every pair of distinct turns of the sample is a different utterance, so every pair the
   rule would merge is a false merge. Printed per threshold: pairs above it (what cosine alone would
   merge) and pairs the rule merges (cosine and content words), with examples.
2. True merges: each turn rewritten as writers repeat themselves (lower case, end punctuation dropped,
   a filler word added, both) must fold into the original; printed: the share that does, per threshold.
   A paraphrase with other words is meant to stay apart (a merge that loses a fact is worse than a
   duplicate line); its share is printed too, as the price.

    .venv/bin/python bench/bench_near_dup.py [--conversations 3] [--thresholds 0.80,0.85,0.90]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from locomo import DEFAULT_PATH, load  # noqa: E402

from memhub.curation.near_dup import same_content  # noqa: E402
from memhub.embedding import EmbeddingConfig, build_embedder, embed_bulk  # noqa: E402

LABEL = re.compile(r"^\[[^\]]*\] [^:]+: ")
_FILLERS = ("Just so you know, ", "Also, ", "Really, ")
# Rewrites a person would call "the same memory again"; each must fold into the original.
REWRITES = {
    "lower case": lambda t: t.lower(),
    "no end punctuation": lambda t: t.rstrip(".!?。！？ "),
    "filler word": lambda t: "Also, " + t[0].lower() + t[1:] if t else t,
    "lower case, no punctuation": lambda t: t.lower().rstrip(".!?。！？ "),
}
# Other words, same fact: kept apart by design (the content-word test); shown as the price of that.
PARAPHRASE = {"that's": "that is", "I'm": "I am", "it's": "it is", "really": "truly", "great": "wonderful"}


def utterances(conversations: int) -> list[str]:
    turns = [LABEL.sub("", t.text) for c in load(DEFAULT_PATH)[:conversations] for t in c.turns]
    # Distinct utterances of at least 4 words: the write filter drops shorter small talk before this rule runs.
    return [t for t in dict.fromkeys(turns) if len(t.split()) >= 4]


def paraphrase(text: str) -> str | None:
    out = text
    for a, b in PARAPHRASE.items():
        out = re.sub(rf"\b{re.escape(a)}\b", b, out)
    return out if out != text else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=3, help="LoCoMo conversations to sample (1-10)")
    parser.add_argument("--thresholds", default="0.80,0.85,0.90", help="cosine thresholds, comma-separated")
    args = parser.parse_args()
    thresholds = [float(x) for x in args.thresholds.split(",")]
    texts = utterances(args.conversations)
    embedder = build_embedder(EmbeddingConfig())
    try:
        started = time.perf_counter()
        vectors = np.vstack([embed_bulk(embedder, texts[i : i + 256]) for i in range(0, len(texts), 256)])
        print(
            f"{len(texts)} distinct LoCoMo utterances ({args.conversations} conversations) embedded in "
            f"{time.perf_counter() - started:.1f} s with {embedder.model_id}",
            flush=True,
        )
        sims = vectors @ vectors.T
        upper = np.triu_indices(len(texts), k=1)
        pair_sims = sims[upper]
        low = min(thresholds)
        close = [(float(pair_sims[k]), int(upper[0][k]), int(upper[1][k])) for k in np.flatnonzero(pair_sims >= low)]
        merged = [(s, i, j) for s, i, j in close if same_content(texts[i], texts[j])]
        print(f"\n1. false merges among {len(pair_sims):,} pairs of distinct utterances")
        print(f"{'cosine >=':>10} {'pairs above':>12} {'rule merges':>12} {'false-merge rate':>17}")
        for t in thresholds:
            above = sum(s >= t for s, _, _ in close)
            rule = sum(s >= t for s, _, _ in merged)
            print(f"{t:10.2f} {above:12d} {rule:12d} {rule / len(pair_sims):17.2e}")
        for s, i, j in sorted(close, reverse=True)[:5]:
            verdict = "MERGED" if same_content(texts[i], texts[j]) else "kept apart"
            print(f"   {s:.3f} {verdict}: {texts[i][:70]!r} / {texts[j][:70]!r}")

        print("\n2. true merges: each utterance rewritten, folded into its original?")
        print(f"{'rewrite':>28} " + " ".join(f"{'>=' + format(t, '.2f'):>8}" for t in thresholds))
        cases = dict(REWRITES)
        for name, rewrite in cases.items():
            pairs = [(k, rewrite(t)) for k, t in enumerate(texts) if rewrite(t) != t]
            rewritten = np.vstack([embed_bulk(embedder, [p for _, p in pairs[i : i + 256]]) for i in range(0, len(pairs), 256)])
            cos = np.einsum("ij,ij->i", rewritten, vectors[[k for k, _ in pairs]])
            same = np.array([same_content(texts[k], p) for k, p in pairs])
            shares = [float(np.mean((cos >= t) & same)) for t in thresholds]
            print(f"{name:>28} " + " ".join(f"{s:8.1%}" for s in shares) + f"   ({len(pairs)} rewrites)")
        pairs = [(k, p) for k, t in enumerate(texts) if (p := paraphrase(t)) is not None]
        if pairs:
            rewritten = embed_bulk(embedder, [p for _, p in pairs])
            cos = np.einsum("ij,ij->i", rewritten, vectors[[k for k, _ in pairs]])
            same = np.array([same_content(texts[k], p) for k, p in pairs])
            shares = [float(np.mean((cos >= t) & same)) for t in thresholds]
            print(f"{'paraphrase (kept apart)':>28} " + " ".join(f"{s:8.1%}" for s in shares) + f"   ({len(pairs)} rewrites)")
    finally:
        embedder.close()


if __name__ == "__main__":
    main()
