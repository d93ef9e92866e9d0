"""`memhub serve --processes 2` as an operator meets it: one port, one data directory, two hub processes that
both take connections and serve the same memories; a hub process killed is started again; the port is the
group's alone; SIGTERM stops every process the group started.

Real `memhub serve` processes (embedded Postgres, Milvus Lite served by the group over loopback TCP), real
clients, each on a connection of its own. How many searches a second the group serves against one process is
measured by bench/bench_throughput.py (`--env MEMHUB_PROCESSES=2`), not asserted here.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import psutil
import pytest
from conftest import REPO, eventually

from memhub.auth import issue_token, load_secret
from memhub.client import MemhubClient, memory_input


def listening_pids(port: int) -> set[int]:
    return {
        c.pid for c in psutil.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN and c.laddr.port == port and c.pid
    }


def serving_pid(port: int, client_port: int) -> int | None:
    """The process holding the server side of the connection from ``client_port``."""
    for c in psutil.net_connections(kind="tcp"):
        if c.laddr.port == port and c.raddr and c.raddr.port == client_port and c.pid:
            return c.pid
    return None


def members(group: psutil.Process) -> dict[int, int]:
    """Member number -> pid of the group's hub processes."""
    out = {}
    for child in group.children():
        try:
            argv = child.cmdline()
        except psutil.Error:
            continue
        if "--group-member" in argv:
            out[int(argv[argv.index("--group-member") + 1])] = child.pid
    return out


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A user's environment: no MEMHUB_* settings, a config home of its own (the client file serve writes)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHUB_", "OTEL_"))}
    return clean | {"XDG_CONFIG_HOME": str(tmp_path / "config")}


def test_two_hub_processes_share_a_port_and_the_memories_and_stop_together(tmp_path: Path, env: dict[str, str]) -> None:
    data_dir = tmp_path / "data"
    group = subprocess.Popen(
        [sys.executable, "-m", "memhub.cli.main", "serve", "--data-dir", str(data_dir), "--port", "0", "--processes", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=REPO,
        env=env,
    )
    clients: list[MemhubClient] = []
    try:
        assert group.stdout is not None
        printed = []
        for line in group.stdout:
            printed.append(line)
            if line.startswith("  processes:"):
                break
        text = "".join(printed)
        address = re.search(r"memhub: listening on (\S+) \(gRPC\)", text)
        assert address is not None and "2 hub processes share the port" in text, text
        port = int(address.group(1).rsplit(":", 1)[1])
        first = members(psutil.Process(group.pid))
        assert sorted(first) == [1, 2] and listening_pids(port) == set(first.values())

        token = issue_token(load_secret(data_dir / "jwt-secret"), agent_id="ops", groups=[], ttl=timedelta(hours=1)).token
        writer = MemhubClient(address.group(1), token=token, timeout_s=60)
        clients.append(writer)
        written = writer.write([memory_input("agents/ops/notes", "Deploys freeze on Fridays after 3 pm")], wait_indexed=True)
        memory_id = written.results[0].memory.id
        # New clients, each on its own connection, until both processes have served one of them.
        served: set[int] = set()
        while served != set(first.values()) and len(clients) < 64:
            client = MemhubClient(address.group(1), token=token, timeout_s=60)
            clients.append(client)
            hits = client.search("can I deploy on a Friday afternoon?", ["agents/ops/notes"])
            assert [h.memory.id for h in hits.hits][:1] == [memory_id]
            local = [c.laddr.port for c in psutil.Process().net_connections(kind="tcp") if c.raddr and c.raddr.port == port]
            served |= {pid for pid in (serving_pid(port, p) for p in local) if pid is not None}
        assert served == set(first.values()), f"connections reached only {served} of {first}"

        # Another hub (another data directory) on the group's port: refused.
        other = subprocess.run(
            [sys.executable, "-m", "memhub.cli.main", "serve", "--data-dir", str(tmp_path / "other"), "--port", str(port)],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=120,
        )
        assert other.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in other.stderr, other.stderr

        # Hub process 2 killed: the group starts it again, and it serves the same memories.
        os.kill(first[2], signal.SIGKILL)
        eventually(lambda: members(psutil.Process(group.pid)).get(2, first[2]) != first[2], "process 2 was started again")
        again = members(psutil.Process(group.pid))[2]
        eventually(lambda: again in listening_pids(port), "the new process 2 listens on the port", timeout_s=120)
        for _ in range(8):
            with MemhubClient(address.group(1), token=token, timeout_s=60) as fresh:
                assert fresh.get(memory_id).content == "Deploys freeze on Fridays after 3 pm"

        for client in clients:
            client.close()
        clients.clear()
        engine = [c for c in psutil.Process(group.pid).children() if "milvus" in c.name()]
        assert engine, "the group serves Milvus Lite itself"
        group.send_signal(signal.SIGTERM)
        rest, _ = group.communicate(timeout=120)
        assert group.returncode == 0 and "memhub: shutting down" in rest
        gone = [first[1], again, *(p.pid for p in engine)]
        eventually(
            lambda: not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie" for pid in gone),
            "every process of the group exited",
            timeout_s=30,
        )
        assert not listening_pids(port)
    finally:
        for client in clients:
            client.close()
        if group.poll() is None:
            group.kill()
            group.wait(60)
    assert not (Path(env["XDG_CONFIG_HOME"]) / "memhub" / "client.json").exists()
