"""Milvus Lite engines do not share a home: the hub creates its collection whatever other engines do at the same time.

On the first collection it opens, a Lite 2.5.1 engine removes and recreates ``$HOME/.cache/milvus`` and fails if the
directory is back before it creates it; two engines sharing a home race there, and the loser's call fails with
"Mmap manager has not been init" (seen once in a CI run with 3 pytest-xdist workers; 6 of 60 engines started 4 at a
time on a busy 2-core machine). memhub gives each engine a home of its own (``LiteServer.engine_home``).

The race itself is timing: before the fix the concurrent test below failed in 7 of 11 runs on a busy 2-core
machine, so a pass of it alone proves little. The first test is the deterministic one: a home whose ``.cache`` is a
file fails the engine's mmap set-up the same way, with the same message, every time (checked against the code before
the fix), so an engine still using the hub's home fails it.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path

import pytest

from memhub.index import MilvusIndex
from memhub.index.lite_server import LiteServer

DIM = 8
MODEL = "test-model-v1"


def _create_collection(uri: str) -> None:
    """What a hub does at start, once its engine runs: connect and create its collection."""
    index = MilvusIndex(uri, collection=f"c_{uuid.uuid4().hex[:12]}", model_id=MODEL, dimension=DIM)
    try:
        index.ensure_collection()
        assert index.count() == 0
    finally:
        index.close()


def test_the_engine_does_not_use_the_hubs_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A home where no engine can make its mmap directory: before the fix the engine inherited this HOME and
    # ensure_collection failed with 'Assert "init_flag_ == true" => Mmap manager has not been init'.
    home = tmp_path / "home"
    home.mkdir()
    (home / ".cache").write_text("not a directory")
    monkeypatch.setenv("HOME", str(home))
    data = tmp_path / "data"
    data.mkdir()

    _create_collection(str(data / "index.db"))  # the embedded path: the hub starts the engine itself

    assert (data / ".index.db.home" / ".cache").is_dir(), "the engine's mmap directory is under its own home"
    assert (home / ".cache").read_text() == "not a directory"


def test_engines_started_together_all_create_their_collections(tmp_path: Path) -> None:
    # The CI conditions, condensed: hubs in separate processes each start an engine and create a collection at the
    # same moment. The engines are started here directly (LiteServer), in parallel: hubs in one process start their
    # engines one at a time (lite_server.acquire), which spreads them out.
    engines, rounds = 4, 3
    for r in range(rounds):
        folders = [tmp_path / f"r{r}e{i}" for i in range(engines)]
        for folder in folders:
            folder.mkdir()
        servers = [LiteServer(folder / "index.db") for folder in folders]
        start = threading.Barrier(engines)
        failures: list[str] = []

        def hub(server: LiteServer) -> None:
            start.wait()
            try:
                server.start()
                _create_collection(server.uri)
            except Exception as exc:  # collected, so that one failure does not hide the others
                failures.append(f"{server.db_file.parent.name}: {exc}")

        threads = [threading.Thread(target=hub, args=(s,)) for s in servers]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
        finally:
            for s in servers:
                s.stop()
        assert not failures, failures
