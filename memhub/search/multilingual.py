"""Stage 8b, a second opinion for text the English model cannot read: the head re-ranked with a multilingual model.

The dense channel's model (all-MiniLM-L6-v2) reads English. A Chinese question over Chinese memories gets a
dense list close to noise, and the keyword channel alone cannot see that 坚果 (nuts) asks about 花生 (peanuts).
So when the question is written in a script other than Latin, or a quarter of the head is, the hydrated head
(the first ``depth`` candidates, the ones the rerank sees) is embedded with USE multilingual v3
(memhub/embedding/multilingual_use.py) and its cosine order is fused into the ranking as one more list:
each head candidate gains ``weight / (k + its place in that order)``, the same reciprocal-rank form and
constant the channels were fused with. Candidates past the head keep their score. When the question itself is
in such a script, the dense channel's shares leave every score: its order is noise there.

Only the head: the model sees what the channels found, it finds nothing new (a second index of 512-d vectors
would; not built). Questions and memories in Latin script never reach the model, so an English fleet's
results and costs are unchanged and the model is never loaded. Texts are cached by their digest (the indexer's
PassageVectorCache), so a memory, or a repeated question, is embedded once per hub while it stays in the cache.

Measured on bench/chinese_set.py (docs/benchmarks.md, recall section, "Ninth round"): fused top-1/top-5 of 28
questions 11/18 -> 12/20-21; the weight is 1, a channel's, not tuned on that set. On English the same model
ranks far below MiniLM (LoCoMo, same round), which is why it never joins English searches.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import unicodedata
from collections.abc import Sequence

import numpy as np
from opentelemetry import trace

from memhub import telemetry
from memhub.core.model import Channel, ChannelHit
from memhub.embedding import Embedder, EmbeddingError, PassageVectorCache
from memhub.search.fusion import Fused
from memhub.search.hydration import Hydrated

log = logging.getLogger(__name__)
_tracer = telemetry.tracer(__name__)

#: Share of the head's memories in another script that calls for the second opinion on a Latin-script question.
HEAD_SHARE = 0.25
#: Passages whose vectors are kept (2 KB each at 512 dimensions: about 8 MB).
CACHE_CAPACITY = 4_096
#: Characters of a text looked at to tell its script: enough for a sentence, bounded for a 16k-character memory.
SCRIPT_PREFIX = 400
#: Characters of a question or memory the model reads, as the dense model reads 256 word pieces (about as many
#: Chinese characters). Its cost grows with the text: 4 ms of CPU for 100 Chinese characters, 82 ms for 2,000,
#: 1.2 s (and 150 MB) for 16,000, so a head of long memories written by one agent would stall everyone's search.
MODEL_PREFIX = 256


# Characters outside the Latin script's blocks: Basic Latin, Latin-1, Latin Extended-A/B, IPA and spacing modifiers
# (to U+036F), Phonetic Extensions and Latin Extended Additional, Latin Extended-C, -D and -E, the Latin ligatures
# (ﬁ), the full-width Latin letters, and the mathematical alphanumerics (𝐀, 𝑥): styled letters, not a language.
_BEYOND_LATIN = re.compile(
    r"[^\u0000-\u036f\u1d00-\u1eff\u2c60-\u2c7f\ua720-\ua7ff\uab30-\uab6f\ufb00-\ufb06\uff21-\uff5a\U0001d400-\U0001d7ff]"
)


def other_script(text: str) -> bool:
    """Whether ``text`` (its first SCRIPT_PREFIX characters) holds a letter outside the Latin script.

    Letters only: digits, punctuation, symbols, modifier letters and emoji say nothing of the language. Every
    search asks this of its head, so Latin text must cost next to nothing: ASCII is answered by one C call, and
    otherwise only the characters beyond the Latin blocks are looked at (a loop over every character cost an English
    search 2 ms under the profiler, bench/search_profile.py).
    """
    head = text[:SCRIPT_PREFIX]
    if head.isascii():
        return False
    for match in _BEYOND_LATIN.finditer(head):
        ch = match.group()
        if ch.isalpha() and unicodedata.category(ch) != "Lm":
            return True
    return False


class SecondOpinion:
    """The multilingual model behind a bounded cache of passage vectors (the indexer's kind); thread-safe."""

    def __init__(self, model: Embedder, capacity: int = CACHE_CAPACITY) -> None:
        self._vectors = PassageVectorCache(model, capacity)
        self._logged = False

    def failed(self, exc: EmbeddingError) -> None:
        """Log a failure once: every non-Latin search would repeat it (each reply says it is degraded)."""
        if not self._logged:
            self._logged = True
            log.error("the multilingual second opinion failed; such searches keep the channels' order: %s", exc)

    def similarities(self, question: str, passages: Sequence[str]) -> np.ndarray:
        """Cosine of ``question`` with each passage. The question and the passages not cached go to the model in one
        call (a second call cost 1.3 ms more of CPU), and the question is cached like a passage: USE embeds both
        alike (no query or passage prefix, unlike e5), and a repeated question then costs no model call."""
        vectors = self._vectors.embed_passages_now([question[:MODEL_PREFIX], *(p[:MODEL_PREFIX] for p in passages)])
        return np.asarray(vectors[1:] @ vectors[0], dtype=np.float32)


FAILED = "the multilingual second opinion failed; hits are in the channels' order"


def rescore(
    found: Hydrated, question: str, opinion: SecondOpinion | None, weight: float, depth: int, k: int
) -> tuple[Hydrated, str]:
    """``found`` with its first ``depth`` candidates scored by the multilingual model's order as well, and
    everything sorted again, and why the answer is degraded ("" if it is not). Unchanged when the texts are in
    Latin script or the stage is off; unchanged and degraded (FAILED) when the model fails: the channels' ranking
    stands, the reply says so, and the log says why (once per hub: a broken model stays broken until a restart).

    When the question itself is in another script, the dense channel's shares are taken out of every score (its
    hits stay in explain with a contribution of 0): its model cannot read the question, and its order is noise
    that outvoted the keyword channel and this one."""
    head = found.fused[:depth]
    if opinion is None or weight <= 0 or not head:
        return found, ""
    texts = [found.records[f.id].content for f in head]
    foreign_question = other_script(question)
    if not (foreign_question or sum(map(other_script, texts)) >= HEAD_SHARE * len(texts)):
        return found, ""
    with _tracer.start_as_current_span("multilingual", attributes={"memhub.multilingual.candidates": len(head)}):
        try:
            sims = opinion.similarities(question, texts)
        except EmbeddingError as exc:
            trace.get_current_span().set_attribute("memhub.multilingual.failed", True)
            opinion.failed(exc)
            return found, FAILED
    order = sorted(range(len(head)), key=lambda i: -float(sims[i]))  # stable: ties keep the fused order
    hit = {
        head[i].id: ChannelHit(Channel.MULTILINGUAL, place, float(sims[i]), weight / (k + place))
        for place, i in enumerate(order, start=1)
    }
    raised = [_rescored(f, hit.get(f.id), foreign_question) for f in found.fused]
    raised.sort(key=lambda f: -f.score)  # stable
    return dataclasses.replace(found, fused=raised), ""


def _rescored(f: Fused, hit: ChannelHit | None, without_dense: bool) -> Fused:
    channels = list(f.channels)
    score = f.score
    if without_dense:
        score -= sum(c.contribution for c in channels if c.channel is Channel.DENSE)
        channels = [dataclasses.replace(c, contribution=0.0) if c.channel is Channel.DENSE else c for c in channels]
    if hit is not None:
        score += hit.contribution
        channels.append(hit)
    return dataclasses.replace(f, score=score, channels=tuple(channels))
