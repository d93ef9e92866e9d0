"""A hub in a process of its own (`memhub serve`), for tests that kill it or look at what it leaves behind."""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import OPEN_POLICY, REPO, write_policy_dir

from memhub.auth import issue_token, load_secret

MEMHUB = [sys.executable, "-m", "memhub.cli.main"]
_LISTENING = re.compile(r"listening on [\d.]+:(\d+)")


@dataclass
class SpawnedHub:
    proc: subprocess.Popen
    address: str
    data_dir: Path
    log: Path
    lines: list[str] = field(default_factory=list)

    def token(self, agent: str, groups: tuple[str, ...] = ("testers",)) -> str:
        secret = load_secret(self.data_dir / "jwt-secret")
        return issue_token(secret, agent_id=agent, groups=list(groups), ttl=timedelta(hours=1)).token

    def kill(self) -> None:
        """kill -9 (no clean-up of any kind runs in the hub); nothing if it already exited."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=60)

    def stop(self, timeout_s: float = 120) -> int:
        """SIGTERM, as an operator stops it; its exit code. A hub that hangs gets SIGABRT, so its log
        ends with every thread's stack (PYTHONFAULTHANDLER is set by ``hub_env``)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGABRT)
                try:
                    self.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=30)
        return self.proc.returncode


def hub_env(policy_dir: Path, **extra: str) -> dict[str, str]:
    """This process's environment without MEMHUB_* settings, plus the policy folder and ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    return {**env, "MEMHUB_POLICY_DIR": str(policy_dir), "PYTHONFAULTHANDLER": "1", **extra}


def spawn_hub(
    root: Path,
    data_dir: Path,
    *,
    database_url: str | None = None,
    env: dict[str, str] | None = None,
    umask: int = -1,
    timeout_s: float = 240,
    port: int = 0,
) -> SpawnedHub:
    """Start `memhub serve` on ``data_dir`` (embedded Postgres unless ``database_url``) under the open test policy
    and wait until it listens; fail with its log when it exits or does not listen in time.

    ``umask``: the process's umask (-1: this one's). ``port``: where to listen (0: a free one)."""
    policy_dir = root / "policies"
    if not policy_dir.exists():
        write_policy_dir(policy_dir, OPEN_POLICY)
    log = root / f"hub-{time.monotonic_ns()}.log"
    args = [*MEMHUB, "serve", "--port", str(port), "--data-dir", str(data_dir), "--log-level", "info"]
    if database_url is not None:
        args += ["--database-url", database_url]
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=REPO, env=env or hub_env(policy_dir), umask=umask
        )
    hub = SpawnedHub(proc, "", data_dir, log)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, name="spawned-hub-stdout", daemon=True).start()
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            line = lines.get(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            line = None
        if line is None:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
            pytest.fail(f"memhub serve did not start: {''.join(hub.lines)}\n{log.read_text()[-6000:]}")
        hub.lines.append(line)
        match = _LISTENING.search(line)
        if match:
            hub.address = f"127.0.0.1:{match.group(1)}"
            return hub


def embedded_store_root(tmp_path: Path) -> Iterator[Path]:
    """A directory for data directories that run an embedded Postgres; removed afterwards.

    As root, the server runs as another user that must pass through every
    parent of its data directory, and pytest makes its base temp directory
    0700 again whenever a pytest session starts (other sessions may run at
    the same time), which would lock a server in this one out mid-start. So
    as root: a directory of its own under /tmp. Otherwise ``tmp_path``.
    """
    if os.geteuid() != 0:
        yield tmp_path
        return
    root = Path(tempfile.mkdtemp(prefix="memhub-test-", dir="/tmp"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)
