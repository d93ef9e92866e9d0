"""`memhub serve`: run a hub until SIGINT/SIGTERM.

Tracing is configured from the environment (memhub/telemetry.py):
MEMHUB_TRACES_EXPORTER (otlp | console | file | none), MEMHUB_TRACES_FILE,
and the standard OTEL_* variables (OTEL_EXPORTER_OTLP_ENDPOINT turns OTLP on).
"""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import os
import select
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from memhub import client_config, logs
from memhub.cli.listen_port import refuse_a_taken_port
from memhub.data_dir import default_data_dir, startup_problem
from memhub.data_dir_lock import ServingLock, lite_file, lock_for_serving
from memhub.errors import StartupError

if TYPE_CHECKING:
    from memhub import telemetry
    from memhub.config import HubConfig
    from memhub.console.config import ConsoleConfig
    from memhub.console.server import ConsoleServer

# The hub itself (stores, embedder, gRPC server) is imported by `run`, not here: every memhub command
# builds this parser, and a client command must not pay seconds of imports for a server it does not start.


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="run the hub (embedded Postgres + Milvus Lite unless configured otherwise)")
    p.add_argument("--data-dir", type=Path, help="data directory for the embedded stores (MEMHUB_DATA_DIR)")
    p.add_argument("--host", help="interface to listen on (MEMHUB_HOST, default 127.0.0.1)")
    p.add_argument("--port", type=int, help="gRPC port (MEMHUB_PORT, default 50051; 0 = any free port)")
    p.add_argument("--database-url", help="external PostgreSQL URL (MEMHUB_DATABASE_URL)")
    p.add_argument("--milvus-uri", help="external Milvus URI (MEMHUB_MILVUS_URI)")
    p.add_argument("--no-indexer", action="store_true", help="leave outbox indexing to other replicas")
    p.add_argument(
        "--processes",
        type=int,
        help="hub processes sharing the port and the stores, for more than one core's worth of searches (MEMHUB_PROCESSES, "
        "default 1; see memhub/cli/serve_group.py)",
    )
    # Set by `memhub serve --processes N` on the hub processes it starts (1 to N): share the port, keep a recall
    # journal of its own, print a ready line.
    p.add_argument("--group-member", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument(
        "--metrics-port",
        type=int,
        help="serve Prometheus metrics at http://HOST:PORT/metrics (MEMHUB_METRICS_PORT; default off; 0 = any free port)",
    )
    p.add_argument("--metrics-host", help="interface of the metrics endpoint (MEMHUB_METRICS_HOST, default 127.0.0.1)")
    p.add_argument(
        "--console-port",
        type=int,
        default=None,
        help="also serve the web console on this HTTP port (MEMHUB_CONSOLE_PORT; 0 = any free port; off by default)",
    )
    p.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="least severe log lines shown on stderr (default info: start-up, where it listens, problems)",
    )
    p.set_defaults(func=run)


def config_from_args(args: argparse.Namespace) -> HubConfig:
    """Flags override the matching MEMHUB_* variables; everything is then read once by HubConfig.from_env.

    Overriding at the environment level keeps derived settings consistent:
    e.g. the local token secret follows --data-dir because it is derived from
    the data directory while parsing, not patched afterwards.
    """
    from memhub.config import HubConfig

    config = HubConfig.from_env(flag_env(args))
    member = getattr(args, "group_member", 0)  # `memhub reindex` reads its configuration here too
    if member:
        config = dataclasses.replace(config, server=dataclasses.replace(config.server, group_member=member))
    return config


