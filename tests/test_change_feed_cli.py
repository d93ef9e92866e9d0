"""`memhub watch` as a user runs it (a subprocess): JSON lines of changes, the cursor to resume from, and a hub
restart in the middle that the command rides out by itself, missing nothing."""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from conftest import REPO, Stack, create_scratch_database, drop_database
from security.spawned_hub import hub_env, spawn_hub

from memhub.client import MemhubClient, memory_input

WAIT_S = 120.0


class WatchProcess:
    """`memhub watch ...` with its stdout lines in a queue."""

    def __init__(self, address: str, token: str, *args: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
        env.update({"MEMHUB_TOKEN": token, "MEMHUB_ADDRESS": address})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memhub.cli.main", "watch", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env=env,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def line(self) -> str:
        try:
            line = self.lines.get(timeout=WAIT_S)
        except queue.Empty:
            self.proc.kill()
            pytest.fail("memhub watch printed nothing in time")
        if line is None:
            pytest.fail(f"memhub watch ended: {self.proc.wait()} {self.proc.stderr.read() if self.proc.stderr else ''}")
        return line

    def finish(self) -> tuple[int, list[str], str]:
        """Wait for the exit: (code, the remaining stdout lines, stderr)."""
        code = self.proc.wait(timeout=WAIT_S)
        rest = []
        while (line := self.lines.get(timeout=WAIT_S)) is not None:
            rest.append(line)
        return code, rest, self.proc.stderr.read() if self.proc.stderr else ""


def _changes(lines: list[str]) -> list[dict]:
    return [msg["change"] for msg in map(json.loads, lines) if "change" in msg]


def test_watch_prints_changes_as_json_lines_and_the_cursor_to_resume_from(stack: Stack, ns: str) -> None:
    watch = WatchProcess(stack.address, stack.token("tester"), "--ns", ns, "--count", "2", "--jsonl")
    assert "heartbeat" in json.loads(watch.line())  # subscribed
    ids = [
        stack.client.write([memory_input(ns, text, type="fact")]).results[0].memory.id
        for text in ("The office closes at 6pm on Fridays", "Parking permits renew every March")
    ]
    code, lines, stderr = watch.finish()
    assert code == 0, stderr
    events = _changes(lines)
    assert [e["memory"]["id"] for e in events] == ids and [e["change"] for e in events] == ["written"] * 2
    assert f"resume with: memhub watch --from {events[-1]['cursor']}" in stderr


def test_watch_text_output_shows_each_change_and_refuses_what_retrying_cannot_fix(stack: Stack, ns: str) -> None:
    watch = WatchProcess(stack.address, stack.token("tester"), "--ns", ns, "--count", "1")
    assert watch.line().startswith(f"watching {ns}; resume later with --from ")
    mid = stack.client.write([memory_input(ns, "The wiki moved to the new host", type="fact")]).results[0].memory.id
    code, lines, stderr = watch.finish()
    assert code == 0, stderr
    assert lines[0].startswith("written at ") and " cursor " in lines[0]
    assert any(f"id={mid}" in line for line in lines) and any("The wiki moved to the new host" in line for line in lines)
    denied = WatchProcess(stack.address, stack.token("outsider", groups=()), "--ns", ns)
    code, _, stderr = denied.finish()
    assert code == 1 and "PERMISSION_DENIED" in stderr and "may not read" in stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_watch_rides_out_a_hub_restart_and_misses_nothing(tmp_path: Path, external_pg_admin_url: str) -> None:
    url = create_scratch_database(external_pg_admin_url)
    port = _free_port()
    env = hub_env(tmp_path / "policies", MEMHUB_CHANGE_FEED_POLL_S="0.5")
    ns = f"restart{uuid.uuid4().hex[:8]}"
    hub = spawn_hub(tmp_path, tmp_path / "data", database_url=url, env=env, port=port)
    watch = None
    try:
        token = hub.token("tester")
        watch = WatchProcess(hub.address, token, "--ns", ns, "--count", "3", "--jsonl")
        assert "heartbeat" in json.loads(watch.line())
        with MemhubClient(hub.address, token=token) as client:
            ids = [client.write([memory_input(ns, "Before the restart: backups run at 02:00", type="fact")]).results[0].memory.id]
        assert _changes([watch.line()])[0]["memory"]["id"] == ids[0]
        assert hub.stop() == 0
        hub = spawn_hub(tmp_path, tmp_path / "data", database_url=url, env=env, port=port)
        with MemhubClient(hub.address, token=token) as client:
            for text in ("After the restart: backups run at 03:00", "After the restart: restores are tested monthly"):
                ids.append(client.write([memory_input(ns, text, type="fact")]).results[0].memory.id)
        code, lines, stderr = watch.finish()
        assert code == 0, stderr
        assert "resubscribing in" in stderr  # it noticed the stop and came back by itself
        seen = [e["memory"]["id"] for e in _changes(lines)]
        assert [ids[0], *seen] == ids
    finally:
        if watch is not None and watch.proc.poll() is None:
            watch.proc.kill()
        hub.stop()
        drop_database(external_pg_admin_url, url)
