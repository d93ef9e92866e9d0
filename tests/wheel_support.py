"""Building memhub's wheel in a test: from a copy of this checkout's files, with the venv's own setuptools.

A copy, not the checkout itself: a ``build/`` folder left in the checkout could hold files since deleted,
and building writes ``*.egg-info`` next to the sources. Symbolic links stay links (memhub/shipped_policies
points at policies/, and the wheel must carry what it points at).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def copy_of_the_checkout(to: Path) -> Path:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO, capture_output=True, text=True, check=True
    )
    for name in listed.stdout.splitlines():
        source, target = REPO / name, to / name
        if source.is_symlink():
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(source), target)
        elif source.is_file():  # a file deleted but not yet committed is still listed
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return to


def build_wheel(work: Path) -> Path:
    """`python -m build --wheel` on a copy of the checkout (no isolation: this venv's setuptools, no network)."""
    source = copy_of_the_checkout(work / "src")
    out = work / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = out.glob("memhub-*.whl")
    return wheel
