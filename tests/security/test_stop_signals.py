"""`memhub serve` and the stdio bridge stop on SIGTERM whichever of their threads the kernel hands it to.

A signal sent to a process goes to any one of its threads that does not block it. Python runs its handler
only in the main thread, and only when that thread next executes bytecode; a main thread blocked in an untimed
wait never does, so a SIGTERM that landed on a gRPC, Milvus or embedder thread left the hub running until it
was killed (seen as a hub that did not exit within 120 s of SIGTERM). Here the signal is aimed at each kind of
thread in turn with tgkill, so the test does not depend on the kernel's choice.
"""

from __future__ import annotations

import ctypes
import os
import platform
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import REPO, Fleet, create_scratch_database, drop_database

from security.spawned_hub import spawn_hub

_TGKILL = {"x86_64": 234, "aarch64": 131}.get(platform.machine())
pytestmark = pytest.mark.skipif(
    _TGKILL is None or not Path("/proc/self/task").is_dir(),
    reason="needs Linux on x86_64 or aarch64 to aim a signal at one thread (tgkill)",
)


def _tgkill(pid: int, tid: int, sig: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(_TGKILL, pid, tid, sig) != 0:
        raise OSError(ctypes.get_errno(), f"tgkill({pid}, {tid}, {sig}) failed")


def _other_threads(pid: int) -> list[int]:
    """The process's threads but its main one, oldest first."""
    return sorted(int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid)


@pytest.mark.parametrize("which", ["first", "last"])
def test_sigterm_delivered_to_a_worker_thread_stops_the_hub(tmp_path: Path, external_pg_admin_url: str, which: str) -> None:
    url = create_scratch_database(external_pg_admin_url)
    try:
        hub = spawn_hub(tmp_path, tmp_path / "data", database_url=url)
        try:
            threads = _other_threads(hub.proc.pid)
            assert threads, "the hub runs worker threads"
            _tgkill(hub.proc.pid, threads[0] if which == "first" else threads[-1], signal.SIGTERM)
            try:
                code = hub.proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                pytest.fail(f"the hub ignored a SIGTERM delivered to thread {which}; log:\n{hub.log.read_text()[-3000:]}")
            assert code == 0, hub.log.read_text()[-3000:]
        finally:
            hub.kill()
    finally:
        drop_database(external_pg_admin_url, url)


@pytest.mark.parametrize("which", ["first", "last"])
def test_sigterm_delivered_to_a_worker_thread_stops_the_stdio_bridge(fleet: Fleet, which: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHUB_", "OTEL_"))}
    bridge = subprocess.Popen(
        [sys.executable, "-m", "memhub.cli.main", "bridge", "--hub", fleet.address],
        stdin=subprocess.PIPE,  # held open: the bridge serves until stopped
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env | {"MEMHUB_TOKEN": fleet.token("alice")},
    )
    ready = threading.Event()
    log: list[str] = []

    def read_log() -> None:
        assert bridge.stderr is not None
        for line in bridge.stderr:
            log.append(line)
            if "bridge ready" in line:
                ready.set()

    threading.Thread(target=read_log, daemon=True).start()
    try:
        assert ready.wait(120), "".join(log)
        # The stdio server starts its stdin reader right after "ready"; wait until the thread count settles.
        threads = _other_threads(bridge.pid)
        for _ in range(50):
            threading.Event().wait(0.1)
            now = _other_threads(bridge.pid)
            if now == threads:
                break
            threads = now
        _tgkill(bridge.pid, threads[0] if which == "first" else threads[-1], signal.SIGTERM)
        try:
            code = bridge.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the bridge ignored a SIGTERM delivered to thread {which}; log:\n{''.join(log)[-3000:]}")
        assert code == 0, "".join(log)[-3000:]
    finally:
        if bridge.poll() is None:
            bridge.kill()
        bridge.wait(timeout=30)
