"""A dependency that goes away logs one line when it goes and one when it returns, not one per retry.

A real `memhub serve` process (its JSON log read back line by line) on a
scratch database of the external Postgres and a `memhub index-server` (Milvus
Lite over TCP) of its own, under steady traffic (writes and searches from a
thread). The index server is killed and started again; the hub's database
refuses connections and has every backend terminated, then accepts them
again. Counted: WARNING/ERROR lines and tracebacks in the hub's log over the
outage and the recovery after it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import OPEN_POLICY, REPO, create_scratch_database, drop_database, eventually, write_policy_dir
from security.spawned_hub import MEMHUB, SpawnedHub, hub_env, spawn_hub
from test_store_healing import terminate_backends

from memhub import outage_log
from memhub.client import MemhubClient, memory_input

MEMORY = "memhub.v1.MemoryService"
OUTAGE_S = 20.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_index_server(data_dir: Path, port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [*MEMHUB, "index-server", "--data-dir", str(data_dir), "--port", str(port)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "serving" in line, f"index-server did not start: {line!r}"
    return proc


def log_entries(hub: SpawnedHub, start: int) -> list[dict]:
    """The hub's JSON log lines from line ``start`` on (anything that is not JSON is kept as a raw entry)."""
    out = []
    for raw in hub.log.read_text().splitlines()[start:]:
        try:
            out.append(json.loads(raw))
        except ValueError:
            out.append({"level": "raw", "msg": raw})
    return out


def loud(entries: list[dict]) -> list[dict]:
    return [e for e in entries if e.get("level") in ("warning", "error", "critical", "raw")]


class Traffic:
    """Writes and searches every 50 ms, ignoring their failures (the outage is the point)."""

    def __init__(self, client: MemhubClient, ns: str) -> None:
        self._client, self._ns = client, ns
        self._stop = threading.Event()
        self.calls = 0
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Traffic:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        i = 0
        while not self._stop.wait(0.05):
            i += 1
            try:
                self._client.write([memory_input(self._ns, f"Shipment {i} of cobalt leaves the east dock")])
            except Exception:  # noqa: BLE001, S110 - failures are expected during the outage
                pass
            try:
                self._client.search("cobalt shipment", [self._ns])
            except Exception:  # noqa: BLE001, S110
                pass
            self.calls += 2


@dataclasses.dataclass
class Served:
    hub: SpawnedHub
    index_dir: Path
    port: int
    index_server: subprocess.Popen
    database_url: str
    admin_url: str


@pytest.fixture
def served(tmp_path: Path, external_pg_admin_url: str) -> Iterator[Served]:
    index_dir = tmp_path / "index"
    index_dir.mkdir(mode=0o700)
    port = free_port()
    url = create_scratch_database(external_pg_admin_url)
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    policy_dir = write_policy_dir(tmp_path / "policies", OPEN_POLICY)
    state = None
    try:
        server = start_index_server(index_dir, port)
        env = hub_env(policy_dir, MEMHUB_MILVUS_URI=f"http://127.0.0.1:{port}", MEMHUB_MILVUS_COLLECTION="outage")
        state = Served(
            spawn_hub(tmp_path, data_dir, database_url=url, env=env), index_dir, port, server, url, external_pg_admin_url
        )
        yield state
    finally:
        if state is not None:
            state.hub.stop()
            if state.index_server.poll() is None:
                state.index_server.terminate()
                state.index_server.wait(30)
        drop_database(external_pg_admin_url, url)


def test_a_milvus_outage_logs_once_when_it_goes_and_once_when_it_returns(served: Served) -> None:
    hub = served.hub
    client = MemhubClient(hub.address, token=hub.token("tester"))
    eventually(lambda: client.healthy(service=MEMORY), "the hub serves")
    ns = f"out/{uuid.uuid4().hex[:8]}"
    # A collection that never held a row cannot weigh BM25 terms: write one first, so the count is the outage's.
    assert client.write([memory_input(ns, "The cobalt shipment list is kept by the east dock")], wait_indexed=True).indexed
    start = len(hub.log.read_text().splitlines())
    with Traffic(client, ns) as traffic:
        time.sleep(2)
        served.index_server.terminate()  # it stops its engine on the way out
        served.index_server.wait(30)
        eventually(lambda: not client.healthy(service=MEMORY), "health says the memory service is down")
        time.sleep(OUTAGE_S)
        served.index_server = start_index_server(served.index_dir, served.port)
        eventually(lambda: client.healthy(service=MEMORY), "the memory service is back", 120)
        time.sleep(3)
    try:
        # A restarted Lite engine may fail a search or two while it loads: a relapse, one WARNING each way, no traceback.
        _assert_one_outage_logged(hub, start, traffic.calls, max_lines=8, max_tracebacks=1, dependency="")
    finally:
        client.close()


