"""How the retrieval index searches, read from MEMHUB_* variables: defaults, accepted spellings, and refusals
that name the variable and the choices."""

from __future__ import annotations

import pytest

from memhub.errors import StartupError
from memhub.index_config import CONSISTENCY_LEVELS, IndexConfig


def test_the_defaults_are_strong_consistency_and_hnsw() -> None:
    config = IndexConfig.from_env({})
    assert config.consistency_level == "Strong" and config.server_dense_index == "HNSW"
    assert config == IndexConfig()


@pytest.mark.parametrize("given", ["session", "SESSION", " Session "])
def test_a_consistency_level_is_read_in_any_case(given: str) -> None:
    assert IndexConfig.from_env({"MEMHUB_MILVUS_CONSISTENCY": given}).consistency_level == "Session"


@pytest.mark.parametrize("level", CONSISTENCY_LEVELS)
def test_every_documented_level_is_accepted_as_milvus_spells_it(level: str) -> None:
    assert IndexConfig.from_env({"MEMHUB_MILVUS_CONSISTENCY": level.upper()}).consistency_level == level


@pytest.mark.parametrize("given", ["Eventually", "strongest", "0"])
def test_another_level_is_refused_naming_the_variable_and_the_choices(given: str) -> None:
    # Eventually is Milvus's too, but it may hide a write for as long as the server likes: not offered.
    with pytest.raises(StartupError) as refused:
        IndexConfig.from_env({"MEMHUB_MILVUS_CONSISTENCY": given})
    assert f"MEMHUB_MILVUS_CONSISTENCY={given!r}" in str(refused.value)
    assert "Strong, Session, Bounded" in str(refused.value)


def test_a_malformed_hnsw_setting_is_refused_with_its_range() -> None:
    with pytest.raises(StartupError) as refused:
        IndexConfig.from_env({"MEMHUB_MILVUS_HNSW_M": "200"})
    assert "MEMHUB_MILVUS_HNSW_M" in str(refused.value)


def test_the_lite_vector_copy_is_sized_in_mib_within_its_range() -> None:
    assert IndexConfig.from_env({}).lite_vector_copy_mb == 256
    assert IndexConfig.from_env({"MEMHUB_LITE_VECTOR_COPY_MB": "0"}).lite_vector_copy_mb == 0
    assert IndexConfig.from_env({"MEMHUB_LITE_VECTOR_COPY_MB": "1024"}).lite_vector_copy_mb == 1024
    for bad in ("-1", "65537", "lots"):
        with pytest.raises(StartupError) as refused:
            IndexConfig.from_env({"MEMHUB_LITE_VECTOR_COPY_MB": bad})
        assert "MEMHUB_LITE_VECTOR_COPY_MB" in str(refused.value)
