"""The local model's int8 arithmetic: derived from the shipped model, cached, checked, and close to the original."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from memhub.config import HubConfig
from memhub.embedding import quantize
from memhub.embedding.onnx_minilm import MODEL_ID, MODEL_ID_DYNAMIC, MODEL_SHA256, OnnxMiniLMEmbedder, default_model_path

SENTENCES = [
    "Caroline went to the LGBTQ support group yesterday and felt accepted.",
    "The deploy failed with error E1234 after the Postgres 15 migration.",
    "Melanie painted a sunrise over the lake last summer.",
    "What did the team decide about retry policies?",
]


def test_derived_model_is_built_once_and_reused(tmp_path: Path) -> None:
    first = quantize.dynamic_int8(default_model_path(), MODEL_SHA256, tmp_path)
    built = first.stat().st_mtime_ns
    again = quantize.dynamic_int8(default_model_path(), MODEL_SHA256, tmp_path)
    assert again == first and again.stat().st_mtime_ns == built
    assert first.parent == tmp_path and MODEL_SHA256[:16] in first.name
    assert first.with_name(first.name + ".sha256").read_text().strip()


def test_an_altered_cache_is_rebuilt_not_run(tmp_path: Path) -> None:
    path = quantize.dynamic_int8(default_model_path(), MODEL_SHA256, tmp_path)
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])  # a truncated copy, as a full disk would leave
    rebuilt = quantize.dynamic_int8(default_model_path(), MODEL_SHA256, tmp_path)
    assert rebuilt.read_bytes() == good


def test_an_unwritable_cache_falls_back_to_a_private_directory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with caplog.at_level(logging.WARNING, logger="memhub.embedding.quantize"):
        path = quantize.dynamic_int8(default_model_path(), MODEL_SHA256, blocker / "models")
    assert path.is_file() and blocker not in path.parents
    assert quantize.CACHE_ENV in caplog.text


def test_int8_arithmetic_keeps_the_vectors_close_and_says_so_in_its_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(quantize.CACHE_ENV, str(tmp_path))
    dynamic, shipped = OnnxMiniLMEmbedder(quantize="dynamic"), OnnxMiniLMEmbedder(quantize="none")
    assert (dynamic.model_id, shipped.model_id) == (MODEL_ID_DYNAMIC, MODEL_ID)
    a, b = dynamic.embed(SENTENCES), shipped.embed(SENTENCES)
    assert not np.allclose(a, b, atol=1e-4)  # the int8 model really runs
    assert np.min(np.sum(a * b, axis=1)) > 0.97
    # The ranking a query gives stays the same.
    query = "Which error broke the database upgrade?"
    assert np.argmax(a @ dynamic.embed([query])[0]) == np.argmax(b @ shipped.embed([query])[0]) == 1
    assert list(tmp_path.glob("*.onnx"))  # the environment variable chose the cache


def test_quantize_setting_is_read_and_checked() -> None:
    assert HubConfig.from_env({"MEMHUB_EMBEDDING_QUANTIZE": "none"}).embedding.quantize == "none"
    assert HubConfig.from_env({}).embedding.quantize == "dynamic"
    with pytest.raises(Exception, match="quantize"):
        HubConfig.from_env({"MEMHUB_EMBEDDING_QUANTIZE": "int4"})
    with pytest.raises(ValueError, match="quantize"):
        OnnxMiniLMEmbedder(quantize="fp16")