def flag_env(args: argparse.Namespace) -> dict[str, str]:
    """The environment with the command line's flags applied over the MEMHUB_* variables they name (what the
    hub processes of `--processes N` are started with)."""
    flags = {
        "MEMHUB_DATA_DIR": str(args.data_dir.expanduser().resolve()) if args.data_dir is not None else None,
        "MEMHUB_DATABASE_URL": args.database_url,
        "MEMHUB_MILVUS_URI": args.milvus_uri,
        "MEMHUB_HOST": args.host,
        "MEMHUB_PORT": str(args.port) if args.port is not None else None,
        "MEMHUB_INDEXER": "0" if args.no_indexer else None,
        "MEMHUB_METRICS_PORT": str(args.metrics_port) if args.metrics_port is not None else None,
        "MEMHUB_METRICS_HOST": args.metrics_host,
        "MEMHUB_PROCESSES": str(args.processes) if getattr(args, "processes", None) is not None else None,
    }
    return {**os.environ, **{k: v for k, v in flags.items() if v}}


def run(args: argparse.Namespace) -> int:
    logs.configure(args.log_level)
    # First, before the seconds of imports below: a data directory another hub serves is refused at once.
    lock = claim_data_file(args)
    from memhub import telemetry

    config = config_from_args(args)
    tracing = telemetry.TelemetryConfig.from_env(None, "memhub-hub")  # a bad setting fails before anything starts
    if config.server.processes > 1 and not args.group_member:
        _exit_without_teardown(_serve_group(args, config, lock))
    if config.server.share_port:  # a group member shares the port its group reserved, and dies with the group
        from memhub.cli.serve_group import die_with_group

        die_with_group()
    else:
        refuse_a_taken_port(config.server.host, config.server.port)
    print(f"memhub: starting (data directory {config.store.data_dir})", flush=True)
    telemetry.setup_tracing(tracing)
    try:
        code = _serve(config, tracing, args.console_port, lock)
    finally:
        telemetry.shutdown_tracing()  # after the hub closed: its last spans are exported too
    _exit_without_teardown(code)


def _serve_group(args: argparse.Namespace, config: HubConfig, lock: ServingLock | None) -> int:
    """`--processes N`: this process supervises N hub processes (memhub/cli/serve_group.py) and serves none itself."""
    from memhub.app import prepare_data_dirs, resolve_auth
    from memhub.cli import serve_group

    console = _console_config(args.console_port)  # a bad setting fails here, not in a hub process
    resolved = resolve_auth(config)
    data_file = lite_file(config.store.data_dir, config.store.milvus_uri)
    try:
        if data_file is not None:  # the lock taken early, or taken now that the data directory exists
            prepare_data_dirs(resolved)
            lock = lock_for_serving(data_file, "memhub serve")
    except OSError as exc:
        raise startup_problem(exc, config.store.data_dir) from None
    print(f"memhub: starting {config.server.processes} hub processes (data directory {config.store.data_dir})", flush=True)
    stop = _SignalStop()
    code = serve_group.run(
        config,
        flag_env(args),
        processes=config.server.processes,
        log_level=args.log_level,
        console_port=console.port if console is not None else None,
        stop=stop,
        lock=lock,
        first_steps=lambda address, recorded: _first_steps(resolved, address, recorded),
    )
    if lock is not None:
        lock.release()
    return code


