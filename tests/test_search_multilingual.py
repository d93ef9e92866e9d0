"""The multilingual second opinion: text in a script the dense model cannot read is ranked by a model that can."""

from __future__ import annotations

import re
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from conftest import Stack
from test_cli import memhub

from memhub.client import memory_input
from memhub.core.model import Channel, ChannelHit
from memhub.embedding import EmbeddingError, multilingual_use
from memhub.embedding.multilingual_use import MultilingualUSE
from memhub.search import multilingual
from memhub.search.fusion import Fused
from memhub.search.hydration import Hydrated
from memhub.v1 import memory_pb2 as pb

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from chinese_set import MEMORIES  # noqa: E402  (the benchmark's set: questions there paraphrase these)


@pytest.fixture(scope="module")
def model() -> MultilingualUSE:
    return MultilingualUSE()


class _Record:
    """The one field the stage reads of a MemoryRecord."""

    def __init__(self, content: str) -> None:
        self.content = content


class _Counting:
    """The real model, counting the texts it is given (to see what the cache spares it)."""

    def __init__(self, inner: MultilingualUSE) -> None:
        self.inner = inner
        self.model_id, self.dimension = inner.model_id, inner.dimension
        self.calls: list[list[str]] = []

    @property
    def texts(self) -> list[str]:
        return [t for call in self.calls for t in call]

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.embed(texts)

    def close(self) -> None:
        pass


def _found(texts: list[str], dense_first: bool = True) -> Hydrated:
    """Candidates in the given order, each found by the dense channel at that place."""
    fused = [
        Fused(f"m{i}", 1 / (61 + i), (ChannelHit(Channel.DENSE, i + 1, 0.5, 1 / (61 + i)),) if dense_first else ())
        for i in range(len(texts))
    ]
    return Hydrated(fused, {f"m{i}": _Record(t) for i, t in enumerate(texts)})  # type: ignore[misc]


# -- which text calls for it: generated over whole Unicode blocks, not examples --


def _letters(first: int, last: int) -> list[str]:
    """The block's letters, modifier letters (Lm: a length mark, the Arabic tatweel) aside: they name no language."""
    return [chr(cp) for cp in range(first, last + 1) if unicodedata.category(chr(cp)) in ("Lu", "Ll", "Lt", "Lo")]


LATIN_BLOCKS = [
    (0x0041, 0x024F),  # Basic Latin to Latin Extended-B
    (0x0250, 0x02AF),  # IPA
    (0x1D00, 0x1DBF),  # phonetic extensions
    (0x1E00, 0x1EFF),  # Latin Extended Additional
    (0x2C60, 0x2C7F),  # Latin Extended-C
    (0xA720, 0xA7FF),  # Latin Extended-D
    (0xAB30, 0xAB6F),  # Latin Extended-E
    (0xFB00, 0xFB06),  # ligatures (ﬁ)
    (0xFF21, 0xFF5A),  # full-width
    (0x1D400, 0x1D7FF),  # mathematical alphanumerics
]
OTHER_BLOCKS = {
    "Greek": (0x0370, 0x03FF),
    "Cyrillic": (0x0400, 0x04FF),
    "Hebrew": (0x0590, 0x05FF),
    "Arabic": (0x0600, 0x06FF),
    "Devanagari": (0x0900, 0x097F),
    "Thai": (0x0E00, 0x0E7F),
    "Hangul": (0xAC00, 0xD7A3),
    "Hiragana": (0x3040, 0x309F),
    "Katakana": (0x30A0, 0x30FF),
    "CJK": (0x4E00, 0x9FFF),
    "CJK extension A": (0x3400, 0x4DBF),
}


def test_every_latin_letter_and_every_non_letter_is_read_as_latin_script() -> None:
    latin = [ch for first, last in LATIN_BLOCKS for ch in _letters(first, last)]
    assert len(latin) > 500
    assert [ch for ch in latin if multilingual.other_script(f"I bought {ch} today")] == []
    # Digits, punctuation, symbols, modifier letters and emoji of the whole Basic Multilingual Plane and the
    # emoji blocks.
    others = [
        chr(cp)
        for cp in [*range(0x0000, 0xD800), *range(0xE000, 0x10000), *range(0x1F300, 0x1FAFF)]
        if unicodedata.category(chr(cp))[0] in "NPSZC" or unicodedata.category(chr(cp)) == "Lm"
    ]
    assert len(others) > 5000
    assert [ch for ch in others if multilingual.other_script(f"plain words {ch}")] == []


