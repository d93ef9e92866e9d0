"""What kind of question a query is, by rules (English and Chinese, no model): it decides which stages help.

- ``recommendation``: a request for a recommendation or advice ("Can you suggest a show for tonight?", "Any
  tips for my kitchen?", "推荐一本书"). The turn that answers it states a preference and rarely shares the
  question's words, so the preference channel looks at preference memories first (memhub/search/preference.py).
- ``aggregation``: a question that needs every relevant memory, not the best one ("How many plants did I buy?",
  "in total", "across", "一共"). The search then looks deeper and spreads its hits over sessions
  (memhub/search/diversity.py).
- ``about_the_asker``: a question in the first person that does not address "you" ("Which earrings did I buy?",
  not "What did you tell me?"). Its subject is the user, so the assistant's turns give way to the user's
  (memhub/search/speakers.py).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# A request addressed to the assistant, for the asker: "can you recommend", "any tips", "what should I". Questions
# about advice given ("What book did Caroline recommend?", "remind me what you suggested") are not.
_RECOMMEND_EN = re.compile(
    r"\b(?:(?:can|could|would|will) you (?:\w+ )?(?:recommend|suggest|advise|propose)|recommend (?:me|some|a|an|any)|"
    r"(?:any|some|a few|got any|have any) (?:good |new |fresh |other )?(?:\w+ )?"
    r"(?:recommendations|suggestions|advice|tips|ideas|pointers)|"
    r"(?:ideas|tips|advice|suggestions) (?:for|on) (?:what|how|my|me)|what should i|what would i|what could i|"
    r"should i (?:try|get|buy|watch|read|cook|make|go|wear|use|pick|choose|wait)|"
    r"help me (?:choose|pick|decide|find|come up)|which (?:\w+ )?(?:should|would) i|what do you think i|"
    r"i(?:'m| am) (?:trying to decide|not sure (?:which|what|whether)))\b",
    re.IGNORECASE,
)
_ASKS_ABOUT_PAST_ADVICE = re.compile(
    r"\b(?:remind me|you (?:recommended|suggested|mentioned|told)|did \w+ (?:recommend|suggest))\b", re.I
)
_RECOMMEND_ZH = re.compile(r"推荐|建议|适合我|我该|我应该|帮我(?:选|挑|找|想)|有什么好|有啥好|选哪|买哪|吃什么好|去哪")
_AGGREGATE_EN = re.compile(
    r"\b(?:how many|how much|how often|in total|total|altogether|combined|all (?:the|of the|my)|every (?:time|one)|across|"
    r"count|number of|list (?:all|every)|sum of|so far|different \w+s\b)",
    re.IGNORECASE,
)
_AGGREGATE_ZH = re.compile(r"多少|几次|几个|几种|几本|几家|一共|总共|总计|所有|全部|哪些")
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|i'm|i've|i'd|i'll)\b|我", re.IGNORECASE)
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|you're|you've|you'd|you'll)\b|你|您", re.IGNORECASE)


@dataclass(frozen=True)
class Intent:
    recommendation: bool = False
    aggregation: bool = False
    about_the_asker: bool = False


def of(text: str) -> Intent:
    normal = unicodedata.normalize("NFKC", text)
    return Intent(
        recommendation=bool(_RECOMMEND_EN.search(normal) or _RECOMMEND_ZH.search(normal))
        and not _ASKS_ABOUT_PAST_ADVICE.search(normal),
        aggregation=bool(_AGGREGATE_EN.search(normal) or _AGGREGATE_ZH.search(normal)),
        about_the_asker=bool(_FIRST_PERSON.search(normal)) and not _SECOND_PERSON.search(normal),
    )
