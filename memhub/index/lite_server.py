"""Milvus Lite 2.5 (the native engine) as a supervised child process.

milvus-lite 2.5 is a C++ Milvus run as a separate process over a unix
socket or TCP. The hub starts that process itself (rather than letting
pymilvus start it on first use) for four reasons:
- it can be restarted when it dies, without restarting the hub: pymilvus's
  own server manager keeps a dead process registered forever;
- its glog output goes to a file beside the data file instead of being
  interleaved with the hub's JSON log lines on stderr;
- readiness is awaited by connecting to the socket, not by a fixed sleep;
- each engine gets a home directory of its own (``engine_home``), see there.

The process contract is milvus-lite's own (``milvus_lite/server.py``, pinned
at 2.5.1): ``milvus <db file> <address> <log level> <lock file>``. The parent
holds an exclusive lock on the lock file; the child exits when that lock is
released, so it never outlives the hub, even after ``kill -9``. The same
lock keeps a second process from opening the data file.

One ``LiteServer`` per data file per process: ``acquire``/``release`` count
users, so several ``MilvusIndex`` objects in one process share it and the
last one to close stops it.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import socket
import subprocess
import threading
import time
from pathlib import Path

from memhub.index.errors import IndexUnavailable

log = logging.getLogger(__name__)

# milvus-lite refuses other file names (milvus_lite/server.py).
_NAME = re.compile(r"^[a-zA-Z0-9.\-_]+$")
MAX_NAME_CHARS = 36
START_TIMEOUT_S = 60.0


def check_db_file(path: Path) -> None:
    """Raise IndexUnavailable naming the problem if milvus-lite cannot use ``path`` as its data file."""
    if not _NAME.match(path.name) or len(path.name) > MAX_NAME_CHARS:
        raise IndexUnavailable(
            f"Milvus Lite data file {str(path)!r}: the file name must match [a-zA-Z0-9.-_]+ and have at most "
            f"{MAX_NAME_CHARS} characters; set MEMHUB_MILVUS_URI to such a path ending in .db"
        )
    if path.is_dir():
        raise IndexUnavailable(
            f"Milvus Lite data file {str(path)!r} is a directory (an index made by Milvus Lite 3.x, which memhub no "
            "longer uses); move it away or choose another file, then start the hub: it rebuilds the index from Postgres"
        )
    if not path.parent.is_dir():
        raise IndexUnavailable(f"Milvus Lite data file {str(path)!r}: the directory {str(path.parent)!r} does not exist")


def _binary() -> tuple[Path, dict[str, str]]:
    """The milvus binary shipped in the milvus-lite wheel and the environment it runs in."""
    try:
        import warnings

        with warnings.catch_warnings():
            # milvus_lite/__init__ imports pkg_resources, which warns that it is deprecated.
            warnings.simplefilter("ignore")
            from milvus_lite.server import BIN_PATH
    except ImportError as exc:
        raise IndexUnavailable(
            "the embedded index needs the milvus-lite package (Linux or macOS); install memhub with scripts/setup.sh, "
            "or set MEMHUB_MILVUS_URI to a Milvus server"
        ) from exc
    bin_dir = Path(os.environ.get("BIN_PATH") or BIN_PATH).absolute()
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH")}
    env["LD_LIBRARY_PATH"] = env["DYLD_LIBRARY_PATH"] = str(bin_dir)
    env.setdefault("LOG_LEVEL", "ERROR")
    return bin_dir / "milvus", env


class LiteServer:
    """One milvus-lite process serving ``db_file`` on a unix socket (default) or a TCP address."""

    def __init__(self, db_file: Path, *, address: str | None = None, start_timeout_s: float = START_TIMEOUT_S) -> None:
        """Nothing runs until ``start``.

        Args:
            db_file: the data file (created on first start); its name must match ``[a-zA-Z0-9.-_]+``.
            address: ``host:port`` to serve on TCP (for several hub processes);
                None serves a unix socket beside the data file, for this process only.
            start_timeout_s: how long a start may take before it counts as failed.
        """
        self.db_file = Path(db_file).absolute()
        check_db_file(self.db_file)
        self.address = address
        self._start_timeout = start_timeout_s
        self._lock_path = self.db_file.parent / f".{self.db_file.name}.lock"
        self._log_path = self.db_file.parent / f"{self.db_file.name}.log"
        self.engine_home = self.db_file.parent / f".{self.db_file.name}.home"
        """The engine's $HOME. On the first collection it opens, the engine removes and recreates
        ``$HOME/.cache/milvus`` (its mmap directory, unused by memhub) and fails if the directory is back before it
        creates it; engines sharing a home race there, and the loser fails that call with "Mmap manager has not been
        init" (pymilvus#2981; seen in a CI run with 3 pytest-xdist workers, and in 6 of 60 engines started 4 at a
        time on a busy 2-core machine). A home per data file, kept to one engine by the data file's lock, leaves
        nothing to race for."""
        # A short socket path: unix socket paths are limited to ~107 bytes.
        self._sock_path = Path("/tmp") / f"memhub-milvus-{os.getpid()}-{abs(hash(str(self.db_file))) % 10**8}.sock"
        self._mutex = threading.Lock()
        self._lock_fd: int | None = None
        self._proc: subprocess.Popen | None = None
        self.restarts = 0
        """How many times the process was started again after it died."""

    @property
    def uri(self) -> str:
        """What pymilvus connects to: ``unix:<socket>`` or ``http://host:port``."""
        return f"http://{self.address}" if self.address else f"unix:{self._sock_path}"

    def alive(self) -> bool:
        proc = self._proc
        return proc is not None and proc.poll() is None

    def start(self) -> None:
        """Take the data file's lock and start the process; raise IndexUnavailable saying why it failed."""
        with self._mutex:
            if self.alive():
                return
            self._start_locked()

    def ensure_running(self) -> bool:
        """Start the process again if it died; True if it had to. Raises IndexUnavailable if it will not start."""
        with self._mutex:
            if self._proc is None or self.alive():
                return False  # never started (or stopped on purpose), or fine
            log.warning(
                "Milvus Lite (%s) exited with code %s; starting it again (its log: %s)",
                self.db_file,
                self._proc.returncode,
                self._log_path,
            )
            self._proc = None
            self._start_locked()
            self.restarts += 1
            return True

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the process (it flushes on the way out) and release the data file. Idempotent."""
        with self._mutex:
            proc, self._proc = self._proc, None
            if proc is not None and proc.poll() is None:
                self._unlock()  # the child exits when its lock is released
                try:
                    proc.wait(timeout_s)
                except subprocess.TimeoutExpired:
                    proc.terminate()
                    try:
                        proc.wait(5)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait(5)
            self._unlock()
            if not self.address:
                self._sock_path.unlink(missing_ok=True)

    # -- internals ---------------------------------------------------------------

    def _start_locked(self) -> None:
        binary, env = _binary()
        if self._lock_fd is None:
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                raise IndexUnavailable(
                    f"the Milvus Lite data file {self.db_file} is in use by another process (one process per file); "
                    "stop the other hub, or share the file: run `memhub index-server --data-dir DIR --port PORT` "
                    "and point every hub at MEMHUB_MILVUS_URI=http://127.0.0.1:PORT"
                ) from None
            self._lock_fd = fd
        if not self.address:
            self._sock_path.unlink(missing_ok=True)
        address = self.address or f"unix:{self._sock_path}"
        self.engine_home.mkdir(mode=0o700, exist_ok=True)
        env = {**env, "HOME": str(self.engine_home)}
        log_fd = os.open(self._log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        with os.fdopen(log_fd, "ab") as log_file:
            self._proc = subprocess.Popen(
                [str(binary), str(self.db_file), address, env["LOG_LEVEL"], str(self._lock_path)],
                env=env,
                cwd=str(self.db_file.parent),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
                # Whatever the hub's umask: the data file holds every memory's content, and the
                # unix socket would let anyone who may open it query the index.
                umask=0o077,
            )
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self._start_timeout
        proc = self._proc
        assert proc is not None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise IndexUnavailable(
                    f"Milvus Lite exited at start with code {proc.returncode} (data file {self.db_file}); "
                    f"the end of {self._log_path} says why"
                )
            if self._accepts_connections():
                return
            time.sleep(0.05)
        proc.kill()
        proc.wait(5)
        raise IndexUnavailable(
            f"Milvus Lite did not start within {self._start_timeout:.0f} s (data file {self.db_file}); see {self._log_path}"
        )

    def _accepts_connections(self) -> bool:
        try:
            if self.address:
                host, _, port = self.address.rpartition(":")
                socket.create_connection((host or "127.0.0.1", int(port)), timeout=0.2).close()
            else:
                with socket.socket(socket.AF_UNIX) as s:
                    s.settimeout(0.2)
                    s.connect(str(self._sock_path))
            return True
        except OSError:
            return False

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            try:
                fcntl.lockf(self._lock_fd, fcntl.LOCK_UN)
            finally:
                os.close(self._lock_fd)
                self._lock_fd = None


_registry_lock = threading.Lock()
_registry: dict[Path, tuple[LiteServer, int]] = {}


def acquire(db_file: Path) -> LiteServer:
    """The running server for ``db_file`` in this process, started on first use; pair with ``release``."""
    path = Path(db_file).absolute()
    with _registry_lock:
        if path in _registry:
            server, users = _registry[path]
            _registry[path] = (server, users + 1)
            return server
        server = LiteServer(path)
        server.start()
        _registry[path] = (server, 1)
        return server


def release(server: LiteServer) -> None:
    """One user less; the last one stops the server, freeing the data file for another process."""
    with _registry_lock:
        entry = _registry.get(server.db_file)
        if entry is None:
            return
        if entry[1] > 1:
            _registry[server.db_file] = (server, entry[1] - 1)
            return
        del _registry[server.db_file]
        server.stop()
