"""Entities in text, by rules: names and capitalised phrases, quoted strings, codes and versions.

The same rules run on a memory when it is written and on a query when it is
searched, so the entity channel matches what both name. Keys are lowercased
with whitespace collapsed; the writer's own ``entities`` are kept as given
and join the keys too.

What counts (and why):
- capitalised words and runs of them ("Melanie", "New York", "Acme Corp"),
  except function and calendar words (months and weekdays are the time
  channel's business), and a lone capitalised word that only starts a
  sentence (unless it labels a speaker, "Caroline: ...", or owns, "Caroline's");
- ALL-CAPS acronyms and codes with digits ("LGBTQ", "ERR-4312", "S3", "v2.1.0");
- a capitalised product followed by a version number ("Postgres 15");
- quoted strings of 2 to 60 characters ("the 'blue book'").
Chinese names are not extracted here: jieba's word segmentation in the
keyword channel already makes them matchable words.
"""

from __future__ import annotations

import functools
import re

MAX_ENTITIES = 32
MAX_ENTITY_CHARS = 64

_CALENDAR = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday "
    "today yesterday tomorrow am pm".split()
)
# Words that are capitalised only because they start a sentence or are the pronoun I.
_FUNCTION = frozenset(
    "i i'm i've i'll i'd a an the this that these those it it's its he she they we you my your our their his her "
    "yes no ok okay oh hey hi hello thanks thank wow so but and or if when what where who why how which did do does "
    "is are was were be been have has had can could would should will just also there here then now well really "
    "sure great good nice awesome cool sounds that's what's let let's maybe not all any some one me us them "
    "after before during while because since though although as at by for from in into of on to with about".split()
)
_CAP_RUN = re.compile(r"\b([A-Z][\w'’&.-]*(?:\s+(?:of|the|de|von|van|and|&)?\s*[A-Z][\w'’&.-]*)*)")
_CODE = re.compile(r"\b(?:[A-Z]{2,}[\w.-]*|[A-Za-z]+-\d[\w.-]*|v?\d+(?:\.\d+){1,3}|[A-Za-z]+\d+[A-Za-z\d]*)\b")
_VERSIONED = re.compile(r"\b([A-Z][A-Za-z]+)\s+(\d+(?:\.\d+)*)\b")
_QUOTED = re.compile(r"[\"“«]([^\"”»]{2,60})[\"”»]|(?<!\w)['‘]([^'’]{2,60})['’](?!\w)")


def key(entity: str) -> str:
    """The matching key of an entity: lowercased, whitespace collapsed, trimmed of punctuation at the ends."""
    return " ".join(entity.lower().split()).strip(".,;:!?'’\"-")[:MAX_ENTITY_CHARS]


def _name_word(k: str) -> bool:
    return k not in _FUNCTION and k not in _CALENDAR


def _sentence_initial(text: str, start: int) -> bool:
    # Walks back over the whitespace instead of stripping a copy of everything before ``start``: a copy per
    # capitalised word made a long turn's extraction grow with the square of its length.
    i = start
    while i > 0 and text[i - 1].isspace():
        i -= 1
    return i == 0 or text[i - 1] in ".!?:;\"“'‘([]\n"


def _labelled(text: str, end: int) -> bool:
    """A speaker label ("Caroline: ...") or a possessive ("Caroline's"): a name even at a sentence's start."""
    return text[end : end + 1] == ":" or text[end : end + 2] in ("'s", "’s")


def extract(text: str) -> list[str]:
    """Entity keys found in ``text``, in order of first appearance, at most MAX_ENTITIES."""
    return list(_extract(text))


# Cached: judging relevance asks this of every hit's content in every search (the same hits recur), and the rules
# cost a few regex passes per text.
@functools.lru_cache(maxsize=8192)
def _extract(text: str) -> tuple[str, ...]:
    found: dict[str, None] = {}

    def add(raw: str) -> None:
        k = key(raw)
        if len(k) >= 2 and k not in _CALENDAR and k not in _FUNCTION and not k.isdigit():
            found.setdefault(k)

    for m in _QUOTED.finditer(text):
        add(m.group(1) or m.group(2))
    for m in _VERSIONED.finditer(text):
        add(f"{m.group(1)} {m.group(2)}")
    for m in _CODE.finditer(text):
        add(m.group(0))
    for m in _CAP_RUN.finditer(text):
        words = [w for w in m.group(1).split() if _name_word(key(w))]
        if not words:
            continue
        first_kept = words[0] == m.group(1).split()[0]
        if len(words) == 1 and first_kept and _sentence_initial(text, m.start()) and not _labelled(text, m.end()):
            continue  # "Talked with Bob": capitalised for the sentence, not for a name
        if len(words) > 1:
            add(" ".join(words))
        for w in words:  # each name of a run alone too: "Melanie Smith" also matches "Melanie"
            add(w)
    return tuple(found)[:MAX_ENTITIES]


def keys_for(content: str, given: tuple[str, ...] | list[str] = ()) -> list[str]:
    """The entity keys stored with a memory: the writer's entities first, then those found in its content."""
    out: dict[str, None] = {}
    for e in given:
        k = key(e)
        if k:
            out.setdefault(k)
    for k in extract(content):
        out.setdefault(k)
    return list(out)[: MAX_ENTITIES + len(given)]
