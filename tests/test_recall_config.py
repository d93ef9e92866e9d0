"""Recall settings from the environment: every stage's switch and weight, and clear errors for bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from memhub.config import HubConfig
from memhub.core.model import Channel, MemoryFilter, SearchQuery
from memhub.errors import StartupError
from memhub.rerank.config import open_reranker
from memhub.rerank.local import LocalReranker
from memhub.search.query import understand
from memhub.search.settings import RetrievalSettings


def _config(tmp_path: Path, **env: str) -> HubConfig:
    return HubConfig.from_env({"MEMHUB_DATA_DIR": str(tmp_path), **env})


def test_defaults_and_overrides(tmp_path: Path) -> None:
    default = _config(tmp_path)
    assert (default.indexer.keyword_context_before, default.indexer.keyword_context_after) == (2, 2)
    assert default.rerank.mode == "local" and default.search.neighbour_smoothing == 0.1
    config = _config(
        tmp_path,
        MEMHUB_KEYWORD_CONTEXT_BEFORE="2",
        MEMHUB_KEYWORD_CONTEXT_AFTER="0",
        MEMHUB_CHANNEL_WEIGHTS="entity=0.3, time=1",
        MEMHUB_NEIGHBOUR_SMOOTHING="0.2",
        MEMHUB_EXPANSION="1",
        MEMHUB_RERANK="http",
        MEMHUB_RERANK_URL="http://reranker:8080",
        MEMHUB_RERANK_API="cohere",
        MEMHUB_RERANK_MODEL="bge-reranker-base",
        MEMHUB_RERANK_DEPTH="20",
    )
    assert (config.indexer.keyword_context_before, config.indexer.keyword_context_after) == (2, 0)
    weights = dict(config.search.channel_weights)
    assert (
        weights["entity"] == 0.3 and weights["time"] == 1.0 and weights["dense"] == dict(default.search.channel_weights)["dense"]
    )
    assert config.search.neighbour_smoothing == 0.2 and config.search.expansion
    assert (config.rerank.mode, config.rerank.url, config.rerank.api, config.rerank.depth) == (
        "http",
        "http://reranker:8080",
        "cohere",
        20,
    )


def test_the_local_reranks_settings_reach_the_reranker(tmp_path: Path) -> None:
    config = _config(tmp_path, MEMHUB_RERANK_BEST_CHANNEL_WEIGHT="1.5", MEMHUB_RERANK_RARE_TERMS="0")
    reranker = open_reranker(config.rerank)
    assert (reranker.best_channel_weight, reranker.rare_terms) == (1.5, False)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MEMHUB_KEYWORD_CONTEXT_BEFORE": "9"}, "MEMHUB_KEYWORD_CONTEXT_BEFORE=9 is out of range"),
        ({"MEMHUB_CHANNEL_DEPTH": "5"}, "MEMHUB_CHANNEL_DEPTH=5 is out of range"),
        ({"MEMHUB_CHANNEL_DEPTH": "deep"}, "MEMHUB_CHANNEL_DEPTH"),
        ({"MEMHUB_CHANNEL_WEIGHTS": "semantic=1"}, "NAME one of dense, keyword, entity, time, expansion"),
        ({"MEMHUB_CHANNEL_WEIGHTS": "entity"}, "is not NAME=WEIGHT"),
        ({"MEMHUB_CHANNEL_WEIGHTS": "entity=lots"}, "weight of entity ('lots') is not a number"),
        ({"MEMHUB_CHANNEL_WEIGHTS": "entity=-1"}, "use 0 to 10"),
        ({"MEMHUB_NEIGHBOUR_SMOOTHING": "nan"}, "MEMHUB_NEIGHBOUR_SMOOTHING=nan is out of range"),
        ({"MEMHUB_RERANK": "cross-encoder"}, "rerank mode must be one of off, local, http"),
        ({"MEMHUB_RERANK": "http"}, "needs a url"),
        ({"MEMHUB_RERANK_BEST_CHANNEL_WEIGHT": "11"}, "MEMHUB_RERANK_BEST_CHANNEL_WEIGHT=11 is out of range"),
        ({"MEMHUB_RERANK_RARE_TERMS": "maybe"}, "MEMHUB_RERANK_RARE_TERMS='maybe' is not a flag"),
    ],
)
def test_bad_values_name_the_variable(tmp_path: Path, env: dict[str, str], message: str) -> None:
    with pytest.raises(StartupError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _config(tmp_path, **env)


def test_the_local_rerank_a_request_asks_for_has_the_configured_defaults(tmp_path: Path) -> None:
    # A request asking for a rerank on a hub configured without one gets LocalReranker() (memhub/service/search.py):
    # it must rank as the default configuration's does.
    configured = open_reranker(_config(tmp_path).rerank)
    asked = LocalReranker()
    keys = ("term_weight", "entity_weight", "best_channel_weight", "rare_terms", "length_free")
    assert [getattr(configured, k) for k in keys] == [getattr(asked, k) for k in keys]


@pytest.mark.parametrize(
    ("channel_depth", "top_k", "question", "depth"),
    [
        (30, 10, "What did Melanie paint?", 30),
        (30, 20, "What did Melanie paint?", 60),  # three times top_k when that is more
        (90, 10, "What did Melanie paint?", 90),
        (90, 10, "How many paintings did Melanie make in total?", 180),  # an aggregation looks twice as deep
        (200, 10, "How many paintings did Melanie make in total?", 300),  # never past 300
    ],
)
def test_the_channel_depth_setting_reaches_each_channels_list(
    tmp_path: Path, channel_depth: int, top_k: int, question: str, depth: int
) -> None:
    config = _config(tmp_path, MEMHUB_CHANNEL_DEPTH=str(channel_depth))
    assert config.search.channel_depth == channel_depth
    settings = RetrievalSettings(aggregation_depth=config.search.aggregation_depth, channel_depth=config.search.channel_depth)
    query = SearchQuery(question, MemoryFilter(("agents/a",)), top_k, tuple(Channel), explain=False, max_tokens=0)
    assert understand(query, "all-MiniLM-L6-v2-onnx-int8-dynamic", settings).depth == depth
