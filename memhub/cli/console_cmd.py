"""`memhub console`: the web console on its own, calling a running hub over gRPC (memhub/console)."""

from __future__ import annotations

import argparse
import os
import signal
from pathlib import Path

from memhub import logs
from memhub.cli.arguments import refuse_token_option
from memhub.cli.hub_connection import hub_address


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("console", help="serve the web console for a running hub (browse, search, audit, policies)")
    p.add_argument("--hub", default=None, help="the hub's gRPC address HOST:PORT (default: as the client commands find it)")
    p.add_argument("--host", default=None, help="interface to listen on (MEMHUB_CONSOLE_HOST, default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="HTTP port (MEMHUB_CONSOLE_PORT; default any free port)")
    p.add_argument(
        "--token-file",
        type=Path,
        default=None,
        help="the local operator's token (MEMHUB_CONSOLE_TOKEN_FILE): prints a private sign-in link that uses it",
    )
    p.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error"],
        help="least severe log lines shown on stderr (default warning)",
    )
    refuse_token_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from memhub.console.config import ConsoleConfig
    from memhub.console.server import ConsoleServer

    logs.configure(args.log_level)
    if args.port is not None and not 0 <= args.port <= 65535:
        raise ValueError(f"--port {args.port} is out of range (0 to 65535)")
    if args.token_file is not None and not args.token_file.is_file():
        raise ValueError(f"--token-file {args.token_file}: no such file")
    config = ConsoleConfig.from_env(
        os.environ, hub_address=hub_address(args), host=args.host, port=args.port, token_file=args.token_file
    )
    server = ConsoleServer(config)
    print(f"memhub console: {server.url} (calling the hub at {config.hub_address}, {args.hub_source})", flush=True)
    local = server.local_signin_url()
    if local:
        print(f"  sign in with {config.token_file}: {local}", flush=True)
    else:
        print("  sign in with a token: memhub token issue --agent ops --groups admins --ttl 8h", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: server.stop_soon())
    try:
        server.run()  # SIGINT ends it (uvicorn's own handler in the main thread)
    finally:
        server.stop()
    return 0