@pytest.mark.parametrize("script", sorted(OTHER_BLOCKS))
def test_every_letter_of_another_script_calls_for_it(script: str) -> None:
    letters = _letters(*OTHER_BLOCKS[script])
    assert letters
    assert [ch for ch in letters if not multilingual.other_script(f"plain words {ch}")] == []


def test_a_script_is_read_from_a_bounded_prefix_of_the_text() -> None:
    assert multilingual.other_script("a" * (multilingual.SCRIPT_PREFIX - 1) + "猫")
    assert not multilingual.other_script("a" * multilingual.SCRIPT_PREFIX + "猫")


# -- the stage on its own --


def test_a_chinese_paraphrase_rises_to_the_top(model: MultilingualUSE) -> None:
    texts = [m.text for m in MEMORIES[1:30]] + [MEMORIES[0].text]  # the peanut allergy last of the 30 the stage sees
    found, degraded = multilingual.rescore(_found(texts), "小雨不能吃哪种坚果？", multilingual.SecondOpinion(model), 1.0, 30, 60)
    assert degraded == ""
    head = [found.records[f.id].content for f in found.fused[:5]]
    assert MEMORIES[0].text in head
    # The dense channel cannot read the question: its shares are out of the scores, its hits stay for explain.
    for f in found.fused:
        dense = [c for c in f.channels if c.channel is Channel.DENSE]
        assert dense and dense[0].contribution == 0.0
        mine = [c for c in f.channels if c.channel is Channel.MULTILINGUAL]
        assert f.score == pytest.approx(sum(c.contribution for c in mine))
    assert sum(1 for f in found.fused if any(c.channel is Channel.MULTILINGUAL for c in f.channels)) == 30


OTHER_LANGUAGES = {
    "Russian": (
        [
            "Анна живёт в Торонто.",
            "У Анны есть рыжий кот.",
            "Анна бегает по воскресеньям.",
            "Анна не ест арахис: у неё аллергия.",
        ],
        "На какие орехи у Анны аллергия?",
    ),
    "Japanese": (
        [
            "アンナはトロントに住んでいます。",
            "アンナは茶色の猫を飼っています。",
            "アンナは日曜日の朝に走ります。",
            "アンナはピーナッツアレルギーです。",
        ],
        "アンナはどのナッツを食べられませんか？",
    ),
    "Korean": (
        ["안나는 토론토에 산다.", "안나는 고양이를 키운다.", "안나는 일요일 아침에 달린다.", "안나는 땅콩 알레르기가 있다."],
        "안나가 먹을 수 없는 견과류는?",
    ),
}


@pytest.mark.parametrize("language", sorted(OTHER_LANGUAGES))
def test_other_scripts_get_the_second_opinion_too(model: MultilingualUSE, language: str) -> None:
    texts, question = OTHER_LANGUAGES[language]  # the peanut allergy last: the channels' order put it there
    found, _ = multilingual.rescore(_found(texts), question, multilingual.SecondOpinion(model), 1.0, 30, 60)
    assert found.records[found.fused[0].id].content == texts[-1]


def test_an_english_question_over_chinese_memories_keeps_the_dense_channel(model: MultilingualUSE) -> None:
    texts = [m.text for m in MEMORIES[:12]]
    found, _ = multilingual.rescore(_found(texts), "Where did she study?", multilingual.SecondOpinion(model), 1.0, 30, 60)
    assert all(c.contribution > 0 for f in found.fused for c in f.channels)
    assert {c.channel for f in found.fused for c in f.channels} == {Channel.DENSE, Channel.MULTILINGUAL}


