"""One process serves a Milvus Lite data file: `memhub serve` (or `memhub index-server`) holds a lock beside it.

Milvus Lite opens a data file in one process only. A second `memhub serve` on the same data directory used to
find out last: after joining the embedded Postgres, migrating it and loading the model, its Milvus Lite
refused the file, 2 s later on a quiet machine and 26 s on a loaded one, with a message that did not say
who held it. The lock is taken first, before anything heavy is imported, so the second hub is refused at
once with the holder's pid and what to do.

The lock is ``flock`` on ``.<data file>.serving`` in the data file's directory, held for the life of the
process (the kernel drops it when the process ends, even by kill -9, so it never goes stale); the file
records the holder's pid, command and start time, and its address once it listens. Hubs on an external
Milvus (or on `memhub index-server`, which holds this lock itself) take no lock: several hubs may share a
data directory's embedded Postgres (memhub/db/embedded_pg.py).
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from memhub.errors import StartupError

LITE_FILE_NAME = "milvus-index.db"
"""The Milvus Lite data file in the data directory, unless MEMHUB_MILVUS_URI names another."""

_held: dict[Path, ServingLock] = {}  # this process's locks: released when the process ends


class ServingLock:
    """The lock on one data file, held by this process."""

    def __init__(self, path: Path, fd: int, record: dict[str, object]) -> None:
        self.path = path
        self._fd = fd
        self._record = record

    def note_address(self, address: str) -> None:
        """Add where this process serves to the record a refused process shows."""
        self._record["address"] = address
        _write(self._fd, self._record)

    def release(self) -> None:
        """Drop the lock before the process ends (tests and scripts that open and close hubs in one process)."""
        if _held.get(self.path) is self:
            del _held[self.path]
            os.close(self._fd)


def lite_file(data_dir: Path, milvus_uri: str | None) -> Path | None:
    """The Milvus Lite data file a hub with these settings opens itself; None when its index is a server."""
    if milvus_uri and "://" in milvus_uri:
        return None
    return Path(milvus_uri).expanduser() if milvus_uri else data_dir / LITE_FILE_NAME


def lock_path(data_file: Path) -> Path:
    return data_file.with_name(f".{data_file.name}.serving")


def lock_for_serving(data_file: Path, role: str) -> ServingLock:
    """Take the lock on ``data_file`` for this process (``role``: "memhub serve", "memhub index-server"); a
    StartupError naming the process that holds it, and what to do, when another does. The data file's
    directory must exist; OSError (with the file's name) when the lock file cannot be made or written
    (memhub.data_dir.startup_problem words it for the operator)."""
    path = lock_path(data_file.resolve())
    if path in _held:
        return _held[path]
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _read(fd)
        os.close(fd)
        raise StartupError(_refusal(data_file, path, holder)) from None
    record: dict[str, object] = {
        "pid": os.getpid(),
        "command": role,
        "started_at": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    try:
        _write(fd, record)
    except OSError:
        os.close(fd)
        raise
    lock = ServingLock(path, fd, record)
    _held[path] = lock
    return lock


def _refusal(data_file: Path, path: Path, holder: dict[str, object]) -> str:
    pid = holder.get("pid")
    who = f"{holder.get('command') or 'another memhub process'}"
    details = [f"pid {pid}" if isinstance(pid, int) else "", f"since {holder['started_at']}" if holder.get("started_at") else ""]
    if holder.get("address"):
        details.append(f"serving on {holder['address']}")
    said = ", ".join(d for d in details if d)
    stop = "Stop it first"
    if isinstance(pid, int):
        stop += f" (kill {pid}: it stops within seconds, keeping every acknowledged write)"
    return (
        f"the data directory {data_file.parent} is in use: {who} ({said}) holds its Milvus Lite file {data_file.name} "
        f"(lock {path}), and Milvus Lite opens a file in one process only. {stop}, or start this hub with another "
        "--data-dir. To run several hubs on one machine, share the index with `memhub index-server` "
        "(MEMHUB_MILVUS_URI=http://127.0.0.1:PORT)."
    )


def _read(fd: int) -> dict[str, object]:
    try:
        raw = os.pread(fd, 4096, 0)
        record = json.loads(raw.decode()) if raw.strip() else {}
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _write(fd: int, record: dict[str, object]) -> None:
    data = (json.dumps(record) + "\n").encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
