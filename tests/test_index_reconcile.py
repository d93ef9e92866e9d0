"""The index loses rows under the hub (a full disk under the embedded Milvus Lite file), and the hub notices and heals.

Milvus Lite 2.5 swallows ENOSPC: on a full disk an upsert and a flush
succeed, the rows are searchable, and they are gone at the next start. The
Lite data file lives on a small tmpfs mounted for this module (skipped,
with the reason, where mounting is not allowed). Two cases:
- the disk fills under a running hub: health, GetIndexHealth and the log say
  the index is not durable; once space is freed the hub writes the rows
  again by itself, and a clean restart finds every one;
- the disk stays full until a clean restart: the reconciliation at start
  compares Postgres with the index and re-queues what is missing, so every
  acknowledged memory is searchable again without a manual reindex.
Real gRPC on loopback, a scratch database on the external Postgres, the real
Lite engine.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from conftest import client_of, create_scratch_database, drop_database, eventually, hub_config, serving

from memhub.client import MemhubClient, memory_input
from memhub.config import HubConfig, IndexerConfig, StoreConfig
from memhub.index import IndexedMemory
from memhub.v1 import admin_pb2
from memhub.v1 import memory_pb2 as pb

MEMORY = "memhub.v1.MemoryService"
TMPFS_BYTES = 24 * 1024 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 24 MB tmpfs of our own, unmounted afterwards."""
    mount = Path(f"/tmp/memhub-fulldisk-{uuid.uuid4().hex[:8]}")
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES},mode=0700", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        mount.rmdir()
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode}): the full-disk case needs one")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
        mount.rmdir()


def fill(disk: Path) -> Path:
    """Take every free byte of ``disk`` with a file of zeros (as a runaway log would)."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as f:  # unbuffered: a failed write is never retried at close
        for size in (1 << 20, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    f.write(b"\0" * size)
    return filler


def code(i: int) -> str:
    """A word no other memory holds, for a keyword search that must find exactly this one."""
    return "qz" + "".join(chr(ord("a") + int(d)) for d in f"{i:04d}") + "vk"


def write_batch(client: MemhubClient, ns: str, start: int, count: int, manifest_lines: int = 0) -> dict[str, str]:
    """Write memories ``start..start+count`` with wait_indexed; {code: id}, each acknowledged as indexed.

    ``manifest_lines`` lengthens each memory by that many lines of a manifest (~40 characters each)."""
    out: dict[str, str] = {}
    for lo in range(start, start + count, 50):
        items = [
            memory_input(ns, f"Parcel {code(i)} ships from the north depot{manifest(i, manifest_lines)}", type="fact")
            for i in range(lo, lo + 50)
        ]
        reply = client.write(items, wait_indexed=True)
        assert reply.indexed, "the hub acknowledged the write as not indexed"
        out.update({code(i): r.memory.id for i, r in zip(range(lo, lo + 50), reply.results, strict=True)})
    return out


def manifest(i: int, lines: int) -> str:
    return "".join(f"\nItem {n} of parcel {i}: crate {n * 7 + i % 13}, weight {n % 5 + 1} kg." for n in range(lines))


def unfound(client: MemhubClient, ns: str, written: dict[str, str]) -> list[str]:
    """Codes whose memory a keyword search does not return from the index, each with why.

    A degraded answer (one channel failed, or Postgres answered for the index) is not an answer from the index:
    it is asked again, up to 3 times a second apart, since on a loaded machine a single Lite search can fail and
    the hub rightly says so; a miss in an answer that is not degraded fails at once."""
    missing = []
    for word, mid in written.items():
        for _ in range(3):
            reply = search_paced(client, word, ns)
            if not reply.degraded:
                break
            time.sleep(1)
        if reply.degraded:
            missing.append(f"{word} (degraded: {reply.degraded})")
        elif mid not in {h.memory.id for h in reply.hits}:
            missing.append(f"{word} (not in {len(reply.hits)} hits)")
    return missing


def search_paced(client: MemhubClient, word: str, ns: str) -> pb.SearchMemoriesResponse:
    """A keyword search that waits out the hub's per-agent rate limit (hundreds of searches in a row)."""
    while True:
        try:
            return client.search(word, [ns], channels=["keyword"])
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise
            time.sleep(0.2)


def index_report(client: MemhubClient) -> admin_pb2.IndexHealthReport:
    return client.call_admin("GetIndexHealth", admin_pb2.GetIndexHealthRequest())


@dataclasses.dataclass
class Setup:
    config: HubConfig
    ns: str


@pytest.fixture
def setup(small_disk: Path, tmp_path: Path, external_pg_admin_url: str) -> Iterator[Setup]:
    url = create_scratch_database(external_pg_admin_url)
    (tmp_path / "data").mkdir(mode=0o700)
    config = hub_config(tmp_path / "data", url, "fulldisk")
    config = dataclasses.replace(
        config, store=StoreConfig(data_dir=tmp_path / "data", database_url=url, milvus_uri=str(small_disk / "index.db"))
    )
    try:
        yield Setup(config, f"disk/{uuid.uuid4().hex[:8]}")
    finally:
        drop_database(external_pg_admin_url, url)


