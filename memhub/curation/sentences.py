"""Sentences for the extractive summariser, cut so that conditions stay attached to what they qualify.

A sentence ends only at a terminator (. ! ? and the Chinese 。！？), never at
a comma or semicolon: "If the cache is cold, the deploy takes 40 minutes"
and "在高峰期时，连接池要调到200" stay whole. A sentence that leans on the
one before it ("Otherwise ...", "In that case ...", "所以……") is joined to it,
so a condition stated in the previous sentence is not lost when only the
second one is chosen. Abbreviations ("e.g.", "Dr.") and numbers ("v2.7",
"3.5 GB") do not end sentences.
"""

from __future__ import annotations

import re

# An English terminator ends a sentence when whitespace follows; a Chinese one ends it at once.
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+|(?<=[。！？])[”’」』）]*\s*")
_ABBREVIATIONS = frozenset("e.g i.e etc vs mr mrs ms dr prof st no fig approx inc ltd jr sr a.m p.m u.s cf al".split())
# Sentences that only make sense with the one before: their condition or subject is there.
_LEANS_BACK = re.compile(
    r"^(?:otherwise|in that case|in this case|then|so|that's why|that is why|because of (?:this|that)|"
    r"but|however|unless|except)\b",
    re.IGNORECASE,
)
_CHINESE_LEANS_BACK = ("否则", "所以", "因此", "于是", "那么", "这样", "但是", "不过", "除非")
MAX_SENTENCE_CHARS = 2_000
"""A longer run without a terminator is kept whole too (cutting it could cut a condition); this only
bounds how much of it counts as one sentence for scoring, never what is copied."""

CONDITION_MARKERS = re.compile(
    r"\b(?:if|when|whenever|unless|only if|as long as|provided that|in case|otherwise)\b"
    r"|如果|假如|要是|只要|除非|一旦|否则|当.{0,20}?时|在.{0,30}?时|的时候",
    re.IGNORECASE,
)
"""Words that state a condition. Not "before", "after" or "once": they mostly say when, not under which condition."""


def _ends_with_abbreviation(text: str) -> bool:
    word = re.search(r"([A-Za-z.]+)\.$", text)
    return word is not None and word.group(1).lower().rstrip(".") in _ABBREVIATIONS


def _leans_back(sentence: str) -> bool:
    return _LEANS_BACK.match(sentence) is not None or sentence.startswith(_CHINESE_LEANS_BACK)


def split(text: str) -> list[str]:
    """The sentences of ``text`` in order, whitespace trimmed; a sentence leaning on the previous one is
    joined to it. Never drops or changes a character other than the whitespace between sentences."""
    pieces: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        candidate = text[start : match.start()].strip()
        if not candidate or _ends_with_abbreviation(candidate):
            continue
        # Keep the terminator and any closing quote with the sentence (the match begins after the terminator).
        end = match.end()
        pieces.append(text[start:end].strip())
        start = end
    tail = text[start:].strip()
    if tail:
        pieces.append(tail)
    out: list[str] = []
    for piece in pieces:
        if out and _leans_back(piece):
            out[-1] = f"{out[-1]} {piece}" if not _is_chinese(out[-1]) else out[-1] + piece
        else:
            out.append(piece)
    return out


def has_condition(sentence: str) -> bool:
    """True when the sentence states a condition ("if", "when", "unless", "如果", "在……时", ...)."""
    return CONDITION_MARKERS.search(sentence) is not None


def _is_chinese(text: str) -> bool:
    return text.endswith(("。", "！", "？")) or (bool(text) and "\u4e00" <= text[-1] <= "\u9fff")
