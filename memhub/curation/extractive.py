"""The default summariser: extractive, deterministic, needing no model beyond the hub's embedder.

It copies the group's most central sentences and invents nothing:
- sentences are cut only at terminators, and one that leans on the sentence
  before it is kept with it (memhub/curation/sentences.py), so conditions
  ("if ...", "unless ...", "在……时") stay attached to what they qualify;
- centrality is a sentence's mean cosine similarity to the group's other
  sentences (the hub's embedding model): what the episodes keep coming back
  to. Sentences stating a condition get a small bonus, since a lesson is
  usually "in situation X, Y worked"; near-copies of a chosen sentence are
  skipped;
- each chosen sentence becomes one line, in time order, with the episode's
  speaker label ("Caroline: ") when the episode has one and its date (from
  occurred_at, unless the episode's text starts with its own bracketed
  date), so names and dates survive even when the sentence came from the
  middle of an episode.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from memhub.core.model import Kind, MemoryRecord
from memhub.core.validation import MAX_CONTENT_CHARS
from memhub.curation.consolidation_model import Group
from memhub.curation.sentences import has_condition, split
from memhub.embedding import Embedder, embed_bulk

SUMMARISER_ID = "extractive-v1"
ON_TOPIC = 0.5
"""The most central sentence that states a condition is always kept when its centrality is at least this share
of the most central sentence's: a lesson is "in situation X, Y worked", and the plain sentences around it tend
to be more central only because they repeat the topic's words (a deploy session, MiniLM: the "If the build cache
is cold, ..." sentence 0.44 against 0.57 for the most central)."""
REDUNDANT = 0.92
"""Cosine above which a sentence repeats one already chosen."""
MIN_WORDS, MIN_CJK_CHARS = 5, 6
"""Shorter sentences ("That's really sweet.", "谢谢！") carry no lesson; used only when nothing longer exists.
Questions neither: they state nothing (on LoCoMo they were a third of the chosen lines before this rule)."""
# "[1:56 pm on 8 May, 2023] Caroline: ..." or "Caroline: ...": a label copied onto every sentence taken from the episode.
_PREFIX = re.compile(r"^(\[[^\]\n]{1,80}\]\s*)?(?:([^\s:\[\]][^:\n]{0,40}?):\s+)?")


@dataclass(frozen=True)
class _Sentence:
    source: int
    position: int
    text: str
    """As shown: the episode's label, then the sentence."""
    body: str
    """What is embedded and scored: the sentence alone."""
    substantial: bool


def _label_split(content: str) -> tuple[str, str, str]:
    """(the bracketed label, the speaker, the text after both) of an episode's content."""
    match = _PREFIX.match(content)
    bracket, speaker = (match.group(1) or "", match.group(2) or "") if match else ("", "")
    if speaker and len(speaker.split()) > 4:  # "The reason we moved: ..." is a sentence, not a speaker
        speaker = ""
    body = content[len(bracket) :]
    if speaker:
        body = body[body.index(":") + 1 :].lstrip()
    return bracket, speaker, body


def _label(record: MemoryRecord) -> tuple[str, str]:
    """(label to show before each sentence of the episode, the episode's text after its label)."""
    bracket, speaker, body = _label_split(record.content)
    date = bracket.strip() if bracket else f"[{record.occurred_at.date().isoformat()}]"
    return f"{date} {speaker + ': ' if speaker else ''}", body


def _substantial(body: str) -> bool:
    if body.rstrip("\"'”’)） ").endswith(("?", "？")):
        return False
    cjk = sum(1 for ch in body if "\u4e00" <= ch <= "\u9fff")
    return cjk >= MIN_CJK_CHARS or len(body.split()) >= MIN_WORDS


def episode_body(content: str) -> str:
    """An episode's text without its leading "[date] Speaker: " label (what clustering compares: labels shared by
    every turn of a conversation would make all of them look alike)."""
    return _label_split(content)[2]


def sentences_of(group: Group) -> list[_Sentence]:
    out = []
    for i, record in enumerate(group.sources):
        label, body = _label(record)
        for j, sentence in enumerate(split(body)):
            out.append(_Sentence(i, j, label + sentence, sentence, _substantial(sentence)))
    return out


class ExtractiveSummariser:
    """The most central sentences of a group, whole, in time order, one per line."""

    id = SUMMARISER_ID

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder

    def summarise(self, group: Group, kind: Kind, max_sentences: int) -> str | None:
        candidates = sentences_of(group)
        substantial = [s for s in candidates if s.substantial]
        # Only short ones ("Thanks!"): still the episodes' own words, better than an empty lesson.
        candidates = substantial or candidates
        if not candidates:
            return None
        vectors = embed_bulk(self._embedder, [s.body for s in candidates])
        chosen = choose(candidates, vectors, _how_many(len(candidates), max_sentences))
        return "\n".join(
            f"- {candidates[i].text}" for i in sorted(chosen, key=lambda i: (candidates[i].source, candidates[i].position))
        )


def _how_many(sentences: int, max_sentences: int) -> int:
    """About the square root of the group's sentences: a handful for a session, never more than asked."""
    return max(1, min(max_sentences, math.ceil(math.sqrt(sentences))))


def choose(candidates: list[_Sentence], vectors: np.ndarray, count: int) -> list[int]:
    """Indexes of up to ``count`` sentences, most central first, skipping near-copies and what would not fit."""
    n = len(candidates)
    similarity = vectors @ vectors.T
    centrality = (similarity.sum(axis=1) - 1.0) / (n - 1) if n > 1 else np.ones(1)
    order = sorted(range(n), key=lambda i: (-float(centrality[i]), i))  # ties: the earlier sentence
    best = float(centrality[order[0]])
    conditional = [i for i in order if has_condition(candidates[i].body) and float(centrality[i]) >= ON_TOPIC * best]
    chosen: list[int] = []
    used = -1  # no newline before the first line
    for i in conditional[:1] + order:
        if len(chosen) == count:
            break
        if i in chosen or any(similarity[i, j] > REDUNDANT for j in chosen):
            continue
        size = len(candidates[i].text) + 3  # "- " and the newline
        if used + size > MAX_CONTENT_CHARS:
            continue  # never cut a sentence: a lower-ranked shorter one may still fit
        chosen.append(i)
        used += size
    return chosen
