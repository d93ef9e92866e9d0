"""Which process really serves a PGDATA: what ``postmaster.pid`` says, checked against the running processes; stopping one.

After a host restart, ``postmaster.pid`` may name a pid that is now dead,
or that now belongs to an unrelated process: a pid counts only if it is a
postgres process serving this PGDATA (memhub/db/embedded_pg.py).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Postmaster:
    """What postmaster.pid says."""

    pid: int
    socket_dir: Path
    port: int
    status: str


def read_postmaster(path: Path) -> Postmaster | None:
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return None
    try:
        return Postmaster(
            pid=int(lines[0]),
            port=int(lines[3]) if len(lines) > 3 and lines[3].strip() else 5432,
            socket_dir=Path(lines[4].strip()) if len(lines) > 4 and lines[4].strip() else path.parent,
            status=lines[7].strip() if len(lines) > 7 else "",
        )
    except (ValueError, IndexError):
        log.warning("%s is malformed; treating it as stale", path)
        return Postmaster(pid=0, socket_dir=path.parent, port=5432, status="")


def serves(pid: int, pgdata: Path) -> bool:
    """True when ``pid`` is a postgres process started for ``pgdata`` (``-D <pgdata>``, or running in it)."""
    if pid <= 0:
        return False
    try:
        proc = psutil.Process(pid)
        if proc.name() != "postgres" or proc.status() == psutil.STATUS_ZOMBIE:
            return False
        cmdline = proc.cmdline()
    except psutil.Error:
        return False
    return _names_pgdata(cmdline, pgdata)


def postgres_serving(pgdata: Path) -> list[int]:
    """Pids of postmasters (postgres processes with ``-D <pgdata>``) of this PGDATA."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        if proc.info["name"] == "postgres" and _names_pgdata(proc.info["cmdline"] or [], pgdata):
            found.append(proc.pid)
    return found


def stop(pid: int, timeout_s: float) -> None:
    """Stop a postmaster as ``pg_ctl stop -m fast`` does (SIGINT, then wait), escalating to an immediate
    shutdown (SIGQUIT) if it lingers. Signals rather than pg_ctl: pg_ctl must reach PGDATA by its path,
    which may no longer be possible for the server's user (a parent directory's mode changed since)."""
    try:
        proc = psutil.Process(pid)
        proc.send_signal(signal.SIGINT)
        _wait_exited(proc, timeout_s)
    except psutil.TimeoutExpired:
        log.warning("the embedded Postgres (pid %d) did not stop within %.0f s; shutting it down immediately", pid, timeout_s)
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGQUIT)
            _wait_exited(proc, timeout_s)
    except psutil.NoSuchProcess:
        pass


def _wait_exited(proc: psutil.Process, timeout_s: float) -> None:
    """Return once ``proc`` has exited; psutil.TimeoutExpired after ``timeout_s``.

    A zombie counts as exited: it holds no file, socket or memory any more. ``Process.wait`` waits until the
    parent reaps it, and the postmaster's parent is whatever adopted it when pg_ctl exited (init, a
    container's first process), which may take its time: 2 s on a machine whose init reaps lazily, the
    larger part of a hub's stop.
    """
    deadline = time.monotonic() + timeout_s
    pause = 0.005
    while True:
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        if time.monotonic() >= deadline:
            raise psutil.TimeoutExpired(timeout_s, proc.pid)
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _names_pgdata(cmdline: list[str], pgdata: Path) -> bool:
    for flag, value in zip(cmdline, cmdline[1:], strict=False):
        if flag == "-D":
            with contextlib.suppress(OSError):
                return Path(value).resolve() == pgdata
    return False
