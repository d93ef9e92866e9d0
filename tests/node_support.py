"""The TypeScript client's npm dependencies (clients/typescript), installed with `npm ci` when missing or
older than package-lock.json: the TypeScript tests need them, and so does the buf binary the proto checks run
(@bufbuild/buf ships it). Several test workers may ask at once; a file lock lets one install."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "clients" / "typescript"
BUF = PACKAGE / "node_modules" / ".bin" / "buf"


def _installed() -> bool:
    # npm writes node_modules/.package-lock.json at the end of every install.
    marker = PACKAGE / "node_modules" / ".package-lock.json"
    return marker.is_file() and marker.stat().st_mtime >= (PACKAGE / "package-lock.json").stat().st_mtime


def node_modules() -> Path:
    """clients/typescript/node_modules, installed from package-lock.json if needed; fails saying what to do."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        pytest.fail("node and npm are needed for the TypeScript client and the proto checks: install Node.js 20 or newer")
    with open(PACKAGE / ".npm-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _installed():
            proc = subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund"], cwd=PACKAGE, capture_output=True, text=True, timeout=600
            )
            if proc.returncode != 0:
                pytest.fail(f"`npm ci` in {PACKAGE} failed:\n{proc.stdout}\n{proc.stderr}")
    return PACKAGE / "node_modules"


def _newest_source() -> float:
    """The newest mtime among what the build reads: the proto files and the client's own TypeScript and configs."""
    sources = [
        *(REPO / "proto").rglob("*.proto"),
        PACKAGE / "package-lock.json",
        PACKAGE / "tsconfig.json",
        PACKAGE / "buf.gen.yaml",
    ]
    for folder in ("src", "test", "bench", "examples"):
        sources += [p for p in (PACKAGE / folder).rglob("*.ts") if "gen" not in p.relative_to(PACKAGE).parts]
    return max(p.stat().st_mtime for p in sources)


def built_client() -> Path:
    """clients/typescript built (`npm run build`: buf generate, then tsc into dist/) unless dist/ is newer than every
    source. Under the install lock, and only when stale: a second build while another worker's node runs dist/ would
    rewrite its files under it."""
    node_modules()
    stamp = PACKAGE / "dist" / ".built"
    with open(PACKAGE / ".npm-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.is_file() or stamp.stat().st_mtime < _newest_source():
            proc = subprocess.run(["npm", "run", "build"], cwd=PACKAGE, capture_output=True, text=True, timeout=600)
            if proc.returncode != 0:
                pytest.fail(f"`npm run build` in {PACKAGE} failed:\n{proc.stdout}\n{proc.stderr}")
            stamp.touch()
    return PACKAGE / "dist"
