"""Shared pieces of the attack benchmarks (bench/attack_*.py, issue 10): agents, policies, timing.

Each attack script starts a real `memhub serve` (bench/hubproc.py) on the
embedded defaults, plays one agent that misbehaves and another that only
wants its ordinary calls answered, and prints what the second one saw.
Run them from the repository root with the code under test first on the
path, e.g. ``PYTHONPATH=. .venv/bin/python bench/attack_search_flood.py``:
the scripts import ``hub`` and the hub subprocess inherits PYTHONPATH.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import grpc
from hubproc import BENCH_POLICY, REPO, RunningHub, bench_policy_dir

from memhub.auth import issue_token, load_secret
from memhub.auth.config import LOCAL_SECRET_NAME
from memhub.client import MemhubClient
from memhub.v1 import admin_pb2

# The shipped default (every agent owns agents/<its id>/**) plus the benchmark's all-powerful group "bench".
FLEET_POLICY = (REPO / "policies" / "default.cedar").read_text() + "\n" + BENCH_POLICY


def fleet_policy_env(root: Path) -> dict[str, str]:
    """Environment for running_hub(): the default policy plus group "bench" (admin for the audit queries)."""
    return {"MEMHUB_POLICY_DIR": str(bench_policy_dir(root / "fleet", FLEET_POLICY))}


def token_for(hub: RunningHub, agent: str, groups: tuple[str, ...] = ()) -> str:
    secret = load_secret(hub.data_dir / LOCAL_SECRET_NAME)
    return issue_token(secret, agent_id=agent, groups=list(groups), ttl=timedelta(hours=2)).token


def client_for(hub: RunningHub, agent: str, groups: tuple[str, ...] = (), timeout_s: float = 30.0) -> MemhubClient:
    return MemhubClient(hub.address, token=token_for(hub, agent, groups), timeout_s=timeout_s)


def pct(values: list[float], p: float) -> float:
    """The p-quantile of seconds, in milliseconds (nan when empty)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] * 1000


def timed_calls(
    call: Callable[[], object], *, count: int | None = None, seconds: float | None = None
) -> tuple[list[float], Counter]:
    """Run ``call`` ``count`` times or for ``seconds``; latencies of the successful calls and a count per outcome."""
    latencies: list[float] = []
    outcomes: Counter[str] = Counter()
    deadline = time.monotonic() + (seconds or 0)
    n = 0
    while (count is not None and n < count) or (seconds is not None and time.monotonic() < deadline):
        n += 1
        t0 = time.perf_counter()
        try:
            call()
        except grpc.RpcError as exc:
            outcomes[exc.code().name] += 1
            advice = dict(exc.trailing_metadata() or ()).get("retry-after")
            if advice:  # a well-behaved client waits as told (at most a second here)
                time.sleep(min(float(advice), 1.0))
            continue
        latencies.append(time.perf_counter() - t0)
        outcomes["OK"] += 1
    return latencies, outcomes


def describe(label: str, latencies: list[float], outcomes: Counter) -> str:
    parts = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
    return f"{label}: p50 {pct(latencies, 0.5):8.1f} ms  p99 {pct(latencies, 0.99):8.1f} ms  ({parts})"


def audit_rows(admin: MemhubClient, agent: str) -> int:
    """How many audit entries name ``agent`` (pages through QueryAuditLog; the caller needs the admin action)."""
    total, token = 0, ""
    while True:
        reply = admin.call_admin(
            "QueryAuditLog", admin_pb2.QueryAuditLogRequest(agent_id=agent, page_size=1000, page_token=token)
        )
        total += len(reply.entries)
        token = reply.next_page_token
        if not token:
            return total


def settle_audit() -> None:
    """The hub writes audit entries in batches every half second: wait for one to pass."""
    time.sleep(1.5)
