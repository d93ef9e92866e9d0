"""The data directory: private to the hub's user, whatever the umask.

It holds every memory (the embedded Postgres, the Milvus Lite file, whose
rows include the content) and the token secret, so nobody else may list or
open anything in it. The hub creates it mode 0700 and refuses to start on
one that group or others may access, the way it refuses a readable token
secret (memhub/auth/local_secret.py): chmod is the operator's decision, not a
side effect of starting a server. Files the stores create inside are made
private by the processes that create them (a umask of 077 for Milvus Lite,
PostgreSQL's own 0700/0600); files an older memhub left readable are
tightened once here.

One exception, for root only: PostgreSQL refuses to run as root, so the
embedded server then runs as a dedicated user (memhub/db/embedded_pg.py), which
must be able to pass through the data directory to reach its own PGDATA. The
directory is then 0710 with that user's group: traverse, never list or read.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from pathlib import Path

from memhub.errors import StartupError

log = logging.getLogger(__name__)

PRIVATE_DIR_MODE = 0o700
TRAVERSE_ONLY_GROUP_MODE = 0o710


def default_data_dir() -> Path:
    """``$XDG_DATA_HOME/memhub``, else ``~/.local/share/memhub`` (where a hub started without --data-dir keeps its data)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memhub"


def ensure_private_dir(path: Path, *, traverse_group: int | None = None) -> Path:
    """Create ``path`` (0700, parents as needed) or check an existing one; tighten the files directly in it.

    ``traverse_group``: a group allowed to pass through (group bits exactly
    ``--x``, and only with that group id): the embedded Postgres's user when
    the hub runs as root. Raises StartupError naming the directory and the
    command that fixes it when others may list, read or write it, when it is
    not a directory, or when it belongs to another user.
    """
    path = Path(path)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.mkdir(path, PRIVATE_DIR_MODE)
        except FileExistsError:
            pass  # another hub made it at the same moment: check it below like any existing one
        else:
            os.chmod(path, PRIVATE_DIR_MODE)  # mkdir's mode is filtered by the umask; this is not
            log.info("created the data directory %s (mode 0700)", path)
    check_private_dir(path, traverse_group=traverse_group)
    _tighten_files(path)
    return path


def check_private_dir(path: Path, *, traverse_group: int | None = None) -> None:
    """Raise StartupError unless ``path`` is a directory of this user that no one else may list, read or write."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise StartupError(f"cannot use the data directory {path}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise StartupError(f"the data directory {path} is not a directory; set MEMHUB_DATA_DIR (or --data-dir) to one")
    if st.st_uid != os.geteuid():
        raise StartupError(
            f"the data directory {path} belongs to uid {st.st_uid}, not to the user running the hub (uid {os.geteuid()}); "
            f"its memories would be open to that user. Run the hub as its owner, or: chown -R {os.geteuid()} {path}"
        )
    mode = stat.S_IMODE(st.st_mode)
    group_ok = (mode & 0o070) == 0 or (traverse_group is not None and st.st_gid == traverse_group and mode & 0o070 == 0o010)
    if mode & 0o007 or not group_ok:
        raise StartupError(
            f"the data directory {path} is accessible to other users (mode {mode:04o}); it holds every memory "
            f"and the token secret. Run: chmod 700 {path}"
        )


def startup_problem(exc: OSError, data_dir: Path) -> StartupError:
    """One line for a file system error met while starting: the path, why, and what the operator can do.

    Start-up touches many files (the data directory, the token secret, PGDATA, the Milvus Lite file, the
    socket directory); whichever fails first, the operator needs the same three facts, not a traceback.
    """
    path = Path(exc.filename) if exc.filename else Path(data_dir)
    data_dir = Path(data_dir)
    inside = path == data_dir or data_dir in path.parents or path in data_dir.parents  # or on the way to it
    elsewhere = (
        "or give the hub another data directory with --data-dir (MEMHUB_DATA_DIR)"
        if inside
        else "or change the setting that names it"
    )
    code = exc.errno
    if code == errno.EROFS:
        return StartupError(f"cannot write {path}: the file system is read-only. Remount it read-write, {elsewhere}")
    if code in (errno.ENOSPC, errno.EDQUOT):
        return StartupError(
            f"cannot write {path}: no space left on the device (or the user's disk quota is used up). "
            f"Free space there (df {path.parent}), {elsewhere}"
        )
    if code in (errno.EACCES, errno.EPERM):
        return StartupError(
            f"cannot use {path}: permission denied to uid {os.geteuid()}. Give that user access to it "
            f"(it must own the data directory), {elsewhere}"
        )
    if code == errno.ENOENT:
        return StartupError(f"cannot use {path}: it does not exist (a parent directory is missing). Create it, {elsewhere}")
    if code in (errno.ENOTDIR, errno.EEXIST):  # EEXIST: mkdir(parents=True) met a file where a directory goes
        return StartupError(f"cannot use {path}: it, or a part of that path, is not a directory. Fix the path, {elsewhere}")
    return StartupError(f"cannot use {path}: {exc.strerror or exc}. Fix that file system, {elsewhere}")


def _tighten_files(path: Path) -> None:
    """Files of this user directly in the data directory lose their group and other bits (made by an older memhub)."""
    for entry in os.scandir(path):
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or not st.st_mode & 0o077:
            continue
        os.chmod(entry.path, stat.S_IMODE(st.st_mode) & 0o700)
        log.warning("%s was readable by other users (mode %04o); made it private", entry.path, stat.S_IMODE(st.st_mode))
