"""Command-line arguments of `memhub bridge` and `memhub-bridge` (the same arguments), and starting the bridge.

This module imports only the standard library at the top so that `memhub
--help` stays fast; the SDK, gRPC and OpenTelemetry load when a bridge runs.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from hub.cli.arguments import Refused, refuse_token_option

if TYPE_CHECKING:  # only for annotations: importing them costs the SDK and gRPC (see the module docstring)
    from mcp_bridge.config import BridgeSettings
    from mcp_bridge.server import Bridge

DEFAULT_HUB = "127.0.0.1:50051"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The bridge's options, shared by both commands."""
    env = os.environ
    p.add_argument("--hub", default=env.get("MEMHUB_ADDRESS", DEFAULT_HUB), help="hub address HOST:PORT (MEMHUB_ADDRESS)")
    p.add_argument(
        "--token-file",
        type=Path,
        default=env.get("MEMHUB_TOKEN_FILE"),
        help="file holding the agent's hub JWT (MEMHUB_TOKEN_FILE); or put the token itself in MEMHUB_TOKEN",
    )
    refuse_token_option(p)
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="stdio (default) or streamable HTTP")
    p.add_argument("--host", default="127.0.0.1", help="HTTP: address to listen on (default 127.0.0.1, loopback only)")
    p.add_argument("--port", type=int, default=None, help="HTTP: port (default 8765; 0 picks a free one, printed on stderr)")
    p.add_argument(
        "--http-token-file",
        type=Path,
        default=env.get("MEMHUB_BRIDGE_HTTP_TOKEN_FILE"),
        help="HTTP: file holding the bearer token clients must send; or put it in MEMHUB_BRIDGE_HTTP_TOKEN",
    )
    p.add_argument(
        "--http-token", action=Refused, why="Use --http-token-file FILE or the MEMHUB_BRIDGE_HTTP_TOKEN environment variable."
    )
    p.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="HTTP: also accept this browser Origin, e.g. https://app.example.com or http://devbox:* (repeatable; "
        "MEMHUB_BRIDGE_ALLOWED_ORIGINS, comma-separated). Loopback origins are accepted by default; "
        "requests without an Origin (non-browser clients) always are",
    )
    p.add_argument(
        "--config",
        type=Path,
        default=env.get("MEMHUB_BRIDGE_CONFIG"),
        help="narrowing TOML: namespaces, default_namespace, tools",
    )
    p.add_argument("--hub-tls", action="store_true", help="connect to the hub over TLS (system CA roots unless --hub-ca)")
    p.add_argument("--hub-ca", type=Path, help="PEM file of the CA that signed the hub's certificate (implies --hub-tls)")
    p.add_argument(
        "--deadline",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="time per tool call to reach the hub, retries included (10)",
    )
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"), help="stderr log level")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register `memhub bridge`."""
    p = sub.add_parser(
        "bridge",
        help="run an MCP server that gives one agent memory tools on the hub",
        description="Run one agent's MCP bridge to the hub (stdio by default, streamable HTTP with --transport http).",
    )
    add_arguments(p)
    p.set_defaults(func=run)


def settings_from_args(args: argparse.Namespace, env: Mapping[str, str] = os.environ) -> BridgeSettings:
    """Resolve arguments, secrets and files into BridgeSettings; raises SettingsError or ConfigError."""
    from mcp_bridge.config import (
        DEFAULT_HTTP_PORT,
        LOOPBACK_ORIGINS,
        BridgeSettings,
        SettingsError,
        origins_from_env,
        read_secret,
    )
    from mcp_bridge.hub_calls import RetryPolicy
    from mcp_bridge.hub_client import HubTls
    from mcp_bridge.narrowing import load_narrowing

    token = read_secret(args.token_file, env, "MEMHUB_TOKEN", "hub token")
    if token is None:
        raise SettingsError(
            "no hub token: set MEMHUB_TOKEN or pass --token-file FILE "
            "(an operator issues one with `memhub token issue --agent NAME`)"
        )
    http_token = None
    if args.transport == "http":
        http_token = read_secret(args.http_token_file, env, "MEMHUB_BRIDGE_HTTP_TOKEN", "HTTP bearer token")
    return BridgeSettings(
        hub_address=args.hub,
        token=token,
        transport=args.transport,
        host=args.host,
        port=DEFAULT_HTTP_PORT if args.port is None else args.port,
        http_token=http_token,
        allowed_origins=tuple(dict.fromkeys([*LOOPBACK_ORIGINS, *origins_from_env(env), *args.allow_origin])),
        narrowing=load_narrowing(args.config),
        hub_tls=HubTls(ca_file=args.hub_ca) if (args.hub_tls or args.hub_ca) else None,
        retry=RetryPolicy(deadline_s=args.deadline),
    )


def run(args: argparse.Namespace) -> int:
    """Start the bridge and serve until the client goes away (stdio) or SIGTERM/SIGINT arrives."""
    import anyio

    from hub import logs
    from hub.errors import HubError
    from hub.telemetry import TelemetryConfig, setup_tracing, shutdown_tracing
    from mcp_bridge.config import SettingsError
    from mcp_bridge.narrowing import ConfigError
    from mcp_bridge.server import build_bridge

    # Before anything can log: stdout is the protocol channel under stdio, so every log line goes to stderr.
    logs.configure(args.log_level)
    prog = "memhub bridge" if getattr(args, "command", None) == "bridge" else "memhub-bridge"
    try:
        settings = settings_from_args(args)
        setup_tracing(TelemetryConfig.from_env(None, "memhub-bridge"))
    except (SettingsError, ConfigError, HubError, ValueError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2

    bridge = build_bridge(settings)
    threading.Thread(target=_probe_hub, args=(bridge,), name="hub-probe", daemon=True).start()

    def stop(signum: int, frame: object) -> None:
        # Flush the spans still queued, then leave at once. Unwinding normally is not an option: under
        # stdio the SDK reads stdin in a worker thread that only returns when the client closes the pipe,
        # so an exception here would hang the exit. Under HTTP uvicorn catches the signal first, shuts
        # down gracefully, and then re-raises it, which lands here.
        try:
            bridge.close()
            shutdown_tracing()
        finally:
            os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        if settings.transport == "stdio":
            anyio.run(bridge.server.run_stdio_async)
        else:
            from mcp_bridge.http_app import bind, build_http_app, serve_http, url_of

            app = build_http_app(
                bridge.server,
                bearer_token=settings.http_token or "",
                allowed_origins=settings.allowed_origins,
                host=settings.host,
            )
            try:
                sock = bind(settings.host, settings.port)
            except OSError as exc:
                print(f"{prog}: {exc}", file=sys.stderr)
                return 1
            print(
                f"{prog}: streamable HTTP for agent {settings.agent_id!r} on {url_of(sock, settings.host)}",
                file=sys.stderr,
                flush=True,
            )
            anyio.run(serve_http, app, sock)
    finally:
        bridge.close()
        shutdown_tracing()
    return 0


def _probe_hub(bridge: Bridge) -> None:
    """Warn early (on stderr) when the hub does not answer; tool calls still retry on their own."""
    import logging

    if not bridge.hub.healthy(timeout_s=3.0):
        logging.getLogger("mcp_bridge").warning(
            "the hub is not answering health checks yet; tool calls will retry and report it if it stays down",
            extra={"hub": bridge.settings.hub_address},
        )