def test_latin_script_never_reaches_the_model() -> None:
    unloaded = MultilingualUSE()
    texts = ["user: I love hiking in the Alps.", "Zoë's café is in Ærø.", "assistant: 42 is the answer 🙂"]
    found = _found(texts)
    opinion = multilingual.SecondOpinion(unloaded)
    assert multilingual.rescore(found, "Where do I like to hike?", opinion, 1.0, 30, 60) == (found, "")
    assert not unloaded.loaded
    # A head where fewer than a quarter are in another script is left alone too.
    mixed = _found([*texts, "小雨对花生过敏"] + [f"note {i}" for i in range(10)])
    assert multilingual.rescore(mixed, "Where do I hike?", multilingual.SecondOpinion(unloaded), 1.0, 30, 60) == (mixed, "")
    assert not unloaded.loaded


def test_weight_zero_or_no_model_turns_it_off(model: MultilingualUSE) -> None:
    found = _found([m.text for m in MEMORIES[:5]])
    assert multilingual.rescore(found, "小雨怕什么？", multilingual.SecondOpinion(model), 0.0, 30, 60) == (found, "")
    assert multilingual.rescore(found, "小雨怕什么？", None, 1.0, 30, 60) == (found, "")


def test_only_the_head_is_embedded_in_one_call_and_each_text_once(model: MultilingualUSE) -> None:
    counting = _Counting(model)
    opinion = multilingual.SecondOpinion(counting)  # type: ignore[arg-type]
    texts = [m.text for m in MEMORIES[:12]]
    multilingual.rescore(_found(texts), "小雨怕什么？", opinion, 1.0, 5, 60)
    assert counting.calls == [["小雨怕什么？", *texts[:5]]]  # the question and the head, one model call
    multilingual.rescore(_found(texts), "小雨喝什么茶？", opinion, 1.0, 5, 60)
    assert counting.calls[1:] == [["小雨喝什么茶？"]]  # the passages came from the cache
    multilingual.rescore(_found(texts), "小雨喝什么茶？", opinion, 1.0, 12, 60)
    assert counting.calls[2:] == [texts[5:]]  # a repeated question too
    # Bounded: 8 entries at most, the least recently used pushed out.
    bounded = _Counting(model)
    small = multilingual.SecondOpinion(bounded, capacity=8)  # type: ignore[arg-type]
    for _ in range(2):
        multilingual.rescore(_found(texts), "小雨住在哪里？", small, 1.0, 12, 60)
    assert [len(call) for call in bounded.calls] == [13, 13 - 8]


def test_the_model_reads_a_bounded_prefix_of_long_texts(model: MultilingualUSE) -> None:
    # One agent's 16k-character memories in a head must not cost every search seconds of CPU (1.2 s each, measured).
    counting = _Counting(model)
    opinion = multilingual.SecondOpinion(counting)  # type: ignore[arg-type]
    long = "小雨对花生过敏。" * 2000
    opinion.similarities("小雨" * 1000, [long, "小雨养了一只猫。"])
    assert max(map(len, counting.texts)) == multilingual.MODEL_PREFIX
    assert counting.texts[1] == long[: multilingual.MODEL_PREFIX]


def test_the_cached_similarities_equal_the_fresh_ones(model: MultilingualUSE) -> None:
    texts = [m.text for m in MEMORIES[:6]]
    opinion = multilingual.SecondOpinion(model)
    first = opinion.similarities("小雨养了什么宠物？", texts)
    again = opinion.similarities("小雨养了什么宠物？", texts)
    assert np.allclose(first, again)
    assert np.allclose(first, model.embed(texts) @ model.embed(["小雨养了什么宠物？"])[0], atol=1e-5)


def test_a_model_that_fails_its_check_leaves_the_order_says_so_and_is_not_reread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real = multilingual_use.resources_dir()
    (tmp_path / "weights.npz").write_bytes((real / "weights.npz").read_bytes()[:1000])  # truncated
    (tmp_path / "sp.model").write_bytes((real / "sp.model").read_bytes())
    reads: list[Path] = []
    monkeypatch.setattr(multilingual_use, "resources_dir", lambda: reads.append(tmp_path) or tmp_path)
    broken = MultilingualUSE()
    with pytest.raises(EmbeddingError, match="failed its sha256 check"):
        broken.embed(["小雨"])
    opinion = multilingual.SecondOpinion(broken)
    found = _found([m.text for m in MEMORIES[:5]])
    for question in ("小雨怕什么？", "小雨喝什么茶？", "小雨住在哪里？"):
        assert multilingual.rescore(found, question, opinion, 1.0, 30, 60) == (found, multilingual.FAILED)
    assert len(reads) == 1  # checked once, not once per search
    logged = [r for r in caplog.records if "multilingual second opinion failed" in r.getMessage()]
    assert len(logged) == 1 and "sha256" in logged[0].getMessage()  # once per hub, with the reason


