"""The write filter's default rules and the secret scan, English and Chinese, one case per rule and its near misses."""

from __future__ import annotations

import random

import pytest

from memhub.curation import secret_scan, write_filter
from memhub.curation.write_filter import decide


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("ok", "small_talk"),
        ("OK!!", "small_talk"),
        ("ＯＫ", "small_talk"),
        ("ok, thanks!", "small_talk"),
        ("Thanks a lot :)", "small_talk"),
        ("Hi there!", "small_talk"),
        ("See ya! Take care!", "small_talk"),
        ("好的", "small_talk"),
        ("好的谢谢", "small_talk"),
        ("嗯嗯，收到", "small_talk"),
        ("晚安！", "small_talk"),
        ("👍👍", "no_words"),
        ("...!?", "no_words"),
        ("let me check", "chatter"),
        ("Let me check...", "chatter"),
        ("Working on it.", "chatter"),
        ("one moment please", "chatter"),
        ("稍等一下", "chatter"),
        ("正在处理中…", "chatter"),
        ("让我想想", "chatter"),
        ("a", "too_short"),
        ("42", "too_short"),
        ("猫", "too_short"),
    ],
)
def test_dropped(text: str, rule: str) -> None:
    decision = decide(text)
    assert not decision.keep and decision.rule == rule


@pytest.mark.parametrize(
    "text",
    [
        "ERR-4312",  # short, but a code carries a fact
        "Deploys freeze on Fridays",
        "ok, the deploy failed because the cache ran out of memory",  # starts like an acknowledgement
        "good morning team, the build is green",
        "Yes, every Sunday!",  # an answer: its question gives it meaning
        "Let me check the runbook: step 4 restarts the cache",
        "我是素食者",
        "好的，明天上午十点开会",
        "稍等，服务器的地址是 10.0.0.7",
    ],
)
def test_kept(text: str) -> None:
    decision = decide(text)
    assert decision.keep and not decision.remember


@pytest.mark.parametrize(
    "text",
    [
        "Remember that Alice prefers tea",
        "Please remember: deploys freeze on Fridays",
        "Don't forget that the VPN certificate expires on Monday",
        "note: staging runs Postgres 16",
        "记住：周五不发布",
        "记住我不吃辣",
        "请记下，报销截止日期是每月25号",
        "别忘了周一交周报",
    ],
)
def test_remember_instructions(text: str) -> None:
    assert decide(text).remember


@pytest.mark.parametrize(
    "text",
    [
        "Remember that epic block in Game 7? Unreal.",  # a question about the past
        "Remember, it takes time to form a bond",  # advice to a person
        "Remember Jon, just do it!",
        "记得我们上次去的那家店吗？",
    ],
)
def test_conversation_that_mentions_remembering_is_not_an_instruction(text: str) -> None:
    decision = decide(text)
    assert decision.keep and not decision.remember


@pytest.mark.parametrize(
    ("text", "kinds", "redacted"),
    [
        ("db password=hunter2xyz for staging", ["password"], "db password=[REDACTED:password] for staging"),
        ("数据库密码是 abc12345，别外传", ["password"], "数据库密码是 [REDACTED:password]，别外传"),
        ("key sk-proj-abcdefghijklmnopqrstuvwxyz123456 works", ["openai_key"], "key [REDACTED:openai_key] works"),
        ("AKIAIOSFODNN7EXAMPLE is the key", ["aws_access_key"], "[REDACTED:aws_access_key] is the key"),
        ("card 4111 1111 1111 1111 exp 12/29", ["card_number"], "card [REDACTED:card_number] exp 12/29"),
        (
            "t eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U end",
            ["jwt"],
            "t [REDACTED:jwt] end",
        ),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----\nafter",
            ["private_key"],
            "[REDACTED:private_key]\nafter",
        ),
        ("ghp_" + "a1" * 18 + " in CI", ["github_token"], "[REDACTED:github_token] in CI"),
    ],
)
def test_secrets_found_and_redacted(text: str, kinds: list[str], redacted: str) -> None:
    hits = secret_scan.find(text)
    assert [h.kind for h in hits] == kinds
    assert secret_scan.redact(text, hits) == redacted


@pytest.mark.parametrize(
    "text",
    [
        "password: ******",
        "set PASSWORD=$DB_PASS in the environment",
        "The password policy requires 12 characters",
        "order 1234567890123 shipped",  # 13 digits, fails the Luhn check
        "call 415-555-0132",
        "4111 1111 1111 1112",  # one digit off a valid card
    ],
)
def test_not_secrets(text: str) -> None:
    assert secret_scan.find(text) == []


def _covered_to_the_end(units: list[str], phrases: frozenset[str], joiner: str, longest: int = 5) -> bool:
    """The small-talk cover without its early stop: every position, to the end."""
    reachable = [True] + [False] * len(units)
    for end in range(1, len(units) + 1):
        reachable[end] = any(
            reachable[end - size] and joiner.join(units[end - size : end]) in phrases for size in range(1, min(longest, end) + 1)
        )
    return bool(units) and reachable[-1]


@pytest.mark.parametrize(
    ("phrases", "joiner", "noise"),
    [
        (write_filter._SMALL_TALK_PHRASES_EN, " ", ["deploy", "friday", "42"]),
        (write_filter._SMALL_TALK_ZH, "", list("部署周五花生")),
    ],
    ids=["english", "chinese"],
)
def test_the_small_talk_cover_stops_early_with_the_answer_it_would_reach_at_the_end(
    phrases: frozenset[str], joiner: str, noise: list[str]
) -> None:
    # Texts made of the phrases' own units, with a unit of noise now and then and long runs of phrases: the early
    # stop (no phrase can bridge the gap) must never change whether the whole text splits into phrases.
    rng = random.Random(25)
    pieces = [list(p) if joiner == "" else p.split(" ") for p in sorted(phrases)]
    covered = 0
    for _ in range(3000):
        units: list[str] = []
        for _ in range(rng.randrange(1, 12)):
            units += rng.choice(noise).split() if rng.random() < 0.1 else rng.choice(pieces)
        expected = _covered_to_the_end(units, phrases, joiner)
        assert write_filter._covered(units, phrases, joiner) == expected, units
        covered += expected
    assert 300 < covered < 2700  # both answers were exercised