def _exit_without_teardown(code: int) -> NoReturn:
    """Leave a stopped hub at once: run the exit handlers (the embedded Postgres stops there when this was its
    last hub; log handlers flush), then exit without the interpreter's teardown.

    Everything that holds data was closed by then (the stores, the index, the journals, the exporters); what
    the teardown still did was collect the objects of the libraries a hub loads (the model session, gRPC's
    core, the Milvus client): a SIGTERM-to-exit of 0.95-1.53 s with it, 0.17-0.18 s without (load average
    ~15, bench-style runs back to back), for nothing anyone could use.
    """
    atexit._run_exitfuncs()  # the documented exit handlers, in their usual order (atexit has no public way)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def claim_data_file(args: argparse.Namespace, role: str = "memhub serve") -> ServingLock | None:
    """Lock the Milvus Lite file this hub (or `memhub reindex`) will open (memhub/data_dir_lock.py); None when the
    index is a server.

    Read from the flags and the environment as HubConfig reads them, without importing the configuration
    (a second: it loads every part's settings module); _serve locks the configuration's file again, which is
    the same lock unless the two disagree. A data directory that does not exist yet is left alone (no hub can
    hold it, and a refused start must create nothing): _serve locks once it made it.
    """
    if args.data_dir is not None:
        data_dir = args.data_dir.expanduser().resolve()
    elif os.environ.get("MEMHUB_DATA_DIR"):
        data_dir = Path(os.environ["MEMHUB_DATA_DIR"]).expanduser()
    else:
        data_dir = default_data_dir()
    data_file = lite_file(data_dir, args.milvus_uri or os.environ.get("MEMHUB_MILVUS_URI") or None)
    if data_file is None:
        return None
    if not data_file.parent.is_dir():
        return None
    try:
        return lock_for_serving(data_file, role)
    except OSError as exc:  # a read-only or full file system: one line that says what to fix
        raise startup_problem(exc, data_dir) from None


def _serve(
    config: HubConfig,
    tracing: telemetry.TelemetryConfig,
    args_console_port: int | None = None,
    lock: ServingLock | None = None,
) -> int:
    from memhub.api.server import build_server
    from memhub.app import Hub, prepare_data_dirs, resolve_auth
    from memhub.thread_names import name_threads_from_now

    # Before the hub starts any thread: `top -H` and /proc then show which of them spends the CPU.
    name_threads_from_now()
    console_config = _console_config(args_console_port)
    data_file = lite_file(config.store.data_dir, config.store.milvus_uri)
    try:
        if data_file is not None:  # the lock taken early, or taken now that the data directory exists
            prepare_data_dirs(resolve_auth(config))
            lock = lock_for_serving(data_file, "memhub serve")
        hub = Hub.open(config)
    except OSError as exc:  # a read-only, full or foreign data directory: one line that says what to fix
        raise startup_problem(exc, config.store.data_dir) from None
    server, port, health = build_server(hub)
    server.start()
    hub.start_background()
    try:
        console = _start_console(console_config, client_config.connect_address(config.server.host, port))
    except BaseException:  # e.g. the console's port is taken: leave nothing running behind the error
        server.stop(grace=None)
        hub.close()
        raise
    pg = "external" if config.store.database_url else f"embedded, {config.store.data_dir / 'postgres'}"
    policy = hub.policies.current()
    lines = [
        f"memhub: listening on {config.server.host}:{port} (gRPC)",
        f"  postgres:  {pg}",
        f"  milvus:    {config.store.resolved_milvus_uri()}",
        f"  embedding: {hub.embedder.model_id} ({hub.embedder.dimension}-d)",
        f"  policies:  {config.policy.dir} (version {policy.version[:12]}, {len(policy.policy_ids)} policies)",
        f"  traces:    {_describe_tracing(tracing)}",
        f"  metrics:   {hub.metrics.url if hub.metrics else 'off (--metrics-port or MEMHUB_METRICS_PORT serves /metrics)'}",
    ]
    if console is not None:
        lines.append(f"  console:   {console.url} (web console; sign in with an admin token)")
        if console.local_signin_url():
            lines.append(f"             sign in with {console.config.token_file}: {console.local_signin_url()}")
    stop = _SignalStop()
    address = client_config.connect_address(config.server.host, port)
    if lock is not None:
        lock.note_address(address)
    recorded = client_config.write(address, config.store.data_dir)
    if recorded is not None:
        lines.append(f"  clients:   {recorded} records this address and data directory for memhub commands")
    if config.auth.local_secret:
        lines.append(f"  tokens:    HS256 secret {config.auth.hs256_secret_file} (keep it private)")
        lines += _first_steps(config, address, recorded)
    print("\n".join(lines), flush=True)
    if config.server.share_port:
        from memhub.cli.serve_group import READY

        print(READY, flush=True)
    try:
        stop.wait()
        print("memhub: shutting down", flush=True)
        health.enter_graceful_shutdown()  # load balancers stop routing before we stop answering
        if console is not None:
            console.stop()
        server.stop(grace=5).wait()
        hub.close()
    finally:
        client_config.remove_if_ours()  # a stopped hub's address would send the next `memhub search` nowhere
    return 0


