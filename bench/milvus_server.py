"""A scratch Milvus 2.3.5 standalone server: the PyPI ``milvus`` package (embedded etcd, local storage), the only
Milvus server that runs on this kind of machine. Milvus 2.3 has no BM25: the hub's keyword channel is then
Postgres full-text search (memhub/index/backend.py).

The one launcher for benchmarks (bench_throughput.py --milvus-server) and tests (tests/test_milvus_server.py).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

# The package's console script, run by this interpreter (its launcher picks free ports for etcd's clients and the
# coordinators; etcd's peer port is fixed).
LAUNCH = "import sys; from milvus import main; sys.exit(main())"
ETCD_PEER_PORT = 2380


class MilvusServerError(RuntimeError):
    """The server could not be started; the message says why and where its log is."""


@dataclass(frozen=True)
class MilvusServer:
    uri: str
    pids: list[int]
    """The launcher and the server processes (for CPU and memory accounting)."""


@contextlib.contextmanager
def milvus_server(data: Path, timeout_s: float = 300.0) -> Iterator[MilvusServer]:
    """Start the server with its data in ``data``; stop it and every process under it afterwards."""
    data.mkdir(parents=True, exist_ok=True)
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", ETCD_PEER_PORT)) == 0:
            raise MilvusServerError(
                f"port {ETCD_PEER_PORT} is taken: the PyPI Milvus server's embedded etcd always listens there, so "
                "only one such server runs per machine; stop the other one (a benchmark's, or a leftover) and run again"
            )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log_path = data / "server.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-c", LAUNCH, "--data", str(data), "--proxy-port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            uri = f"http://127.0.0.1:{port}"
            version = _wait_until_serving(uri, proc, log_path, timeout_s)
            print(f"Milvus server {version} at {uri}", file=sys.stderr)
            pids = [proc.pid] + [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
            yield MilvusServer(uri, pids)
        finally:
            stop_tree(proc)


def _wait_until_serving(uri: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float) -> str:
    from pymilvus import MilvusClient

    deadline = time.monotonic() + timeout_s
    print("starting the Milvus server...", file=sys.stderr)
    while True:
        if proc.poll() is not None:
            raise MilvusServerError(f"the Milvus server exited with {proc.returncode}; its log ({log}) ends:\n{_tail(log)}")
        try:
            client = MilvusClient(uri, timeout=5)
            version = client.get_server_version()
            client.close()
            return str(version)
        except Exception:  # noqa: BLE001 - not up yet
            if time.monotonic() > deadline:
                raise MilvusServerError(
                    f"the Milvus server did not answer within {timeout_s:.0f} s; its log ({log}) ends:\n{_tail(log)}"
                ) from None
            time.sleep(1)


def _tail(log: Path) -> str:
    with contextlib.suppress(OSError):
        return log.read_text(errors="replace")[-3000:]
    return "(unreadable)"


def stop_tree(proc: subprocess.Popen[bytes]) -> None:
    """Stop the launcher and every process under it. The launcher starts `milvus run standalone` in a session of
    its own, so a signal to the launcher's process group left the server running (holding etcd's fixed port,
    which failed the next run); and the server may ignore SIGTERM for a minute, so it gets 10 s, then SIGKILL."""
    try:
        tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        tree = []
    for member in tree:
        with contextlib.suppress(psutil.NoSuchProcess):
            member.terminate()
    _, alive = psutil.wait_procs(tree, timeout=10)
    for member in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            member.kill()
    psutil.wait_procs(alive, timeout=10)
    proc.wait(timeout=10)
