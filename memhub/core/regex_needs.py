"""The literal text a regular expression's every match must contain: a cheap test that rules a pattern out.

Python's ``re`` has no multi-pattern prefilter, so a rule set of a few dozen case-insensitive patterns that start
with a word alternation ("\\b(?:ignore|disregard|...)") is scanned position by position, once per pattern: the
instruction rules (memhub/core/instruction_rules.py) cost ~190 microseconds a text, a fifth of a write's Python
time. Most texts contain none of the words a pattern needs, and ``in`` on a string is a fast C search. This
reads what a pattern needs from the pattern itself (Python's own parser, ``re._parser``), so the needs cannot
drift from the rule, and are necessary by construction: a text that lacks them cannot match.

``needs(pattern)`` returns groups of literals; every match contains at least one literal of every group. Only
what is certain is kept: a run of literal characters, a group, an alternation whose every branch needs
something, a repetition of at least once. Anything else (classes, optional parts, lookarounds) breaks a run and
adds nothing. The literals are lower case; test them against ``foldable(text)``.

Case: under ``re.IGNORECASE`` a pattern's literal matches any character whose simple lower case is the same,
plus four non-ASCII characters re treats as ASCII letters (``_RE_ASCII_FOLDS``, checked against re itself in
tests/test_regex_needs.py). Cased non-ASCII literals (where lower-casing rules differ between ``str.lower`` and
re, e.g. final sigma) end a run instead of joining it.
"""

from __future__ import annotations

import re
import re._parser as sre_parse  # the parser re itself uses (Python >= 3.11)
from collections.abc import Iterable
from re._constants import ATOMIC_GROUP, BRANCH, LITERAL, MAX_REPEAT, MIN_REPEAT, POSSESSIVE_REPEAT, SUBPATTERN

Needs = tuple[frozenset[str], ...]

#: Non-ASCII characters that re.IGNORECASE matches against an ASCII letter; str.lower() maps none of them onto it
#: (U+0130 becomes "i" plus a combining dot, U+0131 and U+017F stay). Kelvin sign's lower case is "k" already.
_RE_ASCII_FOLDS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})

_REPEATS = (MAX_REPEAT, MIN_REPEAT, POSSESSIVE_REPEAT)


def foldable(text: str) -> str:
    """``text`` as the literals of ``needs`` are tested against: lower case, re's ASCII folds applied."""
    return text.translate(_RE_ASCII_FOLDS).lower()


def needs(pattern: re.Pattern[str]) -> Needs:
    """Groups of literals (lower case): every match of ``pattern`` contains one literal of each group."""
    return tuple(_sequence(sre_parse.parse(pattern.pattern, pattern.flags)))


def may_match(needed: Needs, folded: str) -> bool:
    """False when ``folded`` (from ``foldable``) lacks a group of ``needed``: the pattern cannot match it."""
    for group in needed:
        if not contains_any(folded, group):
            return False
    return True


def contains_any(text: str, literals: Iterable[str]) -> bool:
    """Whether one of ``literals`` occurs in ``text``."""
    # A plain loop: this runs for every rule on every write, and any() over a generator cost twice as much here.
    for literal in literals:
        if literal in text:
            return True
    return False


def _sequence(items) -> list[frozenset[str]]:  # noqa: ANN001 - a parsed pattern (re._parser.SubPattern)
    groups: list[frozenset[str]] = []
    run: list[str] = []

    def end_run() -> None:
        if run:
            groups.append(frozenset(["".join(run)]))
            run.clear()

    for op, arg in items:
        if op is LITERAL and _foldable_literal(chr(arg)):
            run.append(chr(arg).lower())
            continue
        end_run()
        if op is SUBPATTERN:
            groups.extend(_sequence(arg[-1]))
        elif op is ATOMIC_GROUP:
            groups.extend(_sequence(arg))
        elif op in _REPEATS and arg[0] >= 1:
            groups.extend(_sequence(arg[2]))
        elif op is BRANCH:
            either = _branches(arg[1])
            if either is not None:
                groups.append(either)
    end_run()
    return groups


def _branches(branches) -> frozenset[str] | None:  # noqa: ANN001 - the alternatives of a BRANCH
    """One group for an alternation: each branch's most selective group, joined; None if a branch needs nothing."""
    joined: set[str] = set()
    for branch in branches:
        groups = _sequence(branch)
        if not groups:
            return None
        joined |= _most_selective(groups)
    return frozenset(joined)


def _most_selective(groups: list[frozenset[str]]) -> frozenset[str]:
    # Longer literals occur in fewer texts; among equals, a smaller group.
    return max(groups, key=lambda g: (min(len(s) for s in g), -len(g)))


def _foldable_literal(ch: str) -> bool:
    return ch.isascii() or ch.lower() == ch.upper()  # ASCII, or a character without case (CJK, punctuation)
