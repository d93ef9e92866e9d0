"""How a client command reaches the hub: the --hub and --token-file options, the token, the address, the client."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from memhub import client_config
from memhub.cli.arguments import refuse_token_option
from memhub.client_config import DEFAULT_ADDRESS

if TYPE_CHECKING:
    from memhub.client import MemhubClient


def add_connection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--hub",
        default=None,
        help="hub address HOST:PORT (default: MEMHUB_ADDRESS, else the hub `memhub serve` recorded in "
        f"~/.config/memhub/client.json, else {DEFAULT_ADDRESS})",
    )
    p.add_argument(
        "--token-file",
        type=Path,
        default=os.environ.get("MEMHUB_TOKEN_FILE"),
        help="file holding the agent's JWT (MEMHUB_TOKEN_FILE); or put the token itself in MEMHUB_TOKEN",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    refuse_token_option(p)


def read_token(args: argparse.Namespace) -> str | None:
    """The caller's JWT: --token-file / MEMHUB_TOKEN_FILE, else MEMHUB_TOKEN. Never an argv value (ps shows argv)."""
    if args.token_file:
        try:
            return Path(args.token_file).read_text().strip()
        except OSError as exc:
            raise ValueError(f"cannot read the token file {args.token_file}: {exc.strerror}") from None
    token = os.environ.get("MEMHUB_TOKEN")
    if token is not None and not token.strip():
        # Typically `export MEMHUB_TOKEN=$(memhub token issue ...)` whose command failed: say so, not "missing".
        raise ValueError("MEMHUB_TOKEN is set but empty (did the `memhub token issue` that set it fail? run it alone to see why)")
    return token.strip() if token else None


def hub_address(args: argparse.Namespace) -> str:
    """--hub, else MEMHUB_ADDRESS, else the address `memhub serve` recorded, else the default.

    Records where the address came from in ``args.hub_source`` for the "is the hub running?" hint.
    """
    if args.hub:
        args.hub_source = "--hub"
    elif os.environ.get("MEMHUB_ADDRESS", "").strip():
        args.hub, args.hub_source = os.environ["MEMHUB_ADDRESS"].strip(), "MEMHUB_ADDRESS"
    elif (recorded := client_config.read()) is not None:
        args.hub, args.hub_source = recorded.address, f"recorded by `memhub serve` in {recorded.path}"
    else:
        args.hub, args.hub_source = DEFAULT_ADDRESS, "the default"
    return args.hub


def client_from(args: argparse.Namespace) -> MemhubClient:
    from memhub.client import MemhubClient  # gRPC and the stubs: loaded by the commands that call the hub, not by parsers

    token = read_token(args)
    return MemhubClient(hub_address(args), token=token)
