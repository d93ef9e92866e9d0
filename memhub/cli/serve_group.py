"""`memhub serve --processes N`: N hub processes sharing one port, one data directory and one index.

One hub process runs its Python one thread at a time (the GIL), and at 16 clients that, not the machine's
cores, caps its searches a second (docs/benchmarks.md, fleet speed, sixth round: a second hub process on the
same stores served 1.13-1.45x as many). This supervisor starts N ordinary `memhub serve` processes as a
replica set on one machine:

- the port: reserved here (a bound, not listening, socket with SO_REUSEPORT) and shared by the hub processes,
  which alone set SO_REUSEPORT (``--group-member``); the kernel spreads new connections over them. Any other
  process is refused the port while the group holds it;
- the index: an embedded Milvus Lite file is served over loopback TCP by this process, as `memhub
  index-server` does, and restarted here if it dies; a Milvus server is used by every hub as configured;
- Postgres: each hub joins the embedded server of the data directory (its users file counts them) or the
  external one; the first hub starts alone, so migrations and the first start happen once;
- a hub process that exits unexpectedly is started again; more than ``MAX_RESTARTS`` in ``RESTART_WINDOW_S``
  stops the group with the last exit code, rather than looping;
- SIGTERM/SIGINT stop every hub process (each finishes its calls and closes its stores), then the index.

Clients see one hub: every process verifies the same tokens (the data directory's secret or the configured
keys), reads the same policies and serves the same memories.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Protocol

from memhub import client_config, linux_prctl
from memhub.cli.listen_port import bind_port
from memhub.data_dir_lock import ServingLock, lite_file
from memhub.errors import StartupError
from memhub.index.errors import IndexUnavailable
from memhub.index.lite_server import LiteServer

if TYPE_CHECKING:
    from memhub.config import HubConfig

log = logging.getLogger(__name__)

MAX_RESTARTS = 5
RESTART_WINDOW_S = 60.0
START_TIMEOUT_S = 1800.0
"""A hub process's start may load a large index (minutes at 1M memories; the hub's own load timeout is 30 min)."""
STOP_TIMEOUT_S = 60.0
READY = "memhub: group member ready"
"""What a hub process started with ``--group-member`` prints after its banner."""


def free_loopback_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Member:
    """One hub process of the group: its command, its environment, and what it printed up to listening."""

    number: int
    env: dict[str, str]
    proc: subprocess.Popen[str] | None = None
    banner: list[str] = field(default_factory=list)
    _lines: queue.Queue[str | None] = field(default_factory=queue.Queue)

    def start(self, argv: list[str]) -> None:
        self.banner = []
        self._lines = queue.Queue()
        self.proc = subprocess.Popen(
            [*argv, "--group-member", str(self.number)],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=None,  # its log lines go where the group's go
            text=True,
            bufsize=1,
        )
        assert self.proc.stdout is not None
        threading.Thread(target=self._read, args=(self.proc.stdout,), name=f"memhub-hub-{self.number}-out", daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        """Every line the process prints: kept for ``wait_listening`` (the banner), later ones passed through."""
        for line in stream:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def wait_listening(self, timeout_s: float, stopping: threading.Event) -> None:
        """Return once the process printed its banner and its ready line; StartupError if it exited first, took
        longer than ``timeout_s``, or the group is asked to stop meanwhile."""
        deadline = time.monotonic() + timeout_s
        while True:
            if stopping.is_set():
                raise StartupError(f"stopped while hub process {self.number} was starting")
            try:
                line = self._lines.get(timeout=0.2)
            except queue.Empty:
                if time.monotonic() > deadline:
                    raise StartupError(f"hub process {self.number} did not start within {timeout_s:.0f} s") from None
                continue
            if line is None:
                code = self.proc.wait() if self.proc is not None else None
                raise StartupError(f"hub process {self.number} exited with code {code} before it listened (its error is above)")
            self.banner.append(line)
            if line == READY:
                return

    def pid(self) -> int:
        return self.proc.pid if self.proc is not None else 0

    def exited(self) -> int | None:
        return None if self.proc is None else self.proc.poll()


class Group:
    """The hub processes: ``start``, then ``check`` every second until the group is asked to stop, then ``stop``."""

    def __init__(self, envs: list[dict[str, str]], argv: list[str], stopping: threading.Event) -> None:
        self.members = [Member(i + 1, env) for i, env in enumerate(envs)]
        self._argv = argv
        self._stopping = stopping
        self._restarts: list[float] = []

    def start(self) -> None:
        """The first hub alone (it starts the embedded Postgres and migrates), then the others at once."""
        first, *rest = self.members
        first.start(self._argv)
        first.wait_listening(START_TIMEOUT_S, self._stopping)
        for member in rest:
            member.start(self._argv)
        for member in rest:
            member.wait_listening(START_TIMEOUT_S, self._stopping)

    def check(self) -> None:
        """Start again a hub process that exited; StartupError once they exit faster than MAX_RESTARTS a window."""
        for member in self.members:
            code = member.exited()
            if code is None or self._stopping.is_set():  # a Ctrl-C reaches the hub processes too: no restart
                continue
            now = time.monotonic()
            self._restarts = [t for t in self._restarts if now - t < RESTART_WINDOW_S] + [now]
            if len(self._restarts) > MAX_RESTARTS:
                raise StartupError(
                    f"hub process {member.number} exited with code {code}, the {len(self._restarts)}th exit in "
                    f"{RESTART_WINDOW_S:.0f} s; stopping the group (the hub processes' errors are above)"
                )
            log.warning("hub process %d (pid %d) exited with code %s; starting it again", member.number, member.pid(), code)
            member.start(self._argv)
            try:
                member.wait_listening(START_TIMEOUT_S, self._stopping)
            except StartupError as exc:  # counted at the next check, as any exit is
                log.warning("hub process %d did not start again: %s", member.number, exc)
                continue
            log.info("hub process %d is serving again (pid %d)", member.number, member.pid())

    def stop(self) -> None:
        """SIGTERM to every hub process at once (each finishes its calls and closes its stores); kill what lingers."""
        running = [m.proc for m in self.members if m.proc is not None and m.proc.poll() is None]
        for proc in running:
            proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for proc in running:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.warning("hub process pid %d did not stop within %.0f s; killing it", proc.pid, STOP_TIMEOUT_S)
                proc.kill()
                proc.wait(10)


def die_with_group() -> None:
    """In a hub process: Linux sends it SIGTERM when the group's process dies (prctl PR_SET_PDEATHSIG), so a group
    killed with kill -9 leaves no hub serving on without its index. Set by the member itself, not between fork and
    exec (unsafe in the group's threaded process); a group already gone by then is noticed by the parent pid."""
    if not linux_prctl.available():
        return
    parent = os.getppid()
    linux_prctl.prctl(linux_prctl.PR_SET_PDEATHSIG, signal.SIGTERM)
    if parent == 1 or os.getppid() != parent:
        raise StartupError("the memhub serve --processes group that started this hub process is gone")


def member_argv(log_level: str) -> list[str]:
    """The command of one hub process: this interpreter's `memhub serve`, as a group member."""
    return [sys.executable, "-m", "memhub.cli.main", "serve", "--log-level", log_level]


def member_env(
    base: Mapping[str, str], *, processes: int, port: int, milvus_uri: str | None, lite_file: Path | None
) -> dict[str, str]:
    """The environment every hub process gets: the group's settings, its port, the shared index."""
    env = dict(base)
    env["MEMHUB_PORT"] = str(port)
    env["MEMHUB_PROCESSES"] = str(processes)  # each shares out the search slots; --group-member keeps it one process
    env["MEMHUB_CLIENT_CONFIG"] = "none"  # the group records its address once, for its own pid
    if milvus_uri is not None:
        env["MEMHUB_MILVUS_URI"] = milvus_uri
    if lite_file is not None:
        env["MEMHUB_MILVUS_LITE_FILE"] = str(lite_file)
    return env


def per_member(env: dict[str, str], number: int, console_port: int | None) -> dict[str, str]:
    """What differs between hub processes: the first serves the console (if asked for); each its own metrics port
    (the configured one plus its number minus one; 0 stays "any free port")."""
    env = dict(env)
    env.pop("MEMHUB_CONSOLE_PORT", None)
    if number == 1 and console_port is not None:
        env["MEMHUB_CONSOLE_PORT"] = str(console_port)
    metrics = env.get("MEMHUB_METRICS_PORT", "").strip()
    if metrics and metrics != "0":
        env["MEMHUB_METRICS_PORT"] = str(int(metrics) + number - 1)
    return env


class Stop(Protocol):
    """SIGINT/SIGTERM as memhub serve notices them (serve.py's _SignalStop)."""

    event: threading.Event

    def wait(self, timeout_s: float | None = None) -> bool: ...


def run(
    config: HubConfig,
    base_env: Mapping[str, str],
    *,
    processes: int,
    log_level: str,
    console_port: int | None,
    stop: Stop,
    lock: ServingLock | None,
    first_steps: Callable[[str, Path | None], list[str]],
) -> int:
    """Serve with ``processes`` hub processes until ``stop``; the caller holds the data file's lock (if embedded).

    ``base_env`` is the environment with the command line's flags applied; ``first_steps(address, recorded)`` the
    lines that tell a new user how to reach the hub.
    """
    reservation = bind_port(config.server.host, config.server.port, shared=True)  # for the hub processes alone
    port = int(reservation.getsockname()[1])
    address = client_config.connect_address(config.server.host, port)
    data_file = lite_file(config.store.data_dir, config.store.milvus_uri)
    lite: LiteServer | None = None
    group: Group | None = None
    try:
        if data_file is not None:
            try:
                lite = LiteServer(data_file, address=f"127.0.0.1:{free_loopback_port()}")
                lite.start()
            except IndexUnavailable as exc:
                raise StartupError(str(exc)) from None
        env = member_env(base_env, processes=processes, port=port, milvus_uri=lite.uri if lite else None, lite_file=data_file)
        envs = [per_member(env, number, console_port) for number in range(1, processes + 1)]
        group = Group(envs, member_argv(log_level), stop.event)
        group.start()
        if lock is not None:
            lock.note_address(address)
        recorded = client_config.write(address, config.store.data_dir)
        print("\n".join(banner(group, address, lite, recorded, first_steps)), flush=True)
        try:
            while not stop.wait(1.0):
                group.check()
                if lite is not None and lite.ensure_running():
                    log.warning("Milvus Lite was started again for the hub processes (%s)", lite.uri)
            print("memhub: shutting down", flush=True)
        finally:
            client_config.remove_if_ours()
    finally:
        if group is not None:
            group.stop()
        if lite is not None:
            lite.stop()
        reservation.close()
    return 0


def banner(
    group: Group,
    address: str,
    lite: LiteServer | None,
    recorded: Path | None,
    first_steps: Callable[[str, Path | None], list[str]],
) -> list[str]:
    """The first hub process's start-up lines, with the group's address, processes and client record."""
    first = group.members[0]
    kept, in_steps = [], False
    for line in first.banner:  # the group records the client file itself and prints its own first steps
        in_steps = line.startswith("  try:") or (in_steps and line.startswith(" " * 13))
        if line.strip() and not in_steps and not line.startswith(("memhub: starting", READY, "  clients:")):
            kept.append(line)
    if lite is not None:  # the hub processes name the loopback address; the operator wants the file
        kept = [f"  milvus:    {lite.db_file} (Milvus Lite)" if line.startswith("  milvus:") else line for line in kept]
    pids = ", ".join(str(m.pid()) for m in group.members)
    served = f"; this process serves Milvus Lite to them at {lite.uri}" if lite is not None else ""
    lines = [*kept, f"  processes: {len(group.members)} hub processes share the port (pids {pids}){served}"]
    for member in group.members[1:]:  # each its own metrics endpoint, when metrics are on
        lines += [
            f"  metrics:   {line.split(':', 1)[1].strip()} (process {member.number})"
            for line in member.banner
            if line.startswith("  metrics:") and "http" in line
        ]
    if recorded is not None:
        lines.append(f"  clients:   {recorded} records this address and data directory for memhub commands")
    if any(line.startswith("  tokens:") for line in kept):
        lines += first_steps(address, recorded)
    return lines