def test_vectors_do_not_depend_on_the_texts_beside_them(model: MultilingualUSE) -> None:
    texts = [m.text for m in MEMORIES[:10]]
    alone = np.stack([model.embed([t])[0] for t in texts])
    assert np.allclose(model.embed(texts), alone, atol=1e-5)


# -- through the hub --


def test_through_the_hub_a_chinese_paraphrase_is_found_and_explained(stack: Stack, ns: str) -> None:
    reply = stack.client.write([memory_input(ns, m.text, kind="semantic", type=m.type) for m in MEMORIES], wait_indexed=True)
    ids = {r.memory.id: m.id for m, r in zip(MEMORIES, reply.results, strict=True)}
    question = "小雨不能吃哪种坚果？"  # "which nut can't Xiaoyu eat?": the memory says peanut (花生), not nut
    hits = stack.client.search(question, [ns], top_k=5, explain=True).hits
    assert "m01" in [ids[h.memory.id] for h in hits]
    answer = next(h for h in hits if ids[h.memory.id] == "m01")
    ranks = {c.channel: c for c in answer.channel_ranks}
    assert ranks[pb.RETRIEVAL_CHANNEL_MULTILINGUAL].contribution > 0
    if pb.RETRIEVAL_CHANNEL_DENSE in ranks:  # listed, counted for nothing: its model cannot read the question
        assert ranks[pb.RETRIEVAL_CHANNEL_DENSE].contribution == 0
    shown = memhub("search", question, "--ns", ns, "--top-k", "5", "--explain", stack=stack)
    assert shown.returncode == 0, shown.stderr
    assert "multilingual #" in shown.stdout
    assert re.search(r"dense #\d+ \(not counted\)", shown.stdout)  # ranked, counted for nothing
    # Asked for keywords only, the question gets no second dense opinion.
    only_keywords = stack.client.search(question, [ns], top_k=5, channels=["keyword"], explain=True).hits
    assert only_keywords
    assert all(c.channel != pb.RETRIEVAL_CHANNEL_MULTILINGUAL for h in only_keywords for c in h.channel_ranks)


def test_through_the_hub_the_second_opinion_survives_restatements_left_out(stack: Stack, ns: str) -> None:
    # Episodic turns that state a preference derive a preference memory each (issue 25); a question that is not a
    # recommendation leaves those restatements out and reads rows further down in their place. The second
    # opinion must rank the head the rerank sees after that, not be undone by it.
    turns = ["小雨：我喜欢喝绿茶。", "小雨：我最喜欢的水果是芒果。", "小雨：我对花生过敏，一吃就起疹子。"]
    turns.append("小明：周末我们去爬山吧。")
    reply = stack.client.write([memory_input(ns, t, kind="episodic") for t in turns], session_id="s1", wait_indexed=True)
    derived = [m for m in stack.client.list([ns]).memories if m.type == pb.MEMORY_TYPE_PREFERENCE]
    assert derived  # the premise: restatements sit among the candidates
    hits = stack.client.search("小雨不能吃哪种坚果？", [ns], top_k=4, explain=True).hits
    assert {h.memory.id for h in hits} == {r.memory.id for r in reply.results}  # the four turns
    assert all(m.id not in {h.memory.id for h in hits} for m in derived)  # left out: not a recommendation question
    # Each turn carries the second opinion's share (before, leaving the restatements out threw the shares away).
    second = pb.RETRIEVAL_CHANNEL_MULTILINGUAL
    multilingual_shares = [[c.contribution for c in h.channel_ranks if c.channel == second] for h in hits]
    assert all(shares and shares[0] > 0 for shares in multilingual_shares)
