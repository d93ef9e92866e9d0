"""Postgres on a full disk: writes say so (UNAVAILABLE, no configuration in the message), the
operator's log names the full path once, health is NOT_SERVING for MemoryService, and everything recovers
when space is freed, with no acknowledged write lost.

Real parts: the embedded Postgres with its data directory on a small tmpfs, and the external one with the
database's tablespace on one (root only: skipped with the reason otherwise), filled by a ballast file; the hub
served over gRPC on loopback; Milvus Lite outside the tmpfs, so only Postgres meets the full disk.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import pwd
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import psycopg
import pytest
from conftest import OPEN_POLICY, client_of, drop_database, eventually, hub_config, serving, write_policy_dir
from security.spawned_hub import embedded_store_root
from sqlalchemy import make_url

from memhub import outage_log
from memhub.api.status import status_for
from memhub.audit.writer import AuditEntry, _copy_rows
from memhub.client import memory_input
from memhub.db import disk_full, embedded_pg

MEMORY_SERVICE = "memhub.v1.MemoryService"
AGENT_MESSAGE = "the hub's database storage is full; nothing was written; the operator has been told"


@dataclasses.dataclass(frozen=True)
class FullDisk:
    mnt: Path  # the tmpfs the ballast fills
    data_dir: Path  # the hub's
    database_url: str | None  # None: the embedded Postgres, in data_dir on the tmpfs
    location: str  # what the log must name


@contextlib.contextmanager
def _tmpfs(where: Path, size: str, owner: int = 0) -> Iterator[Path]:
    where.mkdir(mode=0o700)
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700,uid={owner}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {result.stderr.strip()}")
    try:
        yield where
    finally:
        (where / "ballast").unlink(missing_ok=True)  # a failed test leaves it: stopping the server needs room
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.fixture(params=["embedded-pg", "external-pg-tablespace"])
def full_disk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FullDisk]:
    """Embedded: its whole data directory on a 160 MiB tmpfs (initdb's cluster, the database, a few writes).
    External: a scratch database whose default tablespace is a 24 MiB tmpfs owned by the server's user."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    with contextlib.contextmanager(embedded_store_root)(tmp_path) as root:
        if request.param == "embedded-pg":
            with _tmpfs(root / "mnt", "160m") as mnt:
                data_dir = mnt / "data"
                try:
                    yield FullDisk(mnt, data_dir, None, str(data_dir.resolve() / "postgres"))
                finally:
                    (mnt / "ballast").unlink(missing_ok=True)
                    embedded_pg.release(data_dir)  # the server holds files on the mount
            return
        admin = request.getfixturevalue("external_pg_admin_url")
        root.chmod(0o711)  # the server's user passes through to its tablespace
        with _tmpfs(root / "ts", "24m", owner=pwd.getpwnam("postgres").pw_uid) as mnt:
            name = f"memhub_full_{uuid.uuid4().hex[:8]}"
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f"CREATE TABLESPACE {name} LOCATION '{mnt}'")
                conn.execute(f'CREATE DATABASE "{name}" TABLESPACE {name}')
            url = make_url(admin).set(database=name).render_as_string(hide_password=False)
            try:
                yield FullDisk(mnt, root / "data", url, f"{mnt} (tablespace {name})")
            finally:
                (mnt / "ballast").unlink(missing_ok=True)
                drop_database(admin, url)
                with psycopg.connect(admin, autocommit=True) as conn:
                    conn.execute(f"DROP TABLESPACE IF EXISTS {name}")


def _fill(mnt: Path) -> Path:
    """Append to a ballast file until the tmpfs has no byte left; return it."""
    ballast = mnt / "ballast"
    with open(ballast, "ab", buffering=0) as f:
        for size in (1 << 20, 4096):  # then the last partial MiB
            with contextlib.suppress(OSError):
                while True:
                    f.write(b"\0" * size)
    return ballast


def _disk_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The disk outage's log lines, oldest first: its full message for "is failing", "works again" for the end."""
    lines = []
    for record in caplog.records:
        message = record.getMessage()
        if "disk full" not in message:
            continue
        if " is failing (" in message or " is failing again " in message:  # "logged once until it works again"
            lines.append(message.split(" is failing")[0] + " is failing")
        elif " works again (" in message:
            lines.append("works again")
    return lines


