"""A reranker that needs no model: fused rank plus exact overlap with the query's words and entities.

Dense and BM25 channels each miss something the other sees; what neither
weighs is how many of the query's *distinct* content words a candidate
contains (BM25 rewards repeats of one rare word as much as two different
ones) and whether it names the query's entities exactly. The score is

    base / best_base + term_weight * covered_terms * length_factor + entity_weight * covered_entities

with the coverages in [0, 1] and, each issue 25 found on a benchmark's failing questions:

- ``base`` = fused score + best_channel_weight * the best single dense or keyword share ``1 / (k + rank)``:
  with reciprocal rank fusion a hit one list ranks first and the other low or not at all scored half of a
  middling hit of both, and the rerank kept that order;
- ``covered_terms`` weighs each query word by its rarity among the candidates (``rare_terms``): a word every
  candidate holds (the name of the person a conversation is about) tells none of them apart;
- ``length_factor`` = ``sqrt(length_free / words)`` above ``length_free`` words (1 below): a long turn holds
  many of the question's words by chance (an assistant's long answer on the topic), and took the places of the
  short turn that states the fact in passing.

Weights are chosen on LoCoMo conversations 1-5 only (bench/bench_locomo.py, screened with
bench/rerank_screen.py), checked on conversations 6-10 and on LongMemEval (bench/bench_longmemeval.py), whose
turns are much longer (median 79 words against LoCoMo's 29): docs/benchmarks.md has the table. The defaults,
best_channel_weight 2, rare_terms on and length_free 60, gained LoCoMo 6-10 0.6 @10 and all 170 LongMemEval dev
questions 2.0 @10 over the rerank without them (0, off, 0, which still turns them off).

Chinese has no spaces: the word pattern would take a whole run of characters
("小雨对花生过敏") as one word that no query repeats, so for the Chinese part of
a query the covered terms are its character pairs (memhub/search/query_terms.py,
question words cut out first), counted with the English words.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence

from memhub.recall import entities
from memhub.rerank.base import Candidate
from memhub.search.query_terms import query_terms

# Lucene's English stop words plus question words and auxiliaries, which a question always carries.
_STOP = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these they "
    "this to was will with what when where who whom which why how did do does done has have had i you he she we "
    "me my your his her our us them its am were been being would could should can may might about from so just".split()
)
_WORD = re.compile(r"[\w][\w'-]*", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@functools.lru_cache(maxsize=65536)  # a conversation's vocabulary repeats: a lookup beats the suffix loop
def _stem(word: str) -> str:
    """A deliberately light stemmer (plural and -ing/-ed) so that 'paintings' meets 'painting'."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def content_terms(text: str) -> set[str]:
    """Stemmed content words; runs of Chinese characters are left to the pairs (``chinese_pairs``)."""
    return _terms([w for w in _WORD.findall(text.lower()) if not _CJK.search(w)])


def chinese_pairs(text: str) -> frozenset[str]:
    """The character pairs of the Chinese part of a query, question and function words cut out."""
    return query_terms(text).pairs if _CJK.search(text) else frozenset()


def _terms(words: Sequence[str]) -> set[str]:
    # Distinct words first: each is stemmed once, however often it occurs.
    return {_stem(w) for w in set(words) if w not in _STOP and len(w) > 1}


@functools.lru_cache(maxsize=8192)
def _content_view(content: str) -> tuple[frozenset[str], str, int]:
    """A candidate's stemmed terms, its words joined by single spaces with a space at each end (to find whole
    names in), and how many words it has. Cached: the same memories are candidates of search after search, and
    this was most of a rerank's time."""
    words = _WORD.findall(content.lower())
    return frozenset(_terms(words)), " " + " ".join(words) + " ", len(words)


def length_factor(words: int, free: int) -> float:
    """The share of its word coverage a candidate of ``words`` words keeps: all of it up to ``free`` words, then
    ``sqrt(free / words)`` (0 ``free``: always all)."""
    return min(1.0, (free / words) ** 0.5) if free and words else 1.0


def _term_weights(
    terms: set[str],
    pairs: frozenset[str],
    candidates: Sequence[Candidate],
    views: Sequence[tuple[frozenset[str], str, int]],
    rare: bool,
) -> dict[str, float]:
    """Each query term's weight in the coverage: 1, or with ``rare`` its rarity among the candidates,
    ``log((n + 1) / (holding + 0.5))``: a word every candidate holds (the name of the person the whole conversation
    is about) tells none of them apart, a word few hold does."""
    if not rare:
        return dict.fromkeys([*terms, *pairs], 1.0)
    n = len(candidates)
    out = {t: sum(t in v[0] for v in views) for t in terms} | {p: sum(p in c.content for c in candidates) for p in pairs}
    return {t: math.log((n + 1) / (holding + 0.5)) for t, holding in out.items()}


class LocalReranker:
    name = "local"

    def __init__(
        self,
        term_weight: float = 0.5,
        entity_weight: float = 0.25,
        length_free: int = 60,
        best_channel_weight: float = 2.0,
        rare_terms: bool = True,
    ) -> None:
        self.term_weight = term_weight
        self.entity_weight = entity_weight
        self.length_free = length_free
        self.best_channel_weight = best_channel_weight
        self.rare_terms = rare_terms

    def scores(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
        if not candidates:
            return []
        terms = content_terms(query)
        pairs = chinese_pairs(query)
        names = set(entities.extract(query))  # the entity channel's rules, so both see the same names
        views = [_content_view(c.content) for c in candidates]
        weights = _term_weights(terms, pairs, candidates, views, self.rare_terms)
        asked = sum(weights.values())
        bases = [c.fused_score + self.best_channel_weight * c.best_channel for c in candidates]
        best = max(bases) or 1.0
        out = []
        for c, base, (content_words, text, length) in zip(candidates, bases, views, strict=True):
            found = sum(w for t, w in weights.items() if (t in content_words if t in terms else t in c.content))
            covered = found / asked * length_factor(length, self.length_free) if asked else 0.0
            # A name counts when the candidate's words contain it whole (multi-word names too) or the writer gave it.
            given = {entities.key(e) for e in c.entities}
            named = sum(1 for n in names if n in given or f" {n} " in text) / len(names) if names else 0.0
            out.append(base / best + self.term_weight * covered + self.entity_weight * named)
        return out

    def close(self) -> None:
        pass
