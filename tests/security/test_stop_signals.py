"""`memhub serve` stops on SIGTERM whichever of its threads the kernel hands the signal to.

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
from pathlib import Path

import pytest
from conftest import create_scratch_database, drop_database

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