def _failures_counted(caplog: pytest.LogCaptureFixture) -> int:
    """The failures the ended streaks of the disk outage counted, as their "works again ... after N failures" lines say."""
    counts = [re.search(r" after (\d+) failures ", r.getMessage()) for r in caplog.records if "disk full" in r.getMessage()]
    return sum(int(m.group(1)) for m in counts if m)


@pytest.fixture(autouse=True)
def _disk_outage_ended() -> Iterator[None]:
    """The disk outage record is process-wide: one left failing by a test that stopped midway would swallow the next
    test's first line ("logged once until it works again"), so each test starts and ends with it closed."""
    quiet = logging.getLogger("tests.disk_full.reset")
    outage_log.outage(disk_full.OUTAGE_KEY).ok("test set-up", quiet)
    yield
    outage_log.outage(disk_full.OUTAGE_KEY).ok("test tear-down", quiet)


def _audit_entry(i: int) -> AuditEntry:
    return AuditEntry("tester", ("testers",), "read", "disk/full", "allow", ("p0",), "v1", detail={"n": uuid.uuid4().hex * 8})


def _content(i: int) -> str:
    # Long and unlike each other: pages fill in a few writes, no write is folded into another.
    return f"note {i}: " + " ".join(uuid.uuid4().hex for _ in range(60))


