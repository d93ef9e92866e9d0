"""The local HS256 secret: created on first start, private to its owner.

The embedded (single machine) setup needs a key without any configuration,
and must never run open; so the hub makes one in its data directory. The
file holds 64 random bytes as hex. The HMAC key is the file's text (not the
decoded bytes), stripped of surrounding whitespace, so any JWT tool given
the same string makes tokens the hub accepts.
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from pathlib import Path

from memhub.auth.config import LOCAL_SECRET_NAME
from memhub.errors import StartupError

log = logging.getLogger(__name__)

MIN_SECRET_BYTES = 32
"""RFC 7518 section 3.2: an HS256 key must be at least as long as the hash output (256 bits)."""

_SECRET_RANDOM_BYTES = 64


def ensure_local_secret(data_dir: Path) -> Path:
    """Return data_dir/jwt-secret, creating it (mode 0600) if it does not exist yet.

    An existing file that group or others may access is refused with a
    StartupError saying `chmod 600 <path>`: anyone who can read it can mint
    tokens for any agent.
    """
    data_dir = Path(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / LOCAL_SECRET_NAME
    if not path.exists() and _create(path):
        log.warning(
            "created the local token secret %s (mode 0600); issue a token with: memhub token issue --agent NAME --ttl 1h",
            path,
        )
    check_private(path)
    return path


def check_private(path: Path) -> None:
    """Raise StartupError unless `path` is a regular file with no group or other permissions."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise StartupError(f"cannot read the token secret {path}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise StartupError(f"the token secret {path} is not a regular file")
    if st.st_mode & 0o077:
        raise StartupError(
            f"the token secret {path} is accessible to other users (mode {stat.S_IMODE(st.st_mode):04o}); "
            f"anyone who reads it can mint tokens. Run: chmod 600 {path}"
        )


def load_secret(path: Path) -> bytes:
    """Read an HS256 secret file: its text stripped of surrounding whitespace, at least 32 bytes.

    Raises StartupError naming the file and saying what is expected.
    """
    path = Path(path)
    try:
        data = path.read_bytes().strip()
    except OSError as exc:
        raise StartupError(f"cannot read the HS256 secret file {path}: {exc.strerror}") from None
    if data.startswith(b"-----BEGIN"):
        # A PEM key used as an HMAC secret is the HS/RS confusion attack's precondition; pyjwt refuses it too.
        raise StartupError(
            f"the HS256 secret file {path} holds a PEM key; it must hold a random secret "
            "(e.g. `openssl rand -hex 64`). Public keys go in MEMHUB_JWT_PUBLIC_KEYS"
        )
    if len(data) < MIN_SECRET_BYTES:
        raise StartupError(
            f"the HS256 secret in {path} is {len(data)} bytes; it must be at least {MIN_SECRET_BYTES} "
            "(e.g. `openssl rand -hex 64`)"
        )
    return data


def _create(path: Path) -> bool:
    """Write a new secret to `path` unless another process got there first; True if this call created it.

    The secret is written to a temporary file opened with O_CREAT|O_EXCL and
    mode 0600 (so it is never readable by others, whatever the umask), then
    hard-linked into place: link() fails if the name exists, so two hubs
    starting together agree on one secret, and no reader sees a half-written
    file.
    """
    content = (secrets.token_hex(_SECRET_RANDOM_BYTES) + "\n").encode("ascii")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        try:
            os.write(fd, content)
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:
            # A filesystem without hard links: create the final name exclusively instead.
            return _create_direct(path, content)
        _fsync_dir(path.parent)
        return True
    finally:
        tmp.unlink(missing_ok=True)


def _create_direct(path: Path, content: bytes) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        return False
    try:
        os.write(fd, content)
        os.fsync(fd)
    finally:
        os.close(fd)
    return True


def _fsync_dir(directory: Path) -> None:
    """Make the new name durable: a crash right after start must not lose the secret tokens were issued with."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
