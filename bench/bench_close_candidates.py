"""How many Lite code candidates a search for near-identical vectors needs (the write path's near-duplicate check).

    .venv/bin/python bench/bench_close_candidates.py [--rows 30000] [--queries 2000] [--cosine 0.85]

On Milvus Lite the dense channel ranks rows by the Hamming distance of their
thermometer codes and re-scores the best ``candidates`` exactly
(memhub/index/dense_search.py). A search proposes ``rows / 250`` candidates
(400 at 100k rows), which its top 10 needs; the near-duplicate check asks only
for the 5 closest rows at cosine >= 0.85, and each candidate costs the hub a
float16 copy to decode and score. This measures, on real turns (LoCoMo and
LongMemEval, embedded by the hub's own model, all in one namespace: the
hardest case), whether such close rows rank near the top by code: for every
query row that has neighbours at or above ``--cosine``, the share of its (up to
5) closest such neighbours found among the first K rows by Hamming distance,
for several K, and the hub-side cost of K candidates per query.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo  # noqa: E402
import longmemeval  # noqa: E402

from memhub.embedding import build_embedder, embed_bulk  # noqa: E402
from memhub.embedding.config import EmbeddingConfig  # noqa: E402
from memhub.index import dense_codes  # noqa: E402
from memhub.index.vector_copies import VectorCopies  # noqa: E402

NEIGHBOURS = 5
"""What the near-duplicate check asks for (memhub/curation/near_dup.py ``NearDupConfig.candidates``)."""
DEPTHS = (10, 20, 40, 80, 160, 400)


def texts(rows: int, locomo_path: Path, lme_path: Path) -> list[str]:
    """Distinct turns: LoCoMo's, then LongMemEval's haystack turns until ``rows``."""
    seen: dict[str, None] = {}
    for conversation in locomo.load(locomo_path):
        for turn in conversation.turns:
            seen.setdefault(turn.text)
    for question in longmemeval.load(lme_path):
        if len(seen) >= rows:
            break
        for turn in question.turns:
            seen.setdefault(turn.text)
    return list(seen)[:rows]


def embed(all_texts: list[str]) -> np.ndarray:
    embedder = build_embedder(EmbeddingConfig())
    try:
        chunks = []
        with tqdm(total=len(all_texts), desc="embedding", unit="text", file=sys.stderr) as bar:
            for i in range(0, len(all_texts), 512):
                chunks.append(np.asarray(embed_bulk(embedder, all_texts[i : i + 512]), dtype=np.float32))
                bar.update(len(chunks[-1]))
        return np.vstack(chunks)
    finally:
        embedder.close()


def hamming_order(codes: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Row indices by Hamming distance of their codes to ``query``'s code, nearest first (ties by index)."""
    distances = np.bitwise_count(np.bitwise_xor(codes, query)).sum(axis=1, dtype=np.int32)
    return np.argsort(distances, kind="stable")


def candidate_cost_ms(k: int, dimension: int, repeats: int = 300) -> float:
    """Hub CPU per query for ``k`` candidates: decode their float16 copies, keep them, pick the best 5."""
    vectors = np.random.default_rng(0).standard_normal((k, dimension)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    packed = dense_codes.pack_many(vectors)
    ids = [str(uuid.uuid4()) for _ in range(k)]
    copies = VectorCopies(dimension)
    t0 = time.process_time()
    for _ in range(repeats):
        decoded = dense_codes.unpack(packed, dimension)
        copies.put(ids, decoded)
        dense_codes.best(ids, decoded, vectors[0], NEIGHBOURS)
    return 1000 * (time.process_time() - t0) / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=30_000)
    parser.add_argument("--queries", type=int, default=2_000)
    parser.add_argument("--cosine", type=float, default=0.85)
    parser.add_argument("--locomo", type=Path, default=locomo.DEFAULT_PATH)
    parser.add_argument("--longmemeval", type=Path, default=longmemeval.DEFAULT_PATH)
    args = parser.parse_args()
    if not 1_000 <= args.rows <= 200_000 or not 1 <= args.queries <= 100_000 or not 0.5 <= args.cosine < 1.0:
        parser.error("--rows takes 1000-200000, --queries 1-100000, --cosine 0.5-0.99")
    corpus = texts(args.rows, args.locomo, args.longmemeval)
    vectors = embed(corpus)
    # The index keeps float16 copies; score what it scores.
    vectors = vectors.astype(np.float16).astype(np.float32)
    codes = dense_codes.thermometer(vectors)
    rng = np.random.default_rng(7)
    found = {k: 0 for k in DEPTHS}
    wanted = queries_with_neighbours = 0
    for q in tqdm(rng.permutation(len(corpus)), desc="queries", unit="query", file=sys.stderr):
        similarity = vectors @ vectors[q]
        similarity[q] = -1.0  # the row itself is not its own near-duplicate
        close = np.flatnonzero(similarity >= args.cosine)
        if not len(close):
            continue
        targets = set(close[np.argsort(-similarity[close], kind="stable")][:NEIGHBOURS].tolist())
        order = [i for i in hamming_order(codes, codes[q])[: max(DEPTHS) + 1].tolist() if i != q]
        for k in DEPTHS:
            found[k] += len(targets & set(order[:k]))
        wanted += len(targets)
        queries_with_neighbours += 1
        if queries_with_neighbours >= args.queries:
            break
    print(f"\n{len(corpus)} distinct turns in one namespace; {queries_with_neighbours} query rows", end="")
    print(f" with a neighbour at cosine >= {args.cosine}")
    print(f"{wanted} (query, neighbour) pairs: each query's up to {NEIGHBOURS} closest neighbours at or above the threshold")
    print(f"{'candidates':>10s} {'found':>8s} {'hub CPU per query':>18s}")
    for k in DEPTHS:
        print(f"{k:10d} {found[k] / max(1, wanted):8.4f} {candidate_cost_ms(k, vectors.shape[1]):15.3f} ms")


if __name__ == "__main__":
    main()