def test_a_full_disk_is_named_health_says_so_and_writes_recover(
    full_disk: FullDisk, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    full_disk_root = full_disk.mnt
    config = hub_config(
        full_disk.data_dir, full_disk.database_url, "memhub_disk_full", write_policy_dir(tmp_path / "policies", OPEN_POLICY)
    )
    config = dataclasses.replace(config, store=dataclasses.replace(config.store, milvus_uri=str(tmp_path / "milvus.db")))
    ns = "disk/full"
    with serving(config) as (hub, address):
        client = client_of(hub, address, "tester", ("testers",))
        acknowledged: list[str] = []
        for i in range(5):
            acknowledged += [r.memory.id for r in client.write([memory_input(ns, _content(i))]).results]
        assert client.healthy(service=MEMORY_SERVICE)

        # Postgres may free a little on its own (a checkpoint, a vacuum truncating a table), which truly lets
        # writes through again: the ballast is topped up before each step, so the disk stays full.
        ballast = _fill(full_disk_root)
        failures: list[tuple[grpc.StatusCode, str]] = []
        for i in range(5, 400):
            _fill(full_disk_root)
            try:
                reply = client.write([memory_input(ns, _content(i))])
            except grpc.RpcError as exc:
                failures.append((exc.code(), exc.details()))
                if len(failures) >= 20:
                    break
            else:
                acknowledged += [r.memory.id for r in reply.results]
        assert len(failures) >= 20, f"the full disk refused only {len(failures)} writes"
        assert {code for code, _ in failures} == {grpc.StatusCode.UNAVAILABLE}, failures
        assert {details for _, details in failures} == {AGENT_MESSAGE}, failures
        # The audit's COPY raises psycopg's own error, not SQLAlchemy's (it was INTERNAL): the same answer.
        with pytest.raises(psycopg.Error) as raw:
            with hub.engine.begin() as conn:
                _fill(full_disk_root)
                _copy_rows(conn, [_audit_entry(i) for i in range(5000)])
        assert status_for(raw.value, "WriteMemories") == (grpc.StatusCode.UNAVAILABLE, AGENT_MESSAGE)
        eventually(lambda: _fill(full_disk_root) and not client.healthy(service=MEMORY_SERVICE), "NOT_SERVING")
        assert client.healthy(service="")  # the process is alive: restarting it would not help
        assert not client.healthy(service="memhub.v1.AdminService")  # it writes too (tokens, policies, audit)
        assert not client.healthy(service="memhub.v1.SessionStateService")
        assert not client.healthy(service="memhub.v1.ChangeFeedService")
        # Reads still answer from what is stored.
        assert client.get(acknowledged[0]).id == acknowledged[0]
        assert client.search("note", [ns]).hits

        pgdata = full_disk.location
        outage: list[str] = []

        def failing_now() -> bool:
            # A flap (below) may be between its "works again" and the next write's "is failing again" right now (a
            # CI run read the lines there): read them once the outage is in its failing state, the disk kept full.
            _fill(full_disk_root)
            outage[:] = _disk_lines(caplog)
            return bool(outage) and outage[-1].endswith("is failing")

        eventually(failing_now, "the disk outage's last log line says it is failing")
        assert outage, [r.getMessage() for r in caplog.records]
        assert all(f"disk full at {pgdata}" in line for line in outage if line != "works again"), outage
        assert all(pgdata not in details for _, details in failures)
        # One line when it starts, one when it ends: never one per failed write (>= 20 here, and the audit
        # writer's retries). The ballast leaves a few MB that Postgres frees and fills again, so the probe may
        # find room for a moment (more often on a loaded machine): each such flap is one line each way, so the
        # lines alternate, start and end with "is failing", and are far fewer than the failures.
        assert outage[-1].endswith("is failing") and outage[0].endswith("is failing"), outage
        assert all(a.endswith("is failing") != b.endswith("is failing") for a, b in zip(outage, outage[1:], strict=False)), outage
        # Against the failures the hub itself counted over those streaks (each "works again" line gives its
        # streak's count; the record holds the current one's), not the 20 writes above: the flaps go on while the
        # waits above run, and the writes, the audit writer's retries and the monitor's probes all fail meanwhile.
        counted = _failures_counted(caplog) + outage_log.outage(disk_full.OUTAGE_KEY).failures
        assert counted >= len(failures), (counted, outage)
        assert len(outage) <= counted // 2, (counted, outage)
        assert not [r for r in caplog.records if "internal error" in r.getMessage()]

        ballast.unlink()
        eventually(lambda: client.healthy(service=MEMORY_SERVICE), "MemoryService says SERVING again")
        acknowledged += [r.memory.id for r in client.write([memory_input(ns, _content(1000))]).results]
        for memory_id in acknowledged:
            assert client.get(memory_id).id == memory_id
        after = _disk_lines(caplog)
        # What was logged before, any flap since (one line each way), and one line for the end.
        assert after[: len(outage)] == outage and after[-1] == "works again", after
        assert all(a.endswith("is failing") != b.endswith("is failing") for a, b in zip(after, after[1:], strict=False)), after
        client.close()


def test_the_last_hub_out_stops_the_embedded_postgres_on_a_full_disk(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    with contextlib.contextmanager(embedded_store_root)(tmp_path) as root, _tmpfs(root / "mnt", "160m") as mnt:
        data_dir = mnt / "data"
        config = hub_config(data_dir, None, "memhub_disk_full", write_policy_dir(tmp_path / "policies", OPEN_POLICY))
        config = dataclasses.replace(config, store=dataclasses.replace(config.store, milvus_uri=str(tmp_path / "m.db")))
        try:
            with serving(config):
                _fill(mnt)
            # Its list of users cannot be rewritten on a full disk; the server must stop all the same.
            embedded_pg.release(data_dir)
            assert not (data_dir / "postgres" / "postmaster.pid").exists()
        finally:
            (mnt / "ballast").unlink(missing_ok=True)
            embedded_pg.release(data_dir)


def test_a_role_that_may_not_read_the_data_directory_still_names_the_server(external_pg_admin_url: str) -> None:
    from sqlalchemy import create_engine

    role = f"memhub_plain_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(external_pg_admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
    try:
        url = make_url(external_pg_admin_url).set(drivername="postgresql+psycopg", username=role, database="postgres")
        engine = create_engine(url)
        try:
            with engine.connect() as conn:
                where = disk_full.locate(conn, f"{url.host}:{url.port or 5432}")
        finally:
            engine.dispose()
        assert where == f"the data directory of the Postgres server at {url.host}:{url.port or 5432}"
    finally:
        with psycopg.connect(external_pg_admin_url, autocommit=True) as conn:
            conn.execute(f"DROP ROLE IF EXISTS {role}")
