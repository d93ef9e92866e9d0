"""The hub processes using an embedded Postgres (``.postgres-users.json``), and the lock that serialises start and stop.

Each user is (pid, process start time), so a pid the system later gives to
another process is not mistaken for a hub. A hub killed with kill -9 leaves
its entry: entries of dead processes are dropped whenever a hub starts or
stops, so the last live hub out still stops the server.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class User:
    pid: int
    started: float

    @staticmethod
    def me() -> User:
        return User(os.getpid(), psutil.Process().create_time())

    def alive(self) -> bool:
        try:
            return abs(psutil.Process(self.pid).create_time() - self.started) < 0.1
        except psutil.Error:
            return False


class Users:
    """The users file of one data directory and its lock file; ``pgdata`` only names the server in log lines."""

    def __init__(self, users_file: Path, lock_file: Path, pgdata: Path) -> None:
        self._users_file = users_file
        self._lock_file = lock_file
        self._pgdata = pgdata

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        fd = os.open(self._lock_file, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released by the kernel if this process dies
            yield
        finally:
            os.close(fd)

    def live(self) -> list[User]:
        try:
            raw = json.loads(self._users_file.read_text())
            users = [User(int(u["pid"]), float(u["started"])) for u in raw]
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
                self._pgdata,
            )
        return live

    def write(self, users: list[User], *, leaving: bool = False) -> None:
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
