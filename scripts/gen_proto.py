"""Regenerate the Python stubs for proto/memhub/v1/*.proto.

Usage: python scripts/gen_proto.py [--out DIR]

The .proto files under proto/ are the API's source; the stubs are written
into the package, under memhub/v1/ (the generated imports are
`from memhub.v1 import ...`). tests/test_proto_stubs.py
regenerates into a temporary folder and fails when the committed stubs differ.
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources
from pathlib import Path

from grpc_tools import protoc

REPO = Path(__file__).resolve().parent.parent
PROTO_ROOT = REPO / "proto"


def proto_files() -> list[Path]:
    """All .proto files of the public API, in a stable order."""
    return sorted(PROTO_ROOT.glob("memhub/**/*.proto"))


def generate(out_dir: Path) -> None:
    """Run protoc for every API file, writing *_pb2.py, *_pb2.pyi and *_pb2_grpc.py under out_dir."""
    well_known = resources.files("grpc_tools") / "_proto"
    args = [
        "protoc",
        f"-I{PROTO_ROOT}",
        f"-I{well_known}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *[str(p.relative_to(PROTO_ROOT)) for p in proto_files()],
    ]
    if protoc.main(args) != 0:
        raise SystemExit("protoc failed; see the messages above")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO, help="output root (default: the repository, so memhub/v1/)")
    generate(parser.parse_args().out)
    print(f"generated stubs for {len(proto_files())} file(s)", file=sys.stderr)


if __name__ == "__main__":
    main()
