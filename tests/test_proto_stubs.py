"""The committed Python stubs must be exactly what scripts/gen_proto.py generates now."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _load_generator():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("gen_proto", ROOT / "scripts" / "gen_proto.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_stubs_match_the_proto_files(tmp_path: Path) -> None:
    gen = _load_generator()
    gen.generate(tmp_path)
    generated = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert generated, "protoc produced nothing"
    committed = sorted(p.relative_to(ROOT) for p in (ROOT / "memhub" / "v1").rglob("*_pb2*.py*") if "__pycache__" not in p.parts)
    assert committed == generated, "stub files differ from the .proto files; run: .venv/bin/python scripts/gen_proto.py"
    for rel in generated:
        assert (ROOT / rel).read_bytes() == (tmp_path / rel).read_bytes(), (
            f"{rel} is out of date; run: .venv/bin/python scripts/gen_proto.py"
        )
