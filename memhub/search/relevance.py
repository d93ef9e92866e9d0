"""A hit's relevance: how likely the memory is about what the query asks, on a scale that means the same for every query.

The fused RRF score only orders one search's hits (its first hit scores the
same whether it answers the query or merely is the least unrelated memory
there). Relevance instead judges each (query, memory) pair on its own, from
three features:

- ``cosine``: the embedding similarity of query and memory (the dense
  channel's score; fetched from the index for hits that only other channels
  found). Its scale depends on the embedding model, so it is used only with
  a calibration made for that model;
- ``coverage``: the share of the query's content words found in the memory
  (memhub/search/query_terms.py: stop and question words left out, light
  stemming; Chinese by character pairs); with a model, of its words other
  than names (``topic_coverage``), which ``missing_names`` judges: a shared
  name alone does not make "Alice works at Shopify" about Alice's colour;
- ``missing_names``: the share of the names the query mentions (people,
  products, codes: memhub/recall/entities.py) that the memory does not contain,
  counted only when the memory names someone or something itself. A memory
  about Bob is not about Alice; "She prefers tea" may well be.

They are combined by a logistic model, relevance = 1 / (1 + exp(-z)) with
z = bias + w_cos * cosine + w_cov * coverage + w_names * missing_names,
fitted on LoCoMo conversations 1-5 (the tuning half; bench/bench_relevance.py
``fit`` reproduces it) to tell evidence turns of a question (positives) from
the best candidates of another conversation (negatives: nothing there can
answer), with both classes weighted equally, in two stages so that names can
only lower a relevance (see ``fit`` there). So 0.5 is where a related and an
unrelated memory are equally likely, above 0.7 unrelated memories are rare,
below 0.3 related ones are. It says *about what was asked*, not *answers it*:
other turns about the same person and topic score as high as the evidence.

Without a usable cosine (an embedder with no calibration here, the index or
embedder down, or a mostly Chinese query with an English-only model, whose
similarities of Chinese text are noise: 0.94 for 小雨喜欢绿色 against
小雨对什么过敏) the model-free calibration (coverage and names only, fitted
the same way) is used.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from memhub.recall import entities
from memhub.search.query_terms import QueryTerms, coverage, is_stop_word, query_terms, stem, word_set


@dataclass(frozen=True)
class Calibration:
    """Weights of the logistic model; see the module docstring."""

    bias: float
    missing_names: float
    cosine: float = 0.0
    coverage: float = 0.0
    """Weight of the share of all the query's terms in the memory (the model-free calibration)."""
    topic_coverage: float = 0.0
    """Weight of the share of its terms other than names (with a model: the names are judged by missing_names)."""
    english_only: bool = False
    """The model's similarities of Chinese text carry no meaning: mostly Chinese queries use the model-free one."""


# Fitted by `bench/bench_relevance.py fit` on LoCoMo conversations 1-5 (1,106 evidence turns, 11,930
# candidates from other conversations); the held-out figures are in docs/concepts/recall.md.
MODEL_FREE = Calibration(bias=-3.227, coverage=11.602, missing_names=-2.189)
# By model id prefix: the dynamically quantised MiniLM and the int8 one give cosines within 0.01 of each other.
CALIBRATIONS: dict[str, Calibration] = {
    "all-MiniLM-L6-v2": Calibration(bias=-5.698, cosine=14.878, topic_coverage=1.832, missing_names=-2.308, english_only=True),
}


def calibration_for(model_id: str) -> Calibration | None:
    """The calibration for embedding model ``model_id``, or None when there is none (then only the model-free one)."""
    for prefix, calibration in CALIBRATIONS.items():
        if model_id.startswith(prefix):
            return calibration
    return None


@dataclass(frozen=True)
class Features:
    cosine: float | None
    coverage: float
    """Share of all the query's terms in the memory."""
    missing_names: float
    topic_coverage: float = 0.0
    """Share of its terms other than names (the same as ``coverage`` when it names no one, or only names)."""


# Sentence-initial capitalised words are left out by the entity rules ("Talked with Bob"), but a memory
# opening with one ("Bob is allergic to cats") is about someone; these openers are not names.
_OPENER = re.compile(r"(?:^|[.!?:;]\s+)([A-Z][\w'’-]*)")
_NOT_NAMES = frozenset("user users customer assistant agent team i we you he she they it this that there".split())


def names_someone(content: str, given_entities: Sequence[str]) -> bool:
    """Whether a memory names anyone or anything (then it is not about a name it lacks)."""
    if given_entities or entities.extract(content):
        return True
    return any(stem(m.lower()) not in _NOT_NAMES and not is_stop_word(m.lower()) for m in _OPENER.findall(content))


class Judge:
    """Relevance of memories to one query; built once per search."""

    def __init__(self, query: str, model_id: str) -> None:
        self.terms: QueryTerms = query_terms(query)
        self.names = frozenset(w for key in entities.extract(query) for w in word_set(key))
        # Topic coverage leaves the query's names to missing_names (unless the query is only names:
        # "Duolingo"): a shared name alone does not make "Alice works at Shopify" an answer to
        # "what is Alice's favourite colour".
        others = self.terms.words - self.names
        self.topic: QueryTerms = QueryTerms(others, self.terms.pairs) if others or self.terms.pairs else self.terms
        terms = self.terms
        calibration = calibration_for(model_id)
        if calibration is not None and calibration.english_only and terms.mostly_chinese:
            calibration = None
        self._calibration = calibration

    @property
    def wants_cosine(self) -> bool:
        """Whether the query's similarity to each memory counts (else no need to fetch it)."""
        return self._calibration is not None

    def features(self, content: str, given_entities: Sequence[str], cosine: float | None) -> Features:
        """``given_entities``: the writer's own (MemoryRecord.entities); those in the content are found here."""
        missing = 0.0
        if self.names and names_someone(content, given_entities):
            missing = len(self.names - word_set(content)) / len(self.names)
        return Features(cosine, coverage(self.terms, content), missing, coverage(self.topic, content))

    def relevance(self, content: str, given_entities: Sequence[str], cosine: float | None) -> float:
        return score(self.features(content, given_entities, cosine), self._calibration)


def score(f: Features, calibration: Calibration | None) -> float:
    """Relevance in [0, 1] from features, with ``calibration`` when the cosine is known, else the model-free one."""
    c = calibration if calibration is not None and f.cosine is not None else MODEL_FREE
    z = c.bias + c.coverage * f.coverage + c.topic_coverage * f.topic_coverage + c.missing_names * f.missing_names
    if c is not MODEL_FREE:
        z += c.cosine * float(f.cosine)  # type: ignore[arg-type]  # checked above
    return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))
