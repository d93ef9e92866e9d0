"""Run a real `memhub serve` process for a benchmark, on its embedded defaults in a scratch data directory.

The hub gets a policy set that lets group "bench" do everything (the schema
is the shipped one), and the benchmark a token for agent "bench" in it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from memhub.auth import issue_token, load_secret
from memhub.auth.config import LOCAL_SECRET_NAME
from memhub.client import MemhubClient, memory_input
from memhub.v1 import admin_pb2

REPO = Path(__file__).resolve().parent.parent
BENCH_POLICY = '@id("bench-everything")\npermit(principal in Group::"bench", action, resource);\n'


@dataclass(frozen=True)
class RunningHub:
    address: str
    token: str
    data_dir: Path
    pid: int


def bench_policy_dir(root: Path, policy: str = BENCH_POLICY) -> Path:
    folder = root / "policies"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "policies" / "schema.cedarschema", folder / "schema.cedarschema")
    (folder / "bench.cedar").write_text(policy)
    return folder


def wait_until_indexed(client: MemhubClient, *, progress: bool = False) -> None:
    """Block until everything written so far is searchable.

    A write made now and indexed, and then an empty outbox: the indexer's workers apply batches side by side, so
    the barrier may be indexed while an earlier batch is still being embedded. With ``progress``, says every 10 s
    (each wait) that it is still waiting.
    """
    started = time.monotonic()
    while not client.write([memory_input("bench/barrier", f"barrier {time.time()}")], wait_indexed=True).indexed:
        if progress:
            print(f"  indexing... {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
    while client.call_admin("GetIndexHealth", admin_pb2.GetIndexHealthRequest()).outbox_depth:
        time.sleep(0.1)


@contextlib.contextmanager
def running_hub(data_dir: Path | None = None, extra_env: dict[str, str] | None = None) -> Iterator[RunningHub]:
    """Start a hub, yield its address and a token, stop it (and delete a scratch data directory) afterwards."""
    scratch = data_dir is None
    data = Path(tempfile.mkdtemp(prefix="memhub-bench-")) if scratch else data_dir
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    # The benchmark's own agent is exempt from the per-agent call limits: the benchmarks measure what a hub
    # can serve, not one agent's share of it (bench/attack_*.py play other agents, under the defaults).
    # MEMHUB_CLIENT_CONFIG=none: a bench hub does not record its address in the user's client file, which
    # pointed the user's `memhub` commands at it and was deleted when it stopped, losing their own hub's record.
    env |= {
        "MEMHUB_POLICY_DIR": str(bench_policy_dir(data)),
        "MEMHUB_AGENT_LIMITS": "bench=0/0",
        "MEMHUB_CLIENT_CONFIG": "none",
    } | (extra_env or {})
    # -P: no working directory at the front of sys.path, so a PYTHONPATH given in ``extra_env`` (a worktree of other
    # code, to compare with) is what the hub imports; with -m alone the bench's own checkout came first and shadowed it.
    proc = subprocess.Popen(
        [
            sys.executable,
            "-P",
            "-m",
            "memhub.cli.main",
            "serve",
            "--data-dir",
            str(data),
            "--port",
            "0",
            "--log-level",
            "warning",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        address = None
        for line in proc.stdout:
            match = re.search(r"listening on (\S+:\d+)", line)
            if match:
                address = match.group(1)
                break
        if address is None:
            raise SystemExit(f"the hub did not start (exit code {proc.wait()}); see its log above")
        # Several hubs sharing one database share one secret (MEMHUB_JWT_SECRET_FILE); otherwise the hub's own.
        secret = load_secret(Path(env.get("MEMHUB_JWT_SECRET_FILE") or data / LOCAL_SECRET_NAME))
        token = issue_token(secret, agent_id="bench", groups=["bench"], ttl=timedelta(days=1)).token
        yield RunningHub(address, token, data, proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        if scratch:
            shutil.rmtree(data, ignore_errors=True)
