"""A Milvus 2.3.5 standalone server for a benchmark: the PyPI ``milvus`` package (embedded etcd, local storage), the
only Milvus server that runs on this kind of machine. Milvus 2.3 has no BM25: the hub's keyword channel is then
Postgres full-text search (memhub/index/backend.py)."""

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

LAUNCH = "import sys; from milvus import main; sys.exit(main())"


@dataclass(frozen=True)
class MilvusServer:
    uri: str
    pids: list[int]
    """The launcher and the server processes (for CPU and memory accounting)."""


@contextlib.contextmanager
def milvus_server(data: Path, timeout_s: float = 300.0) -> Iterator[MilvusServer]:
    """Start the server with its data in ``data``; stop it (the whole process group) afterwards."""
    from pymilvus import MilvusClient

    data.mkdir(parents=True, exist_ok=True)
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", 2380)) == 0:
            raise SystemExit(
                "port 2380 is taken: the PyPI Milvus server's embedded etcd always listens there, so only one such "
                "server runs per machine; stop the other one and run again"
            )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (data / "server.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, "--data", str(data), "--proxy-port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        print("starting the Milvus server...", file=sys.stderr)
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"the Milvus server exited with {proc.returncode}; see {data / 'server.log'}")
            try:
                client = MilvusClient(uri, timeout=5)
                version = client.get_server_version()
                client.close()
                break
            except Exception:  # noqa: BLE001 - not up yet
                if time.monotonic() > deadline:
                    raise SystemExit(
                        f"the Milvus server did not answer within {timeout_s:.0f} s; see {data / 'server.log'}"
                    ) from None
                time.sleep(1)
        print(f"Milvus server {version} at {uri}", file=sys.stderr)
        pids = [proc.pid] + [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
        yield MilvusServer(uri, pids)
    finally:
        # Every process under the launcher, not its process group: the launcher starts `milvus run standalone`
        # in a session of its own, which a killpg missed (it kept etcd's fixed port and failed the next run).
        with contextlib.suppress(psutil.NoSuchProcess):
            tree = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
            for member in tree:
                with contextlib.suppress(psutil.NoSuchProcess):
                    member.terminate()
            _, alive = psutil.wait_procs(tree, timeout=10)  # it may ignore SIGTERM for a minute: a scratch server
            for member in alive:
                with contextlib.suppress(psutil.NoSuchProcess):
                    member.kill()
        proc.wait(timeout=10)
        log.close()
