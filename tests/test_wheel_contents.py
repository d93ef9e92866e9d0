"""The wheel installs one import package, ``memhub``: nothing that could collide with another project's top level.

The import package was called ``hub`` until issue 23; a project installing memhub got a top-level ``hub``.
Built from a copy of this checkout's files (a ``build/`` folder left in the checkout could hold files since
deleted), with the venv's own setuptools and no network (``--no-build-isolation``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _copy_of_the_checkout(to: Path) -> Path:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO, capture_output=True, text=True, check=True
    )
    for name in listed.stdout.splitlines():
        source = REPO / name
        if source.is_file():  # a file deleted but not yet committed is still listed
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)
    return to


def test_the_wheel_holds_the_memhub_package_and_no_other_top_level_name(tmp_path: Path) -> None:
    source = _copy_of_the_checkout(tmp_path / "src")
    out = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = out.glob("memhub-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/", 1)[0] for name in names if not name.split("/", 1)[0].endswith(".dist-info")}
    assert top == {"memhub"}, sorted(top)
    # The parts a user imports are in it: the client, the bridge, the stubs, the console's templates.
    for expected in (
        "memhub/client.py",
        "memhub/bridge/main.py",
        "memhub/v1/memory_pb2.py",
        "memhub/v1/memory_pb2.pyi",
        "memhub/db/migrations/env.py",
    ):
        assert expected in names, expected
    assert any(n.startswith("memhub/console/templates/") and n.endswith(".html") for n in names)
    (metadata,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    entry_points = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "memhub = memhub.cli.main:main" in entry_points and "memhub-bridge = memhub.bridge.main:main" in entry_points
