"""Near-duplicates: the same memory written again with a missing period, other case, or a filler word more.

A write is a near-duplicate of an active memory in the same namespace when
both hold:

1. their embeddings are close (cosine >= ``cosine``, default 0.85): found by a
   dense search in that namespace;
2. they say the same thing in the same content words: equal after case,
   width, punctuation, a plural "s" and function words ("the", "is", "的",
   "了") are set aside.

The second test is what keeps different facts apart: "Deploys freeze on
Fridays" and "Deploys freeze on Mondays" are close in embedding space
(one word differs) but not in content words, so both are kept. The price is
that a paraphrase with other words ("Deployments are frozen on Fridays")
is kept too: a merge that loses a fact is worse than a duplicate line.

Which memories are checked: semantic and procedural ones (facts do not
repeat; a second copy only crowds the results), and episodic ones only
against the same session (the same sentence said on two days is two
episodes). Measured on LoCoMo (bench/bench_near_dup.py): see docs/concepts/curation.md.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from memhub.errors import StartupError

_EN_FUNCTION_WORDS = frozenset(
    """a an the is are was were be been being am it its this that these those there here to of in on at by for
    with from as and or but so do does did please just really very also too then now again still ok okay
    i we you he she they me us him her them my our your his their""".split()
)
_ZH_FUNCTION_CHARS = frozenset("的了是在和就都而及与着或吧呢吗啊呀嘛么也还又再很请")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True)
class NearDupConfig:
    enabled: bool = True
    cosine: float = 0.85
    """Minimum cosine similarity of the two embeddings (MiniLM, normalised)."""
    candidates: int = 5
    """Nearest active memories in the namespace compared with each write."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> NearDupConfig:
        """MEMHUB_NEAR_DUP=on|off, MEMHUB_NEAR_DUP_COSINE=0.5..1.0."""
        raw = env.get("MEMHUB_NEAR_DUP", "on").strip().lower()
        if raw not in ("on", "off"):
            raise StartupError(f"MEMHUB_NEAR_DUP={raw!r}: use on or off")
        cosine = env.get("MEMHUB_NEAR_DUP_COSINE", "").strip()
        try:
            value = float(cosine) if cosine else cls.cosine
        except ValueError:
            raise StartupError(f"MEMHUB_NEAR_DUP_COSINE={cosine!r} is not a number; use 0.5 to 1.0 (default 0.85)") from None
        if not 0.5 <= value <= 1.0:
            raise StartupError(f"MEMHUB_NEAR_DUP_COSINE={cosine!r} is out of range; use 0.5 to 1.0 (default 0.85)")
        return cls(enabled=raw == "on", cosine=value)


def content_words(text: str) -> Counter[str]:
    """The words that carry the text's meaning, as a multiset; Chinese as characters."""
    folded = unicodedata.normalize("NFKC", text).casefold().replace("’", "'")
    words: Counter[str] = Counter()
    for token in re.findall(r"[^\W_]+(?:'[^\W_]+)*", folded):
        if _CJK.search(token):
            # No spaces to split on: compare characters, without the particles that only change tone.
            words.update(ch for ch in token if ch not in _ZH_FUNCTION_CHARS and not ch.isspace())
            continue
        if token in _EN_FUNCTION_WORDS:
            continue
        if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
            token = token[:-1]  # "fridays"/"friday", "deploys"/"deploy"
        words[token] += 1
    return words


def same_content(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` have the same content words (and at least one)."""
    wa = content_words(a)
    return bool(wa) and wa == content_words(b)
