"""`memhub index-server`: one Milvus Lite data file served over TCP, for several hubs on one machine.

Milvus Lite lets one process open a data file. Hubs that should share an
index without a Milvus server point at this process instead
(``MEMHUB_MILVUS_URI=http://127.0.0.1:PORT``). It runs the native engine as
a child process and starts it again if it dies, until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path

from memhub import logs
from memhub.data_dir import default_data_dir, ensure_private_dir, startup_problem
from memhub.data_dir_lock import LITE_FILE_NAME, lock_for_serving
from memhub.errors import StartupError

DEFAULT_FILE = LITE_FILE_NAME


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("index-server", help="serve a Milvus Lite data file over TCP so several hubs can share it")
    p.add_argument("--data-dir", type=Path, default=None, help="directory of the data file (default: the hub's data directory)")
    p.add_argument("--file", default=DEFAULT_FILE, help=f"data file name (default {DEFAULT_FILE})")
    p.add_argument("--host", default="127.0.0.1", help="interface to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, required=True, help="TCP port")
    p.add_argument("--check-interval", type=float, default=1.0, help="seconds between liveness checks of the engine")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # Imported here, not at the top: every memhub command builds this parser, and pymilvus costs a second.
    from memhub.index import IndexUnavailable
    from memhub.index.lite_server import LiteServer

    logs.configure("info")
    if not 1 <= args.port <= 65535:
        raise StartupError(f"--port {args.port} is out of range (1 to 65535)")
    if args.check_interval <= 0:
        raise StartupError(f"--check-interval must be positive, got {args.check_interval}")
    data_dir = ensure_private_dir((args.data_dir or default_data_dir()).expanduser().resolve())
    try:  # a hub serving the file in-process refuses this at once, and the other way round
        lock = lock_for_serving(data_dir / args.file, "memhub index-server")
    except OSError as exc:
        raise startup_problem(exc, data_dir) from None
    try:
        server = LiteServer(data_dir / args.file, address=f"{args.host}:{args.port}")
        server.start()
    except IndexUnavailable as exc:
        raise StartupError(str(exc)) from None
    lock.note_address(server.uri)
    print(
        f"memhub index-server: serving {server.db_file} at {server.uri} (point hubs at MEMHUB_MILVUS_URI={server.uri})",
        flush=True,
    )
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        while not stop.wait(args.check_interval):
            try:
                server.ensure_running()
            except IndexUnavailable as exc:  # it would not start again: keep trying, the hubs are waiting
                print(f"memhub index-server: {exc}", flush=True)
    finally:
        server.stop()
    print("memhub index-server: stopped", flush=True)
    return 0
