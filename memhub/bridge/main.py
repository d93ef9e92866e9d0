"""`memhub-bridge`: one agent's MCP bridge to the hub (the same command as `memhub bridge`).

    MEMHUB_TOKEN=$(cat planner.jwt) memhub-bridge --hub 127.0.0.1:50051             # stdio
    memhub-bridge --hub 127.0.0.1:50051 --token-file planner.jwt --transport http   # streamable HTTP

Also runnable as `python -m memhub.bridge.main`.
"""

from __future__ import annotations

import argparse
import os
import sys

# gRPC's C core prints INFO lines ("Got goaway ... connection idle") on stderr unless told otherwise before
# it is imported; a command line tool should show its own messages and real errors only.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

from memhub import __version__
from memhub.bridge import cli
from memhub.cli.arguments import StrictArgumentParser


def build_parser() -> argparse.ArgumentParser:
    parser = StrictArgumentParser(
        prog="memhub-bridge",
        description="Run one agent's MCP bridge to the memhub hub (stdio by default, streamable HTTP with --transport http).",
    )
    parser.add_argument("--version", action="version", version=f"memhub-bridge {__version__}")
    cli.add_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    return cli.run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
