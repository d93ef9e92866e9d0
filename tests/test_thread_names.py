"""A served hub's threads carry their names into the kernel (memhub/thread_names.py), so /proc, `top -H` and
bench/thread_cpu.py can tell the embedder's CPU from the RPC workers' and the event loop's.

Real parts: `memhub serve` spawned on an external Postgres scratch database, searched over gRPC, and its threads
read from /proc; a fresh interpreter for the hook alone (it changes how every later thread starts).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import create_scratch_database, drop_database
from security.spawned_hub import spawn_hub
from unicode_classes import by_category

from memhub.client import MemhubClient, memory_input
from memhub.thread_names import KERNEL_LIMIT, kernel_name

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="kernel thread names are read from /proc")


def _kernel_names(pid: int) -> list[str]:
    return [(task / "comm").read_text().strip() for task in Path(f"/proc/{pid}/task").iterdir()]


def test_kernel_names_fit_the_kernel_and_keep_the_worker_number() -> None:
    assert kernel_name("memhub-rpc_3") == "rpc_3"
    assert kernel_name("memhub-grpc-loop") == "grpc-loop"
    assert kernel_name("policy-watcher") == "policy-watcher"
    long = kernel_name("embed-batcher-all-MiniLM-L6-v2-onnx-int8-dynamic-1")
    assert long == "embed-batch~c-1" and len(long.encode()) == KERNEL_LIMIT
    assert kernel_name("memhub-") == "memhub-"  # nothing left without the prefix: the name as it was


def test_every_character_class_gives_a_valid_name_within_the_limit() -> None:
    # Python thread names are any text; what reaches the kernel must be whole UTF-8 characters within 15 bytes.
    for category in ("Lu", "Ll", "Lo", "Nd", "Mn", "So", "Zs", "Cf"):
        chars = by_category()[category][:400]
        for i in range(0, len(chars), 20):
            name = "memhub-" + "".join(chars[i : i + 20]) + "-7"
            short = kernel_name(name)
            assert len(short.encode()) <= KERNEL_LIMIT, (category, name, short)
            assert short.encode().decode() == short
            assert short.endswith("-7"), (category, short)


def test_threads_started_after_the_hook_name_themselves_and_earlier_ones_do_not() -> None:
    program = """
import threading
from pathlib import Path
from memhub.thread_names import name_threads_from_now

def comm():
    return Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text().strip()

seen = {}
def record(key):
    seen[key] = comm()

before = threading.Thread(target=record, args=("before",), name="memhub-before-1")
before.start(); before.join()
name_threads_from_now()
for key, name in (("after", "memhub-search_4"), ("long", "embed-batcher-all-MiniLM-L6-v2-onnx-int8-dynamic-0")):
    t = threading.Thread(target=record, args=(key,), name=name)
    t.start(); t.join()
print(seen["before"], seen["after"], seen["long"], comm())
"""
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True).stdout.split()
    before, after, long, main = out
    assert before != "before-1"  # started before the hook: the kernel still calls it by the process's name
    assert (after, long) == ("search_4", "embed-batch~c-0")
    assert main == before  # the main thread keeps the process's name (ps and pgrep find the hub by it)


def test_a_served_hub_names_its_threads(tmp_path: Path, external_pg_admin_url: str) -> None:
    url = create_scratch_database(external_pg_admin_url)
    try:
        hub = spawn_hub(tmp_path, tmp_path / "data", database_url=url)
        try:
            with MemhubClient(hub.address, token=hub.token("tester")) as client:
                note = "the thread names test writes one memory"
                assert client.write([memory_input("agents/tester/notes", note)], wait_indexed=True).indexed
                hits = client.search("thread names", ["agents/tester"]).hits  # runs the search pool's threads
                assert [h.memory.content for h in hits] == [note]
            names = _kernel_names(hub.proc.pid)
        finally:
            assert hub.stop() == 0
    finally:
        drop_database(external_pg_admin_url, url)
    for expected in ("grpc-loop", "indexer", "health", "audit"):
        assert expected in names, names
    assert any(n.startswith("rpc_") for n in names), names
    assert any(n.startswith("search_") for n in names), names
    assert any(n.startswith("embed-batch~") for n in names), names
