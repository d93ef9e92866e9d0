"""The literals a pattern needs (memhub/core/regex_needs.py) rule out only texts the pattern cannot match.

The instruction rules skip a pattern when the text lacks what it needs; these tests hold the rules with that
shortcut to the plain regex search, over the injection battery and generated variants of it (case changes,
re's case folds, characters of every Unicode category inserted), and check the parts: what ``needs`` reads from
small patterns, and the fold table against re itself over every code point.
"""

from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import pytest

from memhub.core import instruction_rules
from memhub.core.regex_needs import _RE_ASCII_FOLDS, foldable, may_match, needs

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from injection_battery import CHINESE, ENGLISH, SUBTLE  # noqa: E402
from unicode_classes import by_category  # noqa: E402


def _groups(pattern: str, flags: int = 0) -> list[set[str]]:
    return [set(g) for g in needs(re.compile(pattern, flags))]


def test_a_literal_run_groups_and_alternations_are_needed() -> None:
    assert _groups(r"ab(?:c|de)f") == [{"ab"}, {"c", "de"}, {"f"}]
    assert _groups(r"\bignore\s+(?:every|any)\s+rules\b", re.I) == [{"ignore"}, {"every", "any"}, {"rules"}]
    # re's parser takes a shared first character out of an alternation: what is left is still needed.
    assert _groups(r"(?:all|any)") == [{"a"}, {"ll", "ny"}]
    assert _groups(r"x(?:abc)+y") == [{"x"}, {"abc"}, {"y"}]


def test_optional_and_uncertain_parts_add_nothing() -> None:
    assert _groups(r"ab?c") == [{"a"}, {"c"}]  # the run ends at the optional b
    assert _groups(r"(?:abc)*d{0,2}[xyz]\w+") == []
    assert _groups(r"(?=secret)\d+") == []  # a lookahead is not consumed: nothing is certain
    assert _groups(r"foo|\d+") == []  # one branch needs no literal, so the alternation needs none


def test_an_alternation_takes_each_branch_s_most_selective_group() -> None:
    assert _groups(r"a\s+longer|b\s+cc") == [{"longer", "cc"}]


def test_literals_are_lower_case_and_cased_non_ascii_ones_end_a_run() -> None:
    assert _groups(r"SYSTEM:", re.I) == [{"system:"}]
    assert _groups(r"abΣcd") == [{"ab"}, {"cd"}]  # str.lower and re disagree on sigma: left out
    assert _groups(r"忽略指令") == [{"忽略指令"}]  # no case: kept


def test_the_fold_table_is_every_non_ascii_character_re_matches_to_an_ascii_letter() -> None:
    any_letter = re.compile("[a-z]", re.IGNORECASE)
    found = {}
    for code in range(0x80, sys.maxunicode + 1):
        ch = chr(code)
        if any_letter.fullmatch(ch):
            found[ch] = [c for c in "abcdefghijklmnopqrstuvwxyz" if re.fullmatch(c, ch, re.IGNORECASE)]
    assert found == {chr(code): [letter] for code, letter in _RE_ASCII_FOLDS.items()}
    assert foldable("\u0130GNORE ſystem \u212aey") == "ignore system key"


def test_may_match_needs_one_literal_of_every_group() -> None:
    groups = (frozenset({"ignore", "forget"}), frozenset({"rules"}))
    assert may_match(groups, "please forget the rules")
    assert not may_match(groups, "please forget the plan")
    assert may_match((), "anything")


def _plain_matches(text: str) -> tuple[str, ...]:
    normal = instruction_rules._normalised(text)
    return tuple(rule.name for rule in instruction_rules.RULES if rule.pattern.search(normal))


_FOLDS = {"i": ["\u0130", "\u0131"], "s": ["\u017f"], "k": ["\u212a"]}


def _variants(text: str, rng: random.Random, count: int) -> list[str]:
    firsts = [chars[0] for chars in by_category().values()]  # one character of each general category
    out = []
    for _ in range(count):
        chars = []
        for ch in text:
            roll = rng.random()
            if ch.lower() in _FOLDS and roll < 0.3:
                chars.append(rng.choice(_FOLDS[ch.lower()]))
            elif roll < 0.6:
                chars.append(ch.swapcase())
            else:
                chars.append(ch)
            if rng.random() < 0.03:
                chars.append(rng.choice(firsts))
        out.append("".join(chars))
    return out


@pytest.mark.parametrize(
    ("battery", "caught"), [(ENGLISH, True), (CHINESE, True), (SUBTLE, False)], ids=["english", "chinese", "subtle"]
)
def test_the_rules_with_their_needs_match_exactly_what_the_plain_patterns_match(battery: tuple[str, ...], caught: bool) -> None:
    rng = random.Random(sum(map(ord, battery[0])))
    texts = [t for text in battery for t in (text, *_variants(text, rng, 40))]
    differing = [t for t in texts if instruction_rules.matching_rules(t) != _plain_matches(t)]
    assert not differing, differing[:5]
    if caught:  # the rules catch this battery at all (else the comparison above would prove little)
        assert sum(bool(_plain_matches(t)) for t in texts) > len(texts) // 4
    assert all(instruction_rules.is_instruction_like(t) == bool(_plain_matches(t)) for t in texts)
