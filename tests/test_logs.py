"""What a person reading the logs at the default level sees: start-up steps, where it listens, real problems.

Not: PostgreSQL's initdb chatter (at debug, or quoted in the error when
initdb fails), library banners (faiss), gRPC errors caused by our own
settings (too_many_pings: tests/test_keepalive.py), or uvicorn's
ANSI-coloured copies of its messages.
"""

from __future__ import annotations

import json
import logging
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Fleet
from security.spawned_hub import embedded_store_root, spawn_hub
from test_bridge_transports import http_bridge

from memhub import logs
from memhub.client import MemhubClient, memory_input
from memhub.db import embedded_pg_postmaster as postmaster
from memhub.db.embedded_pg import EmbeddedPostgres
from memhub.errors import StartupError

# Lines initdb prints on success; any of them at info means its output leaked into the log.
INITDB_OUTPUT = ("The files belonging to this database system", "Success. You can now start", "creating subdirectories")
NOISE = ("faiss", "AVX", "GOAWAY", "too_many_pings", "color_message", "\x1b")


@pytest.fixture
def store_root(tmp_path: Path) -> Iterator[Path]:
    yield from embedded_store_root(tmp_path)


def test_serve_on_a_fresh_data_dir_logs_steps_not_subprocess_output(store_root: Path) -> None:
    hub = spawn_hub(store_root, store_root / "data")
    try:
        with MemhubClient(hub.address, token=hub.token("tester")) as client:  # the embedder and indexer at work
            client.write([memory_input("agents/tester/notes", "the log test writes one memory")])
    finally:
        assert hub.stop() == 0
    text = hub.log.read_text()
    entries = []
    for line in text.splitlines():
        entry = json.loads(line)  # every line is one JSON object: nothing else writes to stderr
        assert "\n" not in entry["msg"], f"a multi-line message (subprocess output?): {entry}"
        entries.append(entry)
    for marker in (*INITDB_OUTPUT, *NOISE):
        assert marker not in text, f"{marker!r} in serve's log at info:\n{text}"
    messages = [e["msg"] for e in entries]
    assert any(m.startswith("creating the embedded Postgres cluster") for m in messages)  # the step is still told
    loaded = [e for e in entries if e["msg"].startswith("loaded the embedding model all-MiniLM-L6-v2")]
    assert len(loaded) == 1 and loaded[0]["seconds"] >= 0 and " s" in loaded[0]["msg"], messages
    assert "listening on" in "".join(hub.lines)


def test_initdb_output_goes_to_debug_when_it_succeeds(store_root: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="memhub.db.embedded_pg_programs")
    server = EmbeddedPostgres(store_root / "data")
    try:
        server.start()
    finally:
        server.release()
    output = [getattr(r, "output", "") for r in caplog.records if r.levelno == logging.DEBUG and "initdb" in r.getMessage()]
    assert output and "Success" in output[0]
    for record in caplog.records:
        if record.levelno >= logging.INFO:
            assert not any(marker in record.getMessage() for marker in INITDB_OUTPUT)


def test_a_failed_initdb_shows_what_initdb_said(store_root: Path) -> None:
    pgdata = store_root / "data" / "postgres"
    pgdata.mkdir(parents=True, mode=0o700)
    (pgdata / "stray-file").write_text("not a database cluster")  # initdb refuses a non-empty directory
    with pytest.raises(StartupError) as exc:
        EmbeddedPostgres(store_root / "data").start()
    message = str(exc.value)
    assert "initdb exited with code" in message
    assert "initdb said:" in message and "exists but is not empty" in message
    assert "--data-dir" in message  # and what to do


def test_json_lines_drop_color_message_and_ansi_codes() -> None:
    formatter = logs.JsonFormatter()

    def line(message: str, *args: object, **extra: str) -> dict:
        record = logging.getLogger("uvicorn.error").makeRecord(
            "uvicorn.error", logging.INFO, __file__, 1, message, args, None, extra=extra
        )
        return json.loads(formatter.format(record))

    started = line("Started server process [%d]", 42, color_message="Started server process [\x1b[36m%d\x1b[0m]")
    assert started["msg"] == "Started server process [42]" and "color_message" not in started
    styled = line("plain \x1b[1mbold\x1b[0m text", field="\x1b[31mred\x1b[0m")
    assert styled["msg"] == "plain bold text" and styled["field"] == "red"


@pytest.mark.parametrize("level", ["debug", "info"])
def test_http_bridge_log_has_no_color_message_or_ansi(fleet: Fleet, level: str) -> None:
    with http_bridge(fleet, "alice", "--log-level", level) as bridge:
        with urllib.request.urlopen(bridge.base + "/healthz", timeout=30) as answer:  # uvicorn is up and serving
            assert answer.status == 200
    # stopped by SIGTERM: uvicorn logged on the way up and down
    lines = bridge.stderr.rest()
    entries = [json.loads(line) for line in lines if line.startswith("{")]
    assert entries, lines
    for line in lines:
        assert "color_message" not in line and "\x1b" not in line, line
    uvicorn = [e["msg"] for e in entries if e["logger"].startswith("uvicorn")]
    if level == "debug":
        assert any(m.startswith("Started server process") for m in uvicorn), entries  # the check saw uvicorn's lines
    else:
        assert uvicorn == [], uvicorn  # they repeat what the bridge prints itself


def test_releasing_a_server_whose_data_dir_was_removed_says_so_and_does_not_raise(
    store_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A benchmark or a test that removes its temporary data directory before the process exits: the release at
    # exit (atexit) printed a FileNotFoundError traceback for the users' lock file.
    data = store_root / "data"
    server = EmbeddedPostgres(data)
    server.start()
    running = server._running_postmaster()
    assert running is not None
    postmaster.stop(running.pid, 60)
    shutil.rmtree(data)
    caplog.set_level(logging.INFO, logger="memhub.db.embedded_pg")
    server.release()
    assert any("is gone; nothing to stop" in r.getMessage() for r in caplog.records)
    server.release()  # still safe to call twice
