"""A question about someone is answered by that person's own turns: the other speakers' turns lose places.

In a recorded conversation the other side's replies repeat the subject's words ("Getting your emerald earrings
appraised is a great idea...") and so match a question about it as well as the turn that states the fact, often
better: a user's fact is mostly said in passing, inside a turn about something else. On LongMemEval, for "How many
pieces of jewelry did I acquire?" seven of the first twelve hits were the assistant's replies, while three of the
user's turns that answer it sat at places 14-20. The same holds between two people: "When did Caroline go to the
support group?" is answered by Caroline's turns, and Melanie's replies to her echo the words.

So, after the rerank, when the question has a subject among the speakers of the candidates, each candidate turn
spoken by someone else moves down ``places`` places (hits keep their order among themselves). A question that needs
every relevant memory ("How many pieces of jewelry did I buy?", memhub/search/intent.py) moves them behind every
turn of the head that stays: its answer is spread over many of the subject's asides, and one echo placed among them
displaces one of them from the hits.

- a question in the first person ("I", "my") that does not address "you": the subject is the user, and turns of
  an assistant, bot or system speaker move down (the user's own name is not known; a question to the assistant
  about what it said, "What did you recommend?", is left alone);
- otherwise, a question that names exactly one of the candidates' speakers: the subject is that speaker.

Turns name their speaker the way recorded turns do ("[date] Caroline: ...", "user: ...";
memhub/curation/preferences.py). Memories that name none are never moved, nor is anything past the head that
hydration read. Chosen on LoCoMo conversations 1-5, checked on 6-10 and on LongMemEval (docs/benchmarks.md,
"Eighth round": 10 places gave the best @10 on conversations 1-5; "Eleventh round": the whole head for
aggregation questions).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from memhub.core.model import MemoryRecord
from memhub.curation.preferences import NOT_PEOPLE, speaker_of
from memhub.search.fusion import Fused
from memhub.search.query import Understood

_NON_WORD = re.compile(r"[\W_]+")


def demote_other_speakers(
    fused: Sequence[Fused], records: Mapping[str, MemoryRecord], asked: Understood, places: int
) -> tuple[list[Fused], frozenset[str]]:
    """``fused`` with the turns of speakers other than the question's subject ``places`` places further down (behind
    every turn that stays, for an aggregation question), and the ids of the turns moved down (for explain's
    placement)."""
    if places <= 0:
        return list(fused), frozenset()
    said_by = {f.id: speaker_of(records[f.id].content)[0] for f in fused if f.id in records}
    others = _others(asked, set(said_by.values()) - {""})
    if others is None:
        return list(fused), frozenset()
    moved = frozenset(mid for mid, speaker in said_by.items() if speaker in others)
    if asked.intent.aggregation:
        places = len(fused)  # past the last candidate: behind every turn that stays
    key = {f.id: i + (places if f.id in moved else 0) for i, f in enumerate(fused)}
    return sorted(fused, key=lambda f: key[f.id]), moved  # stable: equal keys keep their order


def _others(asked: Understood, speakers: set[str]) -> frozenset[str] | None:
    """The speakers whose turns move down for the question, or None when it has no subject among ``speakers``."""
    if asked.intent.about_the_asker:
        machines = frozenset(s for s in speakers if s in NOT_PEOPLE)
        return machines or None
    question = asked.query.text
    words = _words(question)
    named = [s for s in speakers if s not in NOT_PEOPLE and _names(question, words, s)]
    if len(named) != 1:
        return None
    return frozenset(s for s in speakers if s != named[0])


def _words(text: str) -> str:
    """``text`` lowercased with every run of non-word characters one space, padded with one on each side."""
    return " " + _NON_WORD.sub(" ", text.lower()).strip() + " "


def _names(question: str, words: str, speaker: str) -> bool:
    # Whole words for names in Latin letters ("Jon" is not in "Jonathan", "O'Brien" is in "O'Brien's"), compared
    # as text rather than as a pattern built per speaker: labels come from stored text, a compiled pattern each
    # would churn the regex cache. CJK names have no word boundaries.
    if speaker.isascii():
        return _words(speaker) in words
    return speaker in question
