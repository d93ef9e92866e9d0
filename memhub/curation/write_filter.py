"""The write filter's default rules: what is not worth remembering, and what the writer asked to keep.

Every memory passes these before it is stored (memhub/curation/README in
DESIGN.md's lifecycle section). They need no model and are deliberately
conservative: a rule drops a memory only when the WHOLE text is small talk,
an acknowledgement, process chatter, symbols without words, or too short to
carry a fact. A long message that starts with "ok," is kept; so is a short
code such as "ERR-4312". A dropped memory is not an error: the write result
says `filtered` and names the rule, and the writer may repeat it with
`force` when its policy allows.

An explicit instruction to remember ("remember that...", "don't forget:",
"记住……", "别忘了……") marks the memory as one the writer wants kept: when
the writer set neither kind nor importance it is stored as a semantic
memory of importance 5.

English and Chinese rules both; matching ignores case, width (NFKC) and
punctuation, so "OK!!", "ok." and "ＯＫ" are the same acknowledgement.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# Whole-message acknowledgements and small talk, in English; several may follow each other ("ok, thanks!").
_SMALL_TALK_PHRASES_EN = frozenset(
    {
        "ok",
        "okay",
        "k",
        "kk",
        "okie",
        "alright",
        "all right",
        "sure",
        "yes",
        "yeah",
        "yep",
        "yup",
        "no",
        "nope",
        "nah",
        "fine",
        "cool",
        "great",
        "nice",
        "good",
        "awesome",
        "perfect",
        "excellent",
        "wonderful",
        "lovely",
        "amazing",
        "thanks",
        "thank you",
        "thank you so much",
        "thanks a lot",
        "many thanks",
        "thx",
        "ty",
        "tysm",
        "cheers",
        "much appreciated",
        "appreciate it",
        "got it",
        "gotcha",
        "understood",
        "noted",
        "roger",
        "roger that",
        "copy that",
        "will do",
        "sounds good",
        "sounds great",
        "makes sense",
        "no problem",
        "np",
        "no worries",
        "you're welcome",
        "youre welcome",
        "my pleasure",
        "hi",
        "hello",
        "hey",
        "hiya",
        "howdy",
        "hi there",
        "hello there",
        "hey there",
        "good morning",
        "good afternoon",
        "good evening",
        "good night",
        "bye",
        "goodbye",
        "bye bye",
        "see you",
        "see ya",
        "see you later",
        "later",
        "ttyl",
        "take care",
        "have a nice day",
        "have a good day",
        "lol",
        "haha",
        "hahaha",
        "hehe",
        "lmao",
        "wow",
        "oh",
        "ah",
        "hmm",
        "hm",
        "uh",
        "um",
        "oops",
        "great job",
        "good job",
        "well done",
        "nice work",
        "of course",
        "sure thing",
        "i see",
        "right",
    }
)
_SMALL_TALK_ZH = frozenset(
    {
        "好",
        "好的",
        "好滴",
        "好吧",
        "好啊",
        "行",
        "行吧",
        "可以",
        "嗯",
        "嗯嗯",
        "恩",
        "哦",
        "噢",
        "啊",
        "对",
        "对的",
        "是",
        "是的",
        "没错",
        "谢谢",
        "谢谢你",
        "谢谢您",
        "多谢",
        "感谢",
        "非常感谢",
        "谢啦",
        "收到",
        "明白",
        "明白了",
        "知道了",
        "了解",
        "懂了",
        "没问题",
        "不客气",
        "不用谢",
        "你好",
        "您好",
        "大家好",
        "早",
        "早上好",
        "下午好",
        "晚上好",
        "晚安",
        "再见",
        "拜拜",
        "回头见",
        "哈哈",
        "哈哈哈",
        "呵呵",
        "嘿嘿",
        "辛苦了",
        "太好了",
        "棒",
        "很棒",
        "不错",
    }
)
# Whole-message process chatter: the writer narrating its own work, not a fact about the world.
_CHATTER_EN = re.compile(
    r"^(?:(?:ok|okay|sure|alright|hmm|one sec|hold on)\s+)?(?:"
    r"let me (?:check|see|look|think|look into (?:it|that|this)|take a look|find out|search|try(?: again)?)"
    r"|(?:i'?m |i am )?(?:checking|looking into it|looking|searching|thinking|working on it|on it|processing|loading)"
    r"|i'?ll (?:check|look into (?:it|that|this)|get back to you|take a look|try again)"
    r"|(?:one|just a) (?:moment|sec|second|minute)(?: please)?|give me a (?:moment|sec|second|minute)"
    r"|hold on|please wait|wait a (?:moment|sec|second|minute)|still working(?: on it)?|almost done|done|retrying"
    r")$"
)
_CHATTER_ZH = re.compile(
    r"^(?:好的?|嗯)?(?:稍等(?:一下|片刻)?|请稍[等候]|等一下|等等|我看看|我看一下|我查一下|我查查|让我(?:看看|想想|查一下|查查|确认一下)"
    r"|正在(?:处理|查询|思考|搜索|加载|查找)(?:中)?|处理中|思考中|加载中|马上|马上就好|快好了|我去看看|我试试|再试一次)$"
)
# An instruction to the memory itself: "remember that ...", "keep in mind: ...", "记住……". Narrow on purpose:
# "Remember, it takes time" (advice) and "Remember that epic block in Game 7?" (a question) are conversation.
_REMEMBER_EN = re.compile(
    r"^\s*(?:please\s+)?(?:remember|memori[sz]e|keep in mind|bear in mind|note|don'?t forget|do not forget|never forget)"
    r"(?:\s+that\b|\s*:)\s*\S",
    re.IGNORECASE,
)
_REMEMBER_ZH = re.compile(
    r"^\s*(?:请|麻烦)?(?:你)?(?:记住|记下|记一下|别忘了|不要忘了|不要忘记|别忘记|牢记|务必记住)[:：,，]?\s*\S"
)
_SENTENCE_END = re.compile(r"[.!?。！？\n]")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")

_NOT_WORD_ASCII = re.compile(r"[^a-z0-9' ]")

MIN_CHARS = 3
"""Fewer letters and digits than this carry no fact ("a", "42" alone); codes like "ERR-4312" pass."""


@dataclass(frozen=True)
class FilterDecision:
    keep: bool
    rule: str = ""
    """The rule that fired: small_talk, chatter, no_words, too_short; or remember_instruction on a kept memory."""

    @property
    def remember(self) -> bool:
        return self.keep and self.rule == "remember_instruction"


KEEP = FilterDecision(True)
RULES = ("small_talk", "chatter", "no_words", "too_short")


def normalise(text: str) -> str:
    """NFKC, lower case, one space between words, and no punctuation or symbols at all."""
    if text.isascii():
        # Every write passes here: plain ASCII (most text) needs neither NFKC nor a per-character test.
        return " ".join(_NOT_WORD_ASCII.sub(" ", text.lower()).split())
    folded = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    kept = "".join(ch if (ch.isalnum() or ch in "' ") else " " for ch in folded)
    return " ".join(kept.split())


def decide(content: str) -> FilterDecision:
    """Keep or drop ``content`` by the default rules (see the module docstring)."""
    if _is_remember_instruction(unicodedata.normalize("NFKC", content)):
        return FilterDecision(True, "remember_instruction")
    text = normalise(content)
    if not text:
        return FilterDecision(False, "no_words")
    if _all_small_talk(text):
        return FilterDecision(False, "small_talk")
    if _CHATTER_EN.match(text) or _CHATTER_ZH.match(text.replace(" ", "")):
        return FilterDecision(False, "chatter")
    # normalise() leaves letters, digits, apostrophes and spaces only, so the letters and digits are counted
    # without a pass over every character (which every write paid for, however long its text).
    if len(text) - text.count(" ") - text.count("'") < MIN_CHARS and not _CJK.search(text):
        return FilterDecision(False, "too_short")
    joined = text.replace(" ", "")
    if len(joined) < 2 and len(_CJK.findall(joined)) == len(joined):
        return FilterDecision(False, "too_short")  # one Chinese character alone
    return KEEP


def _is_remember_instruction(text: str) -> bool:
    if not (_REMEMBER_EN.match(text) or _REMEMBER_ZH.match(text)):
        return False
    end = _SENTENCE_END.search(text)
    return end is None or end.group(0) not in "?？"  # "Remember that day we ...?" asks, it does not instruct


def _all_small_talk(text: str) -> bool:
    """True when the text is nothing but acknowledgements and greetings, in English or Chinese."""
    words = text.split()
    return _covered(words, _SMALL_TALK_PHRASES_EN, joiner=" ") or _covered(list(text.replace(" ", "")), _SMALL_TALK_ZH, joiner="")


def _covered(units: list[str], phrases: frozenset[str], joiner: str, longest: int = 5) -> bool:
    """Whether ``units`` split entirely into phrases (longest match first, at most ``longest`` units each)."""
    if not units:
        return False
    reachable = [True] + [False] * len(units)  # reachable[i]: units[:i] is a sequence of phrases
    last = 0  # the last reachable position
    for end in range(1, len(units) + 1):
        if end - last > longest:
            # No phrase can bridge the gap: the rest is not small talk. Every write passes here, and without this
            # stop a long turn (or a long text taken character by character for Chinese) was scanned to its end.
            return False
        for size in range(1, min(longest, end) + 1):
            if reachable[end - size] and joiner.join(units[end - size : end]) in phrases:
                reachable[end] = True
                last = end
                break
    return reachable[-1]
