"""The embedded Postgres after crashes: a killed hub, a restarted host, a server that hangs.

Real processes throughout: `memhub serve` killed with SIGKILL, small Python
processes that start (or join) the embedded server the way the hub does, a
real postgres stopped with SIGSTOP. "Host restart" is what it leaves on
disk: a postmaster.pid (and socket lock) naming a pid that now belongs to an
unrelated process of the same user.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest
from conftest import REPO, eventually

from memhub.client import MemhubClient, memory_input
from memhub.db import embedded_pg
from security.spawned_hub import embedded_store_root, spawn_hub

# Starts (or joins) the embedded server of argv[1] as the hub does and checks it answers. With "hold",
# it then waits until SIGTERM (ending normally, so it leaves the server like an exiting hub does).
# A StartupError is printed and ends the process with code 3: a traceback would end it with 1.
SCRIPT = """
import signal, sys, time
from pathlib import Path
import psycopg
from memhub.db import embedded_pg
from memhub.db.engine import start_embedded
from memhub.errors import StartupError
embedded_pg.ANSWER_TIMEOUT_S = float(sys.argv[3])
try:
    url = start_embedded(Path(sys.argv[1]))
except StartupError as exc:
    print(f"StartupError: {exc}", flush=True)
    sys.exit(3)
with psycopg.connect(url) as conn:
    conn.execute("SELECT 1")
print(f"ready {url}", flush=True)
if sys.argv[2] == "hold":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(1)
"""


def run_embedded(data_dir: Path, *, answer_timeout_s: float = 30.0) -> subprocess.CompletedProcess[str]:
    """Start or join the server and exit normally (a short-lived hub)."""
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, str(data_dir), "exit", str(answer_timeout_s)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )


def hold_embedded(data_dir: Path) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(data_dir), "hold", "30"], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("ready"), line
    return proc


def postmaster_pid(data_dir: Path) -> int | None:
    try:
        return int((data_dir / "postgres" / "postmaster.pid").read_text().splitlines()[0])
    except FileNotFoundError:
        return None


def running(pid: int | None) -> bool:
    try:
        return pid is not None and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture
def store_root(tmp_path: Path) -> Iterator[Path]:
    yield from embedded_store_root(tmp_path)


@pytest.fixture
def data_dir(store_root: Path) -> Iterator[Path]:
    """A fresh data directory; whatever server is left running on it at the end is stopped."""
    path = store_root / "data"
    yield path
    pid = postmaster_pid(path)
    if running(pid):
        os.kill(pid, signal.SIGCONT)
        os.kill(pid, signal.SIGINT)  # fast shutdown
        eventually(lambda: not running(pid), "the left-over server stopped", timeout_s=120)


def as_server_user() -> dict:
    """subprocess arguments that run a process as the user the embedded server runs as."""
    if os.geteuid() != 0:
        return {}
    user = pwd.getpwnam(embedded_pg.SERVICE_USER)
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def test_a_server_left_by_a_killed_hub_is_adopted_and_stopped_by_the_last_hub_out(store_root: Path, data_dir: Path) -> None:
    first = spawn_hub(store_root, data_dir)
    server = postmaster_pid(data_dir)
    assert running(server)
    first.kill()
    assert running(server), "the server outlives a killed hub (nothing could stop it)"

    second = spawn_hub(store_root, data_dir)
    with MemhubClient(second.address, token=second.token("survivor")) as client:
        assert client.write([memory_input("after/crash", "still here")]).results[0].memory.id
    assert postmaster_pid(data_dir) == server  # the same server, adopted
    code = second.stop()
    log = second.log.read_text()
    assert code == 0, log[-6000:]

    # The killed hub's entry no longer counts: the last live hub out stopped the server.
    deadline = time.monotonic() + 120
    while running(server) and time.monotonic() < deadline:
        time.sleep(0.1)
    users = (data_dir / embedded_pg.USERS_FILE).read_text()
    assert not running(server), f"the embedded Postgres outlived the last hub; users {users}; hub log:\n{log[-6000:]}"
    assert "adopting the embedded Postgres" in log


def test_a_stale_pid_file_naming_a_reused_pid_is_recognised_and_removed(data_dir: Path) -> None:
    made = run_embedded(data_dir)  # a cluster, started and stopped cleanly
    assert made.returncode == 0, made.stdout + made.stderr
    pgdata = data_dir / "postgres"
    assert postmaster_pid(data_dir) is None

    # After a host restart the pid in the files belongs to whatever got it: here an unrelated process
    # of the server's own user, which PostgreSQL itself would take for a live postmaster.
    impostor = subprocess.Popen(["sleep", "600"], **as_server_user())
    try:
        lines = [str(impostor.pid), str(pgdata), str(int(time.time()) - 3600), "5432", str(pgdata), "", "0 0", "ready"]
        for name in ("postmaster.pid", ".s.PGSQL.5432.lock"):
            (pgdata / name).write_text("\n".join(lines) + "\n")
            if os.geteuid() == 0:
                user = pwd.getpwnam(embedded_pg.SERVICE_USER)
                os.chown(pgdata / name, user.pw_uid, user.pw_gid)

        again = run_embedded(data_dir)

        assert again.returncode == 0, again.stdout + again.stderr
        assert "ready" in again.stdout
        assert "stale" in again.stderr  # the log says what it removed
        assert impostor.poll() is None, "the unrelated process was left alone"
    finally:
        impostor.kill()
        impostor.wait()


def test_a_server_that_runs_but_does_not_answer_is_a_startup_error_with_advice(data_dir: Path) -> None:
    holder = hold_embedded(data_dir)
    server = postmaster_pid(data_dir)
    assert running(server)
    os.kill(server, signal.SIGSTOP)  # alive, holding its pid file and socket, answering nothing
    try:
        joined = run_embedded(data_dir, answer_timeout_s=3)
        assert joined.returncode == 3, joined.stdout + joined.stderr  # a StartupError, not a traceback
        assert "does not answer" in joined.stdout and f"kill {server}" in joined.stdout
        assert "Traceback" not in joined.stderr
    finally:
        os.kill(server, signal.SIGCONT)
        holder.send_signal(signal.SIGTERM)
        holder.wait(timeout=120)
    eventually(lambda: not running(server), "the holder stopped the server on its way out", timeout_s=120)
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(f"postgresql://postgres@/postgres?host={data_dir / 'postgres'}", connect_timeout=3)