class _SignalStop:
    """SIGINT or SIGTERM, noticed at once.

    A process-wide signal may be delivered to any thread (gRPC's, Milvus's, the embedder's), and Python runs
    its handler only when the main thread next executes bytecode: a main thread blocked in a wait sees it
    only when that wait ends (the old 0.5 s polling loop cost a stop a quarter of a second on average). With
    a wake-up fd the C-level handler writes a byte that the main thread's select sees, from whichever thread
    took the signal.
    """

    def __init__(self) -> None:
        self.event = threading.Event()
        self._read, self._write = socket.socketpair()
        self._read.setblocking(False)
        self._write.setblocking(False)
        signal.set_wakeup_fd(self._write.fileno(), warn_on_full_buffer=False)
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: self.event.set())

    def wait(self, timeout_s: float | None = None) -> bool:
        """Until a signal came (True) or ``timeout_s`` passed (False; None: no limit)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not self.event.is_set():
            left = 5.0 if deadline is None else min(5.0, deadline - time.monotonic())
            if left <= 0:
                return False
            select.select([self._read], [], [], left)  # the Python handler runs as this returns
            try:
                self._read.recv(4096)
            except BlockingIOError:
                pass
        return True


def _console_config(flag_port: int | None) -> ConsoleConfig | None:
    """The console's settings when `--console-port` or MEMHUB_CONSOLE_PORT asks for one (read before the hub opens,
    so a bad setting fails at once); None: no console."""
    from memhub.console.config import ConsoleConfig

    if flag_port is None and not os.environ.get("MEMHUB_CONSOLE_PORT", "").strip():
        return None
    if flag_port is not None and not 0 <= flag_port <= 65535:
        raise StartupError(f"--console-port {flag_port} is out of range (0 to 65535)")
    return ConsoleConfig.from_env(os.environ, port=flag_port)


def _start_console(config: ConsoleConfig | None, hub_address: str) -> ConsoleServer | None:
    if config is None:
        return None
    from memhub.console.server import ConsoleServer

    console = ConsoleServer(dataclasses.replace(config, hub_address=hub_address))
    console.start()
    return console


def _first_steps(config: HubConfig, address: str, recorded: Path | None) -> list[str]:
    """The exact commands from here to a first search, with whatever flags this hub needs.

    With the client file written, client commands find the address and the data directory by themselves;
    without it (MEMHUB_CLIENT_CONFIG=none, or not writable) the commands carry them explicitly.
    """
    flags = ""
    if recorded is None:
        flags = f" --data-dir {config.store.data_dir}"
    steps = [f"export MEMHUB_TOKEN=$(memhub token issue --agent me --ttl 8h{flags})"]
    if recorded is None and address != client_config.DEFAULT_ADDRESS:
        steps.append(f"export MEMHUB_ADDRESS={address}")
    steps.append("memhub write agents/me/notes 'Deploys freeze on Fridays' && memhub search 'can I deploy on Friday?'")
    return [f"  try:       {steps[0]}", *(f"             {step}" for step in steps[1:])]


def _describe_tracing(tracing: telemetry.TelemetryConfig) -> str:
    if tracing.exporter == "none":
        return "off (set OTEL_EXPORTER_OTLP_ENDPOINT or MEMHUB_TRACES_EXPORTER to export them)"
    if tracing.exporter == "file":
        return f"appended to {tracing.file_path} (service {tracing.service_name})"
    if tracing.exporter == "console":
        return f"printed to stderr (service {tracing.service_name})"
    return f"OTLP/gRPC (service {tracing.service_name})"
