"""`memhub serve` as an operator meets it: a second hub on a data directory in use is refused before it touches
anything, naming the hub that holds it; SIGTERM and SIGINT stop a hub cleanly, every acknowledged write kept.

Real `memhub serve` processes on a temporary data directory (embedded Postgres, Milvus Lite), a real client.
How fast each step is, is measured by bench/bench_startup.py, not asserted here.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from conftest import REPO

from memhub.auth import issue_token, load_secret
from memhub.client import MemhubClient, memory_input
from memhub.db.listen import WakeableEvent, next_notifications


class Hub:
    """One `memhub serve` process, started and read until it listens."""

    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memhub.cli.main", "serve", "--data-dir", str(data_dir), "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=REPO,
            env=env,
        )
        self.printed: list[str] = []
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.printed.append(line)
            if (found := re.match(r"memhub: listening on (\S+) \(gRPC\)", line)) is not None:
                self.address = found.group(1)
                return
        raise AssertionError(f"memhub serve exited with {self.proc.wait()} before listening:\n{''.join(self.printed)}")

    def stop(self, signum: int) -> tuple[int, str]:
        """Send ``signum``; the exit status and what the hub printed after it."""
        self.proc.send_signal(signum)
        rest, _ = self.proc.communicate(timeout=120)
        return self.proc.returncode, rest


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A user's environment: no MEMHUB_* settings, a config home of its own (the client file serve writes)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHUB_", "OTEL_"))}
    return clean | {"XDG_CONFIG_HOME": str(tmp_path / "config")}


def client(hub: Hub, data_dir: Path) -> MemhubClient:
    token = issue_token(load_secret(data_dir / "jwt-secret"), agent_id="ops", groups=[], ttl=timedelta(hours=1)).token
    return MemhubClient(hub.address, token=token, timeout_s=60)


def test_a_second_serve_is_refused_naming_the_first_and_both_signals_stop_a_hub_keeping_its_writes(
    tmp_path: Path, env: dict[str, str]
) -> None:
    data_dir = tmp_path / "data"
    first = Hub(data_dir, env)
    try:
        second = subprocess.run(
            [sys.executable, "-m", "memhub.cli.main", "serve", "--data-dir", str(data_dir), "--port", "0"],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=120,
        )
        assert second.returncode == 1 and "listening" not in second.stdout
        (line,) = [x for x in second.stderr.splitlines() if x.startswith("memhub serve: ")]
        assert f"the data directory {data_dir} is in use: memhub serve (pid {first.proc.pid}, since " in line
        assert f"serving on {first.address})" in line
        assert f"kill {first.proc.pid}" in line and "another --data-dir" in line and "memhub index-server" in line
        assert "Postgres" not in second.stderr  # refused before it joined the embedded Postgres
        # Another data directory on the first hub's port: refused before it creates anything. gRPC's default
        # SO_REUSEPORT let such a hub listen beside the first, and the kernel split clients between them.
        other_dir = tmp_path / "other"
        port = first.address.rsplit(":", 1)[1]
        third = subprocess.run(
            [sys.executable, "-m", "memhub.cli.main", "serve", "--data-dir", str(other_dir), "--port", port],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=120,
        )
        assert third.returncode == 1 and "listening" not in third.stdout, third.stdout + third.stderr
        assert f"memhub serve: cannot listen on 127.0.0.1:{port}: Address already in use" in third.stderr
        assert "--port or MEMHUB_PORT" in third.stderr and not other_dir.exists()
        reindex = subprocess.run(
            [sys.executable, "-m", "memhub.cli.main", "reindex", "--data-dir", str(data_dir)],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=120,
        )
        assert (
            reindex.returncode == 1
            and f"memhub reindex: the data directory {data_dir} is in use: memhub serve (pid" in reindex.stderr
        )

        with client(first, data_dir) as c:
            written = c.write([memory_input("agents/ops/notes", "Deploys freeze on Fridays after 3 pm")])
        memory_id = written.results[0].memory.id
        code, printed = first.stop(signal.SIGTERM)
        assert code == 0 and "memhub: shutting down" in printed
    finally:
        if first.proc.poll() is None:
            first.proc.kill()
            first.proc.wait(60)

    again = Hub(data_dir, env)  # the lock went with the process
    try:
        with client(again, data_dir) as c:
            assert c.get(memory_id).content == "Deploys freeze on Fridays after 3 pm"
        code, printed = again.stop(signal.SIGINT)
        assert code == 0 and "memhub: shutting down" in printed
    finally:
        if again.proc.poll() is None:
            again.proc.kill()
            again.proc.wait(60)
    assert not (Path(env["XDG_CONFIG_HOME"]) / "memhub" / "client.json").exists()


def test_a_stop_wakes_a_listener_that_waits_without_a_timeout(external_pg_admin_url: str) -> None:
    with (
        psycopg.connect(external_pg_admin_url, autocommit=True) as conn,
        psycopg.connect(external_pg_admin_url, autocommit=True) as sender,
    ):
        channel = f"memhub_test_{os.getpid()}"
        conn.execute(f"LISTEN {channel}")
        stop = WakeableEvent()
        sender.execute(f"NOTIFY {channel}")
        assert next_notifications(conn, stop, timeout_s=None) == 1

        got: list[int] = []
        listener = threading.Thread(target=lambda: got.append(next_notifications(conn, stop, timeout_s=None)))
        listener.start()
        stop.set()  # from another thread, as Hub.close does
        listener.join(60)
        assert not listener.is_alive() and got == [0]

        stop.clear()
        sender.execute(f"NOTIFY {channel}")
        assert next_notifications(conn, stop, timeout_s=None) == 1  # cleared: it waits for notifications again


def test_a_hub_is_refused_the_data_file_an_index_server_serves(tmp_path: Path, env: dict[str, str]) -> None:
    data_dir = tmp_path / "data"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "memhub.cli.main", "index-server", "--data-dir", str(data_dir), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=REPO,
        env=env,
    )
    try:
        assert server.stdout is not None
        printed = next((line for line in server.stdout if line.startswith("memhub index-server:")), "")
        assert "serving" in printed, printed
        refused = subprocess.run(
            [sys.executable, "-m", "memhub.cli.main", "serve", "--data-dir", str(data_dir), "--port", "0"],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=120,
        )
        assert refused.returncode == 1
        assert f"memhub index-server (pid {server.pid}, since " in refused.stderr and "serving on http://" in refused.stderr
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=60)
