"""The words of a query that carry its meaning, and how many of them a memory contains.

Model-free, so it means the same whatever the embedder: the share of the
query's content words (English stop and question words left out, a light
suffix stemming on both sides: "deploys" matches "deploy") found in a
memory, and for Chinese the share of the query's character pairs found in
it (question and function words such as 什么, 哪, 吗 cut out first, so
小雨对什么过敏 is 小雨 雨对 过敏). No word segmenter is needed for that, and
a pair inside a longer word still matches: 花生 in 小雨对花生过敏.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

# Question, function and filler words: they say what is asked, not about what.
_ENGLISH_STOP = frozenset(
    "a an and are as at be been being but by can could did do does doing for from had has have having he her hers "
    "him his how i if in into is it its itself me my no not of on or our ours she so such than that the their theirs "
    "them then there these they this those to too us was we were what when where which while who whom whose why will "
    "with would you your yours yes am any all some about after before again also just very get got go going went "
    "ever much many more most other own same s t don should now ll re ve d m o y".split()
)
# Longest first, so 为什么 is cut before 什么. Single characters only where they are never part of a
# content word (过 is a particle in 去过 but half of 过敏; 在, 有, 对 likewise), so few of them.
_CHINESE_STOP = sorted(
    "为什么 什么 怎么 怎样 哪里 哪儿 哪个 哪些 哪种 哪天 哪一 多少 是不是 有没有 "
    "谁 哪 吗 呢 吧 啊 呀 的 了 她 他 它 我 你 您 们".split(),
    key=len,
    reverse=True,
)
_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_]+(?:['’-][^\W_]+)*")
_CJK_RUN = re.compile(rf"[{_CJK}]+")
_CHINESE_STOP_RE = re.compile("|".join(map(re.escape, _CHINESE_STOP)))


@dataclass(frozen=True)
class QueryTerms:
    words: frozenset[str]
    """Stemmed content words of the query's non-Chinese text."""
    pairs: frozenset[str]
    """Character pairs (single characters for one-character runs) of its Chinese text."""

    @property
    def count(self) -> int:
        return len(self.words) + len(self.pairs)

    @property
    def mostly_chinese(self) -> bool:
        """More Chinese pairs than other words: an English-only embedder cannot judge this query."""
        return len(self.pairs) > len(self.words)


def is_stop_word(word: str) -> bool:
    """An English question, function or filler word (lowercase)."""
    return word in _ENGLISH_STOP


# Pure functions of their text, cached: judging a search's hits stemmed every word of every hit three times
# (coverage of all terms, of the topic terms, missing names), a fifth of a busy hub's Python time at 10k memories;
# hits and their vocabulary repeat from search to search, so lookups answer most calls (bench/bench_throughput.py).
@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light English stemmer, the same on both sides: plural, -ing, -ed, possessive."""
    w = word.replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    for suffix, keep in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3 and not (suffix == "s" and w.endswith("ss")):
            return w[: -len(suffix)] + keep
    return w


def _normal(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def query_terms(text: str) -> QueryTerms:
    """The content words and Chinese character pairs of ``text``."""
    words: set[str] = set()
    pairs: set[str] = set()
    for token in _TOKEN.findall(_normal(text)):
        if _CJK_RUN.fullmatch(token):
            for segment in _CHINESE_STOP_RE.split(token):
                if len(segment) == 1:
                    pairs.add(segment)
                pairs.update(segment[i : i + 2] for i in range(len(segment) - 1))
        elif token not in _ENGLISH_STOP:
            words.add(stem(token))
    return QueryTerms(frozenset(words), frozenset(pairs))


@functools.lru_cache(maxsize=8192)
def word_set(text: str) -> frozenset[str]:
    """The stemmed words of ``text``'s non-Chinese parts (stop words included)."""
    return frozenset(stem(t) for t in _TOKEN.findall(_normal(text)) if not _CJK_RUN.fullmatch(t))


def coverage(terms: QueryTerms, content: str) -> float:
    """The share of the query's terms found in ``content`` (0 when the query has none)."""
    if not terms.count:
        return 0.0
    found = sum(1 for p in terms.pairs if p in _normal(content))
    if terms.words:
        found += len(terms.words & word_set(content))
    return found / terms.count
