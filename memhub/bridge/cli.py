"""Command-line arguments of `memhub bridge` and `memhub-bridge` (the same arguments), and starting the bridge.

This module imports only the standard library at the top so that `memhub
--help` stays fast; the SDK, gRPC and OpenTelemetry load when a bridge runs.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import signal
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from memhub.cli.arguments import Refused, refuse_token_option

if TYPE_CHECKING:  # only for annotations: importing them costs the SDK and gRPC (see the module docstring)
    import grpc

    from memhub.bridge.config import BridgeSettings
    from memhub.bridge.server import Bridge, PreparedBridge
    from memhub.telemetry_config import TelemetryConfig

DEFAULT_HUB = "127.0.0.1:50051"

log = logging.getLogger("memhub.bridge")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The bridge's options, shared by both commands."""
    env = os.environ
    p.add_argument(
        "--hub",
        default=None,
        help="hub address HOST:PORT (default: MEMHUB_ADDRESS, else the hub `memhub serve` recorded in "
        f"~/.config/memhub/client.json, else {DEFAULT_HUB})",
    )
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
    p.add_argument(
        "--tools",
        default=env.get("MEMHUB_BRIDGE_TOOLS"),
        metavar="SET",
        help="the tools to expose (MEMHUB_BRIDGE_TOOLS): core (write, search, forget, preferences, recall_context), "
        "all (default), or tool names separated by commas, e.g. core,mark_used; only ever fewer than --config allows",
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
    p.add_argument(
        "--startup-wait",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="how long the start-up check waits for an unreachable hub before the bridge exits (5)",
    )
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"), help="stderr log level")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `memhub bridge` and `memhub bridge init`."""
    from memhub.bridge import init_cmd  # standard library and token issuing only, like this module

    p = sub.add_parser(
        "bridge",
        help="run an MCP server that gives one agent memory tools on the hub (`memhub bridge init` sets one up)",
        description="Run one agent's MCP bridge to the hub (stdio by default, streamable HTTP with --transport http). "
        "`memhub bridge init --agent NAME` writes the agent's token file and prints the client configuration.",
    )
    add_arguments(p)
    p.set_defaults(func=run)
    init_cmd.add_parser(p.add_subparsers(dest="bridge_command", metavar="[init]"))


def hub_address(args: argparse.Namespace, env: Mapping[str, str] = os.environ) -> tuple[str, str]:
    """--hub, else MEMHUB_ADDRESS, else the address `memhub serve` recorded, else the default; and where it came from."""
    if args.hub:
        return args.hub, "from --hub"
    if env.get("MEMHUB_ADDRESS", "").strip():
        return env["MEMHUB_ADDRESS"].strip(), "from MEMHUB_ADDRESS"
    from memhub import client_config

    recorded = client_config.read()
    if recorded is not None:
        return recorded.address, f"recorded by `memhub serve` in {recorded.path}"
    return DEFAULT_HUB, "the default address"


def token_source(args: argparse.Namespace) -> str:
    """Where the agent's token came from, for messages (never the token itself)."""
    return f"from the file {args.token_file}" if args.token_file else "from MEMHUB_TOKEN"


def settings_from_args(args: argparse.Namespace, env: Mapping[str, str] = os.environ) -> BridgeSettings:
    """Resolve arguments, secrets and files into BridgeSettings; raises SettingsError or ConfigError."""
    from memhub.bridge.config import (
        DEFAULT_HTTP_PORT,
        LOOPBACK_ORIGINS,
        BridgeSettings,
        SettingsError,
        origins_from_env,
        read_secret,
    )
    from memhub.bridge.hub_options import HubTls, RetryPolicy
    from memhub.bridge.narrowing import load_narrowing, select_tools

    if not args.startup_wait >= 0:  # NaN fails too
        raise SettingsError(f"--startup-wait {args.startup_wait} must be 0 or more seconds")
    token = read_secret(args.token_file, env, "MEMHUB_TOKEN", "hub token")
    if token is None:
        raise SettingsError(
            "no hub token: set MEMHUB_TOKEN or pass --token-file FILE "
            "(an operator issues one with `memhub token issue --agent NAME`)"
        )
    http_token = None
    if args.transport == "http":
        http_token = read_secret(args.http_token_file, env, "MEMHUB_BRIDGE_HTTP_TOKEN", "HTTP bearer token")
    narrowing = load_narrowing(args.config)
    if args.tools is not None:
        source = "--tools" if env.get("MEMHUB_BRIDGE_TOOLS") != args.tools else "MEMHUB_BRIDGE_TOOLS"
        narrowing = narrowing.with_tools(select_tools(args.tools, source), source)
    return BridgeSettings(
        hub_address=hub_address(args, env)[0],
        token=token,
        transport=args.transport,
        host=args.host,
        port=DEFAULT_HTTP_PORT if args.port is None else args.port,
        http_token=http_token,
        allowed_origins=tuple(dict.fromkeys([*LOOPBACK_ORIGINS, *origins_from_env(env), *args.allow_origin])),
        narrowing=narrowing,
        hub_tls=HubTls(ca_file=args.hub_ca) if (args.hub_tls or args.hub_ca) else None,
        retry=RetryPolicy(deadline_s=args.deadline),
    )


def run(args: argparse.Namespace) -> int:
    """Start the bridge and serve until the client goes away (stdio) or SIGTERM/SIGINT arrives."""
    # The start makes a few hundred thousand objects that live as long as the process (the SDK's ~590 pydantic
    # models, the tools', gRPC's), and the cyclic collector, run every few hundred allocations, traversed them
    # again and again while they were made: ~10% of the start's CPU. It is off until the bridge is built; then
    # they are moved out of its way for good (gc.freeze) and it collects what tool calls leave, as usual.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _serve(args, collecting)
    finally:
        if collecting:
            _collect_from_now_on()


def _collect_from_now_on() -> None:
    """The bridge is built: what exists now lives as long as the process; collect cycles from here on."""
    gc.freeze()
    gc.enable()


def _serve(args: argparse.Namespace, collecting: bool) -> int:
    """`run`, with the cyclic garbage collector off; `collecting`: turn it on once the bridge is built.

    What an MCP client waits for at start is the answer to `initialize`, so before it the bridge does only
    what that answer or the start-up check needs: the settings, the token's claims, one call to the hub on a
    raw channel, and the server with its name, instructions and capabilities. The hub client, the tools and
    the resources are built after that (`PreparedBridge.finish`): under stdio in a thread while the
    handshake is answered (requests that need them wait for them: start_gate.py), under HTTP before it
    listens. Tracing, when configured, is set up first, so a trace file that cannot be written still stops
    the start and the handshake is traced; when it is off nothing of the OpenTelemetry SDK loads.
    """
    import anyio

    from memhub import logs
    from memhub.bridge.config import SettingsError
    from memhub.bridge.hub_options import open_channel
    from memhub.bridge.narrowing import ConfigError
    from memhub.bridge.startup import HubProbe, StartupError, check_hub, check_token
    from memhub.errors import HubError
    from memhub.telemetry_config import TelemetryConfig

    # Before anything can log: stdout is the protocol channel under stdio, so every log line goes to stderr.
    logs.configure(args.log_level)
    prog = "memhub bridge" if getattr(args, "command", None) == "bridge" else "memhub-bridge"
    try:
        settings = settings_from_args(args)
        tracing = _setup_tracing(TelemetryConfig.from_env(None, "memhub-bridge"))
        channel = open_channel(settings.hub_address, settings.hub_tls)  # ValueError: an unreadable CA file
    except (SettingsError, ConfigError, HubError, ValueError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        _shutdown_tracing()  # set up when only the channel failed
        return 2

    # Before serving: a client that started this bridge should see a broken set-up as a server that
    # failed to start, with the reason in its log, not as tool errors later in a conversation. The hub's
    # answer is awaited only after the server is prepared: the call goes out first and travels while the
    # MCP SDK loads (HubProbe.start), and a bridge that fails the check still exits before it serves.
    try:
        claims = check_token(settings.token, token_source(args))
        probe = HubProbe(_traced(channel) if tracing else channel, settings.token)
        probe.start(args.startup_wait)
        from memhub.bridge.server import prepare_bridge

        prepared = prepare_bridge(settings)
        check_hub(probe, settings.hub_address, hub_address(args)[1], claims, args.startup_wait, probe.started)
    except StartupError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        channel.close()
        _shutdown_tracing()
        return 1

    running = _Running(prepared, channel, collecting)

    def stop(signum: int, frame: object) -> None:
        # Flush the spans still queued, then leave at once. Unwinding normally is not an option: under
        # stdio the SDK reads stdin in a worker thread that only returns when the client closes the pipe,
        # so an exception here would hang the exit. Under HTTP uvicorn catches the signal first, shuts
        # down gracefully, and then re-raises it, which lands here.
        try:
            running.close()
            _shutdown_tracing()
        finally:
            os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        if settings.transport == "stdio":
            anyio.run(_run_stdio, running, stop)
        else:
            from memhub.bridge.http_app import bind, build_http_app, serve_http, url_of

            running.finish()
            if collecting:
                _collect_from_now_on()
            app = build_http_app(
                running.prepared.server,
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
        running.close()
        _shutdown_tracing()
    return 0


class _Running:
    """The bridge being served: prepared, then finished (`finish`, from whichever thread builds it)."""

    def __init__(self, prepared: PreparedBridge, channel: grpc.Channel, collecting: bool) -> None:
        self.prepared = prepared
        self.channel = channel
        self.collecting = collecting
        """Whether the garbage collector is to run once the bridge is built (it was on when `run` began)."""
        self.bridge: Bridge | None = None

    def finish(self) -> None:
        """Build the rest of the bridge on the checked channel, then let requests through the start gate."""
        self.bridge = self.prepared.finish(self.channel)
        self.prepared.gate.open()

    def close(self) -> None:
        if self.bridge is not None:
            self.bridge.close()
        else:  # stopped before it was built: only the start-up check's channel is open
            self.channel.close()


def _setup_tracing(config: TelemetryConfig) -> bool:
    """Tracing as configured, and whether it is on; with none configured, the OpenTelemetry SDK is not even
    imported (the API's no-op spans need nothing): the bridge's start-up is what an MCP client waits for."""
    if config.exporter == "none":
        return False
    from memhub.telemetry import setup_tracing

    setup_tracing(config)
    return True


def _traced(channel: grpc.Channel) -> grpc.Channel:
    """`channel` with client spans, for the start-up check when tracing is on (its call is a trace of its own, as
    it was when the check went through the hub client); with tracing off the instrumentation stays unloaded."""
    from memhub.client_channel import traced_channel

    return traced_channel(channel)


def _shutdown_tracing() -> None:
    if "memhub.telemetry" in sys.modules:  # set up above, or by whoever imported it in this process
        from memhub.telemetry import shutdown_tracing

        shutdown_tracing()


async def _run_stdio(running: _Running, stop: Callable[[int, object], None]) -> None:
    """The stdio server, finishing the bridge in a thread meanwhile, with SIGTERM and SIGINT taken through the
    event loop.

    The thread builds what the handshake does not need (see `run`); requests that need it wait at the start
    gate. The server's loop keeps answering while the thread runs: both share the interpreter, so the build
    slows the handshake's few milliseconds of work, and the handshake does not wait for the build.

    A signal may be delivered to any thread (the SDK's stdin reader, gRPC's); Python runs a handler set with
    signal.signal only when the main thread next executes bytecode, and an event loop idle in epoll never
    would. anyio's receiver installs the loop's own handler, whose wake-up pipe the signal writes to from
    whichever thread took it, so the loop wakes at once and calls ``stop``."""
    import anyio
    import anyio.to_thread

    built = anyio.Event()
    gate = running.prepared.gate
    collecting = running.collecting

    async def on_signal() -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                stop(signum, None)

    async def finish() -> None:
        try:
            running.bridge = await anyio.to_thread.run_sync(running.prepared.finish, running.channel)
        except Exception as exc:  # noqa: BLE001 - reported on stderr and to every request that needed the bridge
            log.exception("the bridge failed to finish building")
            gate.fail(f"{type(exc).__name__}: {exc}")
        else:
            gate.open()
        if collecting:
            _collect_from_now_on()
        built.set()

    async with anyio.create_task_group() as group:
        group.start_soon(on_signal)
        group.start_soon(finish)
        await running.prepared.server.run_stdio_async()
        # A client that left at once still leaves a bridge that was built (and said so: "bridge ready").
        await built.wait()
        group.cancel_scope.cancel()
