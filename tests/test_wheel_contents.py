"""The wheel installs one import package, ``memhub``: nothing that could collide with another project's top level.

The import package was called ``hub`` until issue 23; a project installing memhub got a top-level ``hub``.
Built with `python -m build` from a copy of this checkout (tests/wheel_support.py).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from wheel_support import build_wheel


def test_the_wheel_holds_the_memhub_package_and_no_other_top_level_name(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
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
        # What a hub installed from the wheel starts on: the default policies and the tokenizer.
        "memhub/shipped_policies/default.cedar",
        "memhub/shipped_policies/schema.cedarschema",
        "memhub/embedding/data/all-MiniLM-L6-v2-tokenizer.json",
    ):
        assert expected in names, expected
    assert any(n.startswith("memhub/console/templates/") and n.endswith(".html") for n in names)
    (metadata,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    entry_points = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "memhub = memhub.cli.main:main" in entry_points and "memhub-bridge = memhub.bridge.main:main" in entry_points
