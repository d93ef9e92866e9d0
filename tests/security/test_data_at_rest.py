"""Data at rest: what a crash may not lose (the audit of acknowledged changes), who may read the files.

Real processes: a `memhub serve` killed with SIGKILL while writers run, its
audit log read back from the real Postgres; file modes checked on the files
the real embedded stores create.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import psycopg
import pytest
from conftest import (
    OPEN_POLICY,
    create_scratch_database,
    drop_database,
    eventually,
    hub_config,
    write_policy_dir,
)

from memhub.app import Hub
from memhub.client import MemhubClient, memory_input
from memhub.data_dir import ensure_private_dir
from memhub.db import embedded_pg
from memhub.errors import StartupError
from security.spawned_hub import embedded_store_root, spawn_hub

WRITERS = 8
KILL_AFTER = 150


def test_every_answered_write_and_forget_has_its_audit_row_after_kill_9(tmp_path: Path, external_pg_admin_url: str) -> None:
    url = create_scratch_database(external_pg_admin_url)
    data_dir = tmp_path / "data"
    try:
        hub = spawn_hub(tmp_path, data_dir, database_url=url)
        acked: list[tuple[str, str]] = []  # (action, request_id) the hub acknowledged
        refused: list[str] = []  # request_ids the hub answered PERMISSION_DENIED
        lock = threading.Lock()
        stop = threading.Event()

        def writer(n: int) -> None:
            with MemhubClient(hub.address, token=hub.token(f"writer{n}"), timeout_s=30) as client:
                while not stop.is_set():
                    request_id = uuid.uuid4().hex
                    try:
                        reply = client.write([memory_input(f"crash/w{n}", f"note {request_id}")], request_id=request_id)
                        count = acknowledge("write", request_id)
                        if count % 5 == 0:  # some forgets too: their decisions are held the same way
                            forget_id = uuid.uuid4().hex
                            client.forget(ids=[reply.results[0].memory.id], reason="crash test", request_id=forget_id)
                            acknowledge("forget", forget_id)
                    except grpc.RpcError:
                        return  # the hub is gone

        def outsider() -> None:
            """Refused writes (no group, so the open test policy grants nothing): their denials are held too."""
            with MemhubClient(hub.address, token=hub.token("outsider", groups=()), timeout_s=30) as client:
                while not stop.is_set():
                    request_id = uuid.uuid4().hex
                    try:
                        client.write([memory_input("crash/outsider", "let me in")], request_id=request_id)
                    except grpc.RpcError as exc:
                        if exc.code() != grpc.StatusCode.PERMISSION_DENIED:
                            return  # the hub is gone
                        with lock:
                            refused.append(request_id)

        def acknowledge(action: str, request_id: str) -> int:
            with lock:
                acked.append((action, request_id))
                count = len(acked)
            if count == KILL_AFTER:
                # Killed the moment a call is acknowledged, by the thread that saw it, while the other
                # writers are mid-call: the batch writer flushes every half second, so without the fix
                # every call acknowledged since its last flush would have no audit row.
                hub.proc.send_signal(signal.SIGKILL)
            return count

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
        threads.append(threading.Thread(target=outsider))
        for t in threads:
            t.start()
        try:
            eventually(lambda: hub.proc.poll() is not None, "the hub was killed", timeout_s=600)
        finally:
            stop.set()
            for t in threads:
                t.join(60)
            hub.kill()
        with lock:
            acknowledged, denied = list(acked), list(refused)

        with psycopg.connect(url) as conn:
            rows = conn.execute(
                "SELECT action, request_id, decision FROM audit_log WHERE action IN ('write', 'forget')"
            ).fetchall()
        allowed = {(action, request_id) for action, request_id, decision in rows if decision == "allow"}
        missing = [entry for entry in acknowledged if entry not in allowed]
        assert missing == [], f"{len(missing)} of {len(acknowledged)} acknowledged calls have no audit row"
        denials = {request_id for action, request_id, decision in rows if decision == "deny" and action == "write"}
        assert denied and [r for r in denied if r not in denials] == [], "every refusal sent is in the audit log"
    finally:
        drop_database(external_pg_admin_url, url)


def _others_may_access(path: Path, data_dir: Path) -> bool:
    """Whether anyone but the owner may open ``path``: the data directory itself may let the embedded
    Postgres's group pass through (0710, root only); nothing else may give group or others anything."""
    mode = stat.S_IMODE(path.lstat().st_mode)
    if path == data_dir:
        group_ok = mode & 0o070 == 0 or (mode & 0o070 == 0o010 and path.stat().st_gid == embedded_pg.service_group())
        return bool(mode & 0o007) or not group_ok
    return bool(mode & 0o077)


@pytest.fixture
def store_root(tmp_path: Path) -> Iterator[Path]:
    yield from embedded_store_root(tmp_path)


def test_the_data_directory_and_every_store_file_are_private_even_under_umask_0(store_root: Path) -> None:
    data_dir = store_root / "data"
    hub = spawn_hub(store_root, data_dir, umask=0)  # embedded Postgres and Milvus Lite, everything created now
    try:
        with MemhubClient(hub.address, token=hub.token("keeper")) as client:
            secret = f"the launch code is {uuid.uuid4().hex}"
            assert client.write([memory_input("vault", secret)], wait_indexed=True).indexed
        # While it runs: the index's unix socket is the hub's alone too.
        sockets = list(Path("/tmp").glob(f"memhub-milvus-{hub.proc.pid}-*.sock"))
        assert sockets and not any(_others_may_access(s, data_dir) for s in sockets)
    finally:
        assert hub.stop() == 0  # the stores flush their files on the way out

    paths = [data_dir, *data_dir.rglob("*")]
    assert any(p.name == "milvus-index.db" for p in paths) and any(p.name == "PG_VERSION" for p in paths)
    exposed = [f"{p} {stat.S_IMODE(p.lstat().st_mode):04o}" for p in paths if _others_may_access(p, data_dir)]
    assert exposed == []
    if os.geteuid() == 0:  # the attack as reported: an unprivileged local user reads the index file
        for target in (data_dir, data_dir / "milvus-index.db", data_dir / "jwt-secret"):
            probe = subprocess.run(["cat", str(target)], user="nobody", capture_output=True)
            assert probe.returncode != 0, f"nobody could read {target}"


@pytest.mark.parametrize("mode", [0o755, 0o750, 0o705, 0o711], ids=oct)
def test_a_data_directory_others_may_access_is_refused_at_start(tmp_path: Path, mode: int) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    os.chmod(data_dir, mode)
    policies = write_policy_dir(tmp_path / "policies", OPEN_POLICY)
    # A database nobody listens on: the check must come before any store is touched.
    config = hub_config(data_dir, "postgresql://postgres@127.0.0.1:1/unused", "refused", policies)
    with pytest.raises(StartupError) as excinfo:
        Hub.open(config)
    assert f"chmod 700 {data_dir}" in str(excinfo.value)
    assert list(data_dir.iterdir()) == []  # refused before anything was written there (no token secret)


def test_a_missing_data_directory_is_created_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        created = ensure_private_dir(tmp_path / "fresh" / "data")
    finally:
        os.umask(old)
    assert stat.S_IMODE(created.stat().st_mode) == 0o700
