"""A hub on a Milvus Lite file served by another process (`memhub index-server`, or the group of `memhub serve
--processes N`) reads that file back to check Lite kept what it acknowledged, as it does with its own engine,
when the file is named (MEMHUB_MILVUS_LITE_FILE); without the name it cannot, and says "cannot tell" (None).

A real Lite engine served over loopback TCP, a real hub configuration and index connection. What the check then
does with a loss (health, the index report, writing the rows again) is tested in test_index_reconcile.py.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from memhub.app import open_embedder, open_index
from memhub.config import HubConfig
from memhub.index.lite_server import LiteServer


@pytest.fixture
def served(tmp_path: Path) -> Iterator[LiteServer]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = LiteServer(tmp_path / "index.db", address=f"127.0.0.1:{port}")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("named", [False, True])
def test_the_served_file_is_read_back_only_when_named(served: LiteServer, tmp_path: Path, named: bool) -> None:
    env = {"MEMHUB_DATA_DIR": str(tmp_path), "MEMHUB_MILVUS_URI": served.uri}
    if named:
        env["MEMHUB_MILVUS_LITE_FILE"] = str(served.db_file)
    config = HubConfig.from_env(env)
    index = open_index(config, open_embedder(config))
    try:
        index.ensure_collection()
        if named:
            assert index.lite_file == served.db_file
            found = index.unpersisted()
            assert found is not None and found[0] == [] and found[1] > 0  # nothing lost; the disk's free bytes
        else:
            assert index.lite_file is None and index.unpersisted() is None
    finally:
        index.close()
