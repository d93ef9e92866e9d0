"""Start-up checks: unreachable stores, wrong URLs, an index built with another model, and reindex."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TESTER, create_scratch_database, drop_database, hub_config

from memhub.app import Hub
from memhub.client import memory_input
from memhub.config import HubConfig
from memhub.errors import StartupError
from memhub.index.milvus_index import MilvusIndex


def test_unreachable_postgres_is_reported_with_the_url_and_what_to_do(tmp_path: Path) -> None:
    config = hub_config(tmp_path, "postgresql://memhub:s3cret@127.0.0.1:1/memhub", "c")
    with pytest.raises(StartupError) as exc:
        Hub.open(config)
    message = str(exc.value)
    assert "cannot reach Postgres at" in message and "127.0.0.1:1" in message
    assert "s3cret" not in message  # never print the password
    assert "MEMHUB_DATABASE_URL" in message


@pytest.mark.parametrize(
    ("url", "expected"),
    [("mysql://root@localhost/db", "must be a PostgreSQL URL"), ("not a url", "malformed")],
)
def test_non_postgres_urls_are_refused(tmp_path: Path, url: str, expected: str) -> None:
    with pytest.raises(StartupError, match=expected):
        Hub.open(hub_config(tmp_path, url, "c"))


def test_unreachable_milvus_is_reported(tmp_path: Path, embedded_pg_url: str) -> None:
    config = hub_config(tmp_path, embedded_pg_url, "c")
    config = dataclasses.replace(config, store=dataclasses.replace(config.store, milvus_uri="http://127.0.0.1:1"))
    with pytest.raises(StartupError) as exc:
        Hub.open(config)
    assert "127.0.0.1:1" in str(exc.value)


def test_bad_environment_values_name_the_variable() -> None:
    with pytest.raises(StartupError, match="MEMHUB_PORT='http' is not a whole number"):
        HubConfig.from_env({"MEMHUB_PORT": "http"})
    with pytest.raises(StartupError, match="MEMHUB_PORT=70000 is out of range"):
        HubConfig.from_env({"MEMHUB_PORT": "70000"})
    with pytest.raises(StartupError, match="embedding.provider"):
        HubConfig.from_env({"MEMHUB_EMBEDDING_PROVIDER": "magic"})
    with pytest.raises(StartupError, match="MEMHUB_PROCESSES=0 is out of range"):
        HubConfig.from_env({"MEMHUB_PROCESSES": "0"})
    assert HubConfig.from_env({"MEMHUB_PROCESSES": "3"}).server.processes == 3


def test_an_index_built_with_another_model_is_refused_until_reindexed(tmp_path: Path, external_pg_admin_url: str) -> None:
    url = create_scratch_database(external_pg_admin_url)
    config = hub_config(tmp_path, url, "memhub_memories")
    try:
        hub = Hub.open(config)
        ns = "reindex/test"
        from memhub.api.convert import write_request
        from memhub.v1 import memory_pb2 as pb

        items = write_request(
            pb.WriteMemoriesRequest(memories=[memory_input(ns, f"note {i} about rotating keys") for i in range(5)])
        )
        hub.service.write(TESTER, items)
        hub.indexer.drain(timeout_s=60)
        hub.close()

        # Someone rebuilt the collection with another model of the same dimension.
        other = MilvusIndex(
            config.store.resolved_milvus_uri(), collection="memhub_memories", model_id="other-model", dimension=384
        )
        other.recreate()
        other.close()
        with pytest.raises(StartupError) as exc:
            Hub.open(config)
        message = str(exc.value)
        assert "other-model" in message and "memhub reindex" in message

        result = subprocess.run(
            [sys.executable, "-m", "memhub.cli.main", "reindex", "--data-dir", str(tmp_path), "--database-url", url],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        assert "reindexed 5 memories" in result.stdout

        hub = Hub.open(config)
        try:
            from memhub.core.model import Channel, MemoryFilter, SearchQuery

            hits = hub.service.search(
                TESTER, SearchQuery("rotating keys", MemoryFilter((ns,)), 10, tuple(Channel), False, 0)
            ).hits
            assert len(hits) == 5
        finally:
            hub.close()
    finally:
        drop_database(external_pg_admin_url, url)