def test_a_postgres_outage_logs_once_when_it_goes_and_once_when_it_returns(served: Served) -> None:
    hub, admin_url = served.hub, served.admin_url
    database = served.database_url.rsplit("/", 1)[1]
    client = MemhubClient(hub.address, token=hub.token("tester"))
    eventually(lambda: client.healthy(service=MEMORY), "the hub serves")
    ns = f"out/{uuid.uuid4().hex[:8]}"
    # A collection that never held a row cannot weigh BM25 terms: write one first, so the count is the outage's.
    assert client.write([memory_input(ns, "The cobalt shipment list is kept by the east dock")], wait_indexed=True).indexed
    start = len(hub.log.read_text().splitlines())
    with Traffic(client, ns) as traffic, psycopg.connect(admin_url, autocommit=True) as admin:
        time.sleep(2)
        admin.execute(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS false')
        try:
            deadline = time.monotonic() + OUTAGE_S
            while time.monotonic() < deadline:
                terminate_backends(admin, database)  # the pool's connections too, as a restart would
                time.sleep(0.5)
        finally:
            admin.execute(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS true')
        eventually(lambda: client.healthy(service=MEMORY), "the memory service is back", 120)
        time.sleep(3)
    try:
        _assert_one_outage_logged(hub, start, traffic.calls, max_lines=8, max_tracebacks=2, dependency="Postgres")
    finally:
        client.close()


def test_many_failures_of_one_dependency_from_several_loops_make_two_lines(caplog: pytest.LogCaptureFixture) -> None:
    """The record itself: 3 loops failing 100 times each on Postgres, then one success; a bug elsewhere is its own
    streak. Real exceptions from a real refused connection, no store stubbed."""
    logger = logging.getLogger("tests.outage")
    caplog.set_level(logging.DEBUG, logger="tests.outage")
    try:
        psycopg.connect("postgresql://nobody@127.0.0.1:1/none", connect_timeout=1)
    except psycopg.OperationalError as exc:
        refused = exc
    key = f"test-{uuid.uuid4().hex[:6]}"
    # Records of its own: hubs of other tests run in this process, and their loops report to the process's records.
    records = outage_log.Records()
    loops = [outage_log.Site(f"{key} loop {i}", logger, records=records) for i in range(3)]
    for _ in range(100):
        for site in loops:
            site.failed(refused, "step failed")
    bug = outage_log.Site(f"{key} buggy loop", logger, depends=(), records=records)
    for _ in range(5):
        bug.failed(KeyError("x"))
    loops[1].ok()
    bug.ok()
    ours = [r for r in caplog.records if r.name == logger.name]
    loud_lines = [r for r in ours if r.levelno >= logging.WARNING]
    assert [r.levelname for r in loud_lines] == ["ERROR", "ERROR", "WARNING", "WARNING"], [r.getMessage() for r in loud_lines]
    assert loud_lines[0].exc_info is not None and "Postgres is failing" in loud_lines[0].getMessage()
    assert "after 300 failures" in loud_lines[2].getMessage() and "Postgres works again" in loud_lines[2].getMessage()
    assert "after 5 failures" in loud_lines[3].getMessage()
    assert sum(1 for r in ours if r.levelno == logging.DEBUG) == 299 + 4


def _assert_one_outage_logged(
    hub: SpawnedHub, start: int, calls: int, *, max_lines: int, max_tracebacks: int, dependency: str
) -> None:
    """The log since line ``start`` holds a handful of WARNING/ERROR lines for the outage, tracebacks at most
    ``max_tracebacks``, and one "works again" line (of ``dependency`` when named) with its count, plus one for each
    relapse right after it."""
    entries = log_entries(hub, start)
    noisy = loud(entries)
    tracebacks = [e for e in entries if e.get("exc") and e.get("level") != "debug"]
    assert calls > 100
    shown = (e["msg"][:160] for e in noisy)
    print(f"{calls} calls; {len(noisy)} WARNING/ERROR lines, {len(tracebacks)} tracebacks:", *shown, sep="\n  ")
    assert len(noisy) <= max_lines, "\n".join(json.dumps(e)[:300] for e in noisy)
    assert len(tracebacks) <= max_tracebacks, "\n".join(json.dumps(e)[:300] for e in tracebacks)
    back = [e for e in noisy if "works again (seen" in e["msg"] and dependency in e["msg"]]
    relapses = [e for e in noisy if "failing again" in e["msg"] and dependency in e["msg"]]
    assert len(back) == 1 + len(relapses), "\n".join(json.dumps(e)[:300] for e in noisy)
    assert "failures over" in back[0]["msg"], "\n".join(json.dumps(e)[:300] for e in noisy)


def test_a_relapse_right_after_recovery_is_one_warning_without_a_traceback(caplog: pytest.LogCaptureFixture) -> None:
    """Down, back, down again within RELAPSE_S (a restarted engine failing while it loads): the second outage says
    so in one WARNING with no traceback; one past RELAPSE_S is a new outage with its ERROR and traceback."""
    logger = logging.getLogger("tests.outage.relapse")
    caplog.set_level(logging.DEBUG, logger="tests.outage.relapse")
    record = outage_log.Outage("the test dependency")
    failure = ConnectionError("refused")
    record.failed(failure, "test loop", logger)
    record.ok("test loop", logger)
    record.failed(failure, "test loop", logger)
    record.failed(failure, "test loop", logger)
    record.ok("test loop", logger)
    loud_lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.levelname for r in loud_lines] == ["ERROR", "WARNING", "WARNING", "WARNING"], [r.getMessage() for r in loud_lines]
    assert loud_lines[0].exc_info is not None
    assert "failing again" in loud_lines[2].getMessage() and loud_lines[2].exc_info is None
    assert "after 2 failures" in loud_lines[3].getMessage()
    caplog.clear()
    record._recovered = time.monotonic() - outage_log.RELAPSE_S - 1  # the last recovery is long past
    record.failed(failure, "test loop", logger)
    (line,) = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert line.levelname == "ERROR" and line.exc_info is not None and "failing again" not in line.getMessage()
