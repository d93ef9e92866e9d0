"""Where client commands find the hub that `memhub serve` started on this account.

`memhub serve --port 50999 --data-dir /srv/memhub` records the address it
listens on and its data directory in ``~/.config/memhub/client.json``
(``$XDG_CONFIG_HOME/memhub``; ``MEMHUB_CLIENT_CONFIG`` names another file,
``none`` turns it off). `memhub search`, `memhub token issue` and the other
client commands read it when neither a flag nor ``MEMHUB_ADDRESS`` /
``MEMHUB_DATA_DIR`` says otherwise, so the path from `serve` to a first
search works with whatever flags `serve` got, port 0 included. The file
holds no secret (the token secret stays in the data directory); it is
written atomically, mode 0600, and removed when that hub stops.

Resolution order for each setting: flag, environment variable, this file,
built-in default.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

ENV = "MEMHUB_CLIENT_CONFIG"
DEFAULT_ADDRESS = "127.0.0.1:50051"
_WILDCARDS = {"0.0.0.0": "127.0.0.1", "::": "[::1]", "[::]": "[::1]", "": "127.0.0.1"}


@dataclass(frozen=True)
class ClientConfig:
    address: str
    data_dir: Path
    pid: int
    path: Path
    """The file this was read from, named in messages so a user knows where a setting came from."""


def config_path(env: os._Environ[str] | dict[str, str] | None = None) -> Path | None:
    """The client config file, or None when MEMHUB_CLIENT_CONFIG is ``none``."""
    env = os.environ if env is None else env
    chosen = env.get(ENV, "").strip()
    if chosen.lower() in ("none", "off"):
        return None
    if chosen:
        return Path(chosen).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "memhub" / "client.json"


def connect_address(host: str, port: int) -> str:
    """The address a client on this machine dials for a hub listening on ``host:port`` (a wildcard means loopback)."""
    host = _WILDCARDS.get(host, host)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


def write(address: str, data_dir: Path, pid: int | None = None) -> Path | None:
    """Record the running hub for client commands; returns the file, or None when turned off or not writable."""
    path = config_path()
    if path is None:
        return None
    record = {"address": address, "data_dir": str(data_dir), "pid": pid if pid is not None else os.getpid()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".client-", suffix=".json")  # mode 0600
        with os.fdopen(fd, "w") as f:
            json.dump(record, f, indent=2)
            f.write("\n")
        os.replace(tmp, path)  # readers never see half a file
    except OSError as exc:
        # Not fatal: the hub serves without it; the start-up lines print the flags to pass instead.
        log.warning("could not record the hub's address for client commands in %s: %s", path, exc)
        return None
    return path


def read() -> ClientConfig | None:
    """The recorded hub, or None when there is none (or the file is turned off or unreadable, with a warning)."""
    path = config_path()
    if path is None or not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text())
        found = ClientConfig(address=str(raw["address"]), data_dir=Path(raw["data_dir"]), pid=int(raw["pid"]), path=path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("ignoring %s (%s); delete it or start `memhub serve` again to rewrite it", path, exc)
        return None
    # A hub that was killed (not stopped) leaves its record behind: its address would lead nowhere.
    return found if _alive(found.pid) else None


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, another user's: not ours to judge
    return True


def remove_if_ours(pid: int | None = None) -> None:
    """Delete the file at shutdown when it still describes this process (another hub may have replaced it)."""
    current = read()
    if current is not None and current.pid == (pid if pid is not None else os.getpid()):
        try:
            current.path.unlink()
        except OSError:
            pass