def test_a_disk_that_fills_under_a_running_hub_is_reported_and_healed(
    setup: Setup, small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with serving(setup.config) as (hub, address):
        client = client_of(hub, address, "tester", ["testers"])
        before = write_batch(client, setup.ns, 0, 50)
        filler = fill(small_disk)
        during = write_batch(client, setup.ns, 1000, 300)
        assert not unfound(client, setup.ns, during), "acknowledged memories are not searchable while the disk is full"
        # What was wrong is said: health, the index report, one ERROR line.
        eventually(lambda: not client.healthy(service=MEMORY), "health says the memory service is not serving")
        report = index_report(client)
        assert not report.index_ok and "could not write" in report.index_reason
        assert any(r.levelno >= logging.ERROR and "not durable" in r.getMessage() for r in caplog.records)
        # Space comes back: the hub writes the rows again by itself and says it is durable again.
        os.remove(filler)
        eventually(lambda: client.healthy(service=MEMORY), "health is SERVING again after the disk was freed", 120)
        assert index_report(client).index_ok
        client.close()
    with serving(setup.config) as (hub, address):
        client = client_of(hub, address, "tester", ["testers"])
        assert hub.indexer.reconciler.last is None or hub.indexer.reconciler.last.missing == 0
        assert not unfound(client, setup.ns, {**before, **during}), "memories lost across a clean restart"
        client.close()


def test_rows_lost_at_a_restart_are_found_and_indexed_again(
    setup: Setup, small_disk: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with serving(setup.config) as (hub, address):
        client = client_of(hub, address, "tester", ["testers"])
        before = write_batch(client, setup.ns, 0, 50)
        filler = fill(small_disk)
        during = write_batch(client, setup.ns, 1000, 300, manifest_lines=60)
        eventually(lambda: not index_report(client).index_ok, "GetIndexHealth says the index is not durable")
        client.close()
    os.remove(filler)
    caplog.set_level(logging.WARNING)
    with serving(setup.config) as (hub, address):
        client = client_of(hub, address, "tester", ["testers"])
        written = {**before, **during}
        eventually(lambda: not unfound(client, setup.ns, written), "every acknowledged memory is searchable again", 120)
        # It was the reconciliation at start that found them, and the log says so. Lite may still fit rows into
        # free pages its file already holds (seen with short rows: 44 of 300 kept, once all 300), so each memory
        # written while the disk is full carries a ~2.4 KB manifest: far more than those pages hold (seen: all 300
        # lost, every run). The count is what the file lacked: at least all but one indexer batch of the 300.
        last = hub.indexer.reconciler.last
        assert last is not None and len(during) - IndexerConfig().batch_size <= last.missing <= len(during), last
        assert any(f"lacked {last.missing} servable memories" in r.getMessage() for r in caplog.records)
        assert index_report(client).index_ok and client.healthy(service=MEMORY)
        client.close()


def test_reconciliation_requeues_rows_lost_and_rows_left_behind(tmp_path: Path, external_pg_admin_url: str) -> None:
    """Behind the hub's back one servable row is deleted from the index and a forgotten one put back: one pass
    finds both, and the indexer brings the index in line (the lost one searchable, the forgotten one gone)."""
    url = create_scratch_database(external_pg_admin_url)
    (tmp_path / "data").mkdir(mode=0o700)
    ns = f"rec/{uuid.uuid4().hex[:8]}"
    try:
        with serving(hub_config(tmp_path / "data", url, "reconcile")) as (hub, address):
            client = client_of(hub, address, "tester", ["testers"])
            written = write_batch(client, ns, 0, 50)
            lost, forgotten = written[code(3)], written[code(7)]
            client.forget(ids=[forgotten], reason="retired")
            assert hub.indexer.wait_indexed([forgotten], timeout_s=30)
            eventually(lambda: hub.indexer.reconciler.last is not None, "the reconciliation at start ran")
            kept = hub.index.vectors([lost])[lost]
            hub.index.delete([lost])
            hub.index.upsert([IndexedMemory(forgotten, ns, "semantic", "fact", f"Parcel {code(7)} ships", (), 0, 0, 0, kept)])
            found = hub.indexer.reconciler.run_once()
            assert (found.missing, found.extra) == (1, 1)
            eventually(lambda: hub.indexer.backlog() == 0, "the indexer applied the re-queued rows")
            assert not unfound(client, ns, {code(3): lost})
            assert forgotten not in hub.index.ids_in_range(None, None)
            assert hub.indexer.reconciler.run_once().missing == 0
            client.close()
    finally:
        drop_database(external_pg_admin_url, url)
