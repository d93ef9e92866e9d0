"""Preferences, habits and self-descriptions in a conversation turn, by rules (English and Chinese, no model).

What users ask most and a memory hub finds least is "what would I like?": the turn that said it ("As an
aspiring stand-up comedian...", "I've been experimenting with turbinado sugar", "小雨不喝咖啡") rarely shares
words with the later question ("Can you recommend a show for tonight?"). The write gate therefore draws from
every episodic turn it keeps the sentences in which someone states what they like, use, do habitually or are,
and stores each as a ``preference`` memory derived_from the turn (memhub/core/extracted_facts.py), which the
search's preference channel looks at first for recommendation and advice questions (memhub/search/preference.py).

The rules are deliberately narrow: a first-person statement of the speaker (or a third-person one about a
named person or "the user"), not a question, not an assistant's turn (an assistant saying "I recommend" states
nothing about the user). At most ``MAX_PER_TURN`` statements per turn, each cut to ``MAX_CHARS``.

The subject they are about is the speaker, kept as an entity (``speaker_entity``), not as a subject key: a rule
cannot tell whether two statements are about the same thing ("I love it" about a film and about a dish), so a
key would retire real preferences by superseding, and writes of the same statement by concurrent writers
aborted on it (seen in bench_throughput: 'melanie/preference/love-it'). A repeated statement is folded into
its earlier copy by the content-hash dedup instead. The optional LLM extractor may add keyed ones.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from memhub.core.model import Kind, MemoryType

MAX_PER_TURN = 2
MAX_CHARS = 300
MAX_TURN_CHARS = 4_000
"""Only the head of a long turn is read: statements about oneself come first, and the rules stay cheap."""

# "[date] Caroline: ...", "user: ...", "Assistant: ..." - the speaker of a recorded turn.
# A label ends at a colon followed by a space ("user: ...", not "10:30").
_SPEAKER = re.compile(r"^\s*(?:\[[^\]]{1,60}\]\s*)?([^\W\d_][\w .'-]{0,40}?)\s*[:：]\s+", re.UNICODE)
# Chinese puts no space after the colon ("小雨：我...", an ASCII colon after NFKC). Without the space a colon also
# ends a heading ("我最喜欢的作家：村上春树"), so only a name-like label counts there: one to four Chinese
# characters, none of them a pronoun or the possessive 的.
_CJK_SPEAKER = re.compile(r"^\s*(?:\[[^\]]{1,60}\]\s*)?([\u4e00-\u9fff]{1,4})[:：](?=[\u3400-\u4dbf\u4e00-\u9fff])")
_NOT_IN_NAMES = frozenset("我你您她他它的们")
# Speaker labels of machines, not people: their turns state nothing about the user (also memhub/search/speakers.py).
NOT_PEOPLE = frozenset("assistant ai bot system model agent tool 助手 系统".split())

_EN_VERB = (
    r"(?:really |absolutely |just |also |usually |always |often |mostly |generally |still |totally |kind of |sort of |recently |"
    r"regularly |sometimes |now |currently )*"
)
_EN_FIRST_PERSON = re.compile(
    r"\b(?:"
    rf"i(?:'m| am) {_EN_VERB}(?:a |an )?(?:big |huge )?(?:fan of|into|obsessed with|allergic to|vegan|vegetarian|lactose|"
    r"(?:an? )?(?:aspiring |professional |amateur |avid |freelance |beginner |new |self-taught )?"
    r"[a-z-]+(?:er|or|ist|ian|ant|ent|ee)\b)"
    rf"|i {_EN_VERB}(?:love|like|enjoy|prefer|adore|hate|dislike|detest|can't stand|cannot stand|don't like|do not like|"
    r"don't eat|don't drink|never eat|never drink|avoid|use|own|play|practi[cs]e|collect|cook|bake|watch|listen to|read|"
    r"go to|work as|work in|work at|live in|drive|wear|tend to|have been|started|bought|got|tried|made|joined|switched to)"
    rf"|i(?:'m| am) {_EN_VERB}(?:looking to|planning to|trying to|thinking about|thinking of|learning|training for|working on|"
    r"working as|working in|working at|studying|living in|based in|getting into|saving for|a member of|part of)"
    r"|i(?:'ve| have) been (?:using|trying|experimenting with|learning|playing|practi[cs]ing|cooking|baking|collecting|"
    r"watching|reading|working on|getting into|into|going to|taking)"
    r"|i(?:'ve| have) (?:always |recently |just )?(?:loved|liked|enjoyed|preferred|hated|owned|used|bought|started|got|gotten)"
    r"|my (?:favou?rite|go-to|usual|preferred)\b"
    r"|\bmy (?:new |old |current |own )?[A-Z][\w-]+"
    r"|as an? (?:[a-z-]+ ){0,3}(?:[a-z-]+(?:er|or|ist|ian|ant|ent|ee)|fan|user|owner|parent|mom|dad|student|enthusiast|lover)\b"
    r")",
    re.IGNORECASE,
)
_EN_THIRD_PERSON = re.compile(
    r"\b(?:the user|user|[A-Z][a-z]+)(?:'s favou?rite\b| (?:really |usually |always |often )*"
    r"(?:loves|likes|enjoys|prefers|adores|hates|dislikes|is allergic to|is a fan of|is vegan|is vegetarian|never eats|"
    r"never drinks|doesn't eat|doesn't drink|does not eat|does not drink)\b)"
)
_ZH = re.compile(
    r"(?:我|她|他|用户)?(?:很|非常|特别|最|比较|一直|总是|经常|每天|每周|平时|从来)?"
    r"(?:喜欢|爱吃|爱喝|爱看|爱玩|讨厌|不喜欢|受不了|偏爱|偏好|习惯|不吃|不喝|只喝|只吃|吃素|过敏|是.{0,6}迷|最爱|爱好是|常去|在学|在用)"
)
_ZH_SELF = re.compile(r"我是(?:一名|一个|一位)?.{1,12}(?:师|员|家|生|者|手|迷|控|党)")
_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")


@dataclass(frozen=True)
class Statement:
    speaker: str
    """Lowercase speaker label ("user", "caroline"), or "" when the turn names none."""
    text: str


def speaker_of(turn: str) -> tuple[str, str]:
    """(speaker label lowercased, the text after it); ("", turn) when the turn names no speaker."""
    match = _SPEAKER.match(turn)
    if match is None:
        match = _CJK_SPEAKER.match(turn)
        if match is None or not _NOT_IN_NAMES.isdisjoint(match.group(1)):
            return "", turn
    return match.group(1).strip().lower(), turn[match.end() :]


def statements(turn: str) -> list[Statement]:
    """The preference, habit and self-description sentences of one turn, at most MAX_PER_TURN."""
    speaker, body = speaker_of(unicodedata.normalize("NFKC", turn[:MAX_TURN_CHARS]))
    if speaker in NOT_PEOPLE:
        return []
    out: list[Statement] = []
    for match in _SENTENCE.finditer(body):
        sentence = match.group(0).strip()
        if len(sentence) < 6 or sentence.endswith(("?", "？")):
            continue  # a question states nothing about the asker's preferences on its own
        # The Chinese rules need Chinese characters: an ASCII sentence (most of them) skips their scans.
        if (
            _EN_FIRST_PERSON.search(sentence)
            or _EN_THIRD_PERSON.search(sentence)
            or (not sentence.isascii() and (_ZH.search(sentence) or _ZH_SELF.search(sentence)))
        ):
            out.append(Statement(speaker, sentence[:MAX_CHARS]))
            if len(out) == MAX_PER_TURN:
                break
    return out


def content_of(statement: Statement) -> str:
    """The preference memory's content: the statement, saying whose it is, so it reads on its own (and never
    equals its turn, which would fold it into the turn as an exact duplicate)."""
    return f"Preference of {statement.speaker}: {statement.text}" if statement.speaker else f"Preference: {statement.text}"


def speaker_entity(statement: Statement) -> tuple[str, ...]:
    """The speaker as an entity of the preference memory (the graph and entity channels then link it)."""
    return (statement.speaker,) if statement.speaker and statement.speaker not in ("user", "me") else ()


@dataclass(frozen=True)
class RuleFact:
    """What the rules draw from a turn, in the shape of the LLM extractor's facts (memhub/curation/fact_extraction.py)."""

    content: str
    kind: Kind
    type: MemoryType
    importance: int
    subject_key: str | None
    entities: tuple[str, ...] = ()


def facts(turn: str) -> list[RuleFact]:
    return [RuleFact(content_of(s), Kind.SEMANTIC, MemoryType.PREFERENCE, 3, None, speaker_entity(s)) for s in statements(turn)]


def facts_many(turns: Sequence[str]) -> list[list[RuleFact]]:
    return [facts(t) for t in turns]
