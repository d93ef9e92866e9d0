"""One token per agent: how the examples in this folder get theirs.

Every agent gets its own token, and the hub decides from it what that agent may read, write and forget. The
examples act as two agents, alice and bob. Each takes its token from ALICE_TOKEN / BOB_TOKEN when set (in
production an operator issues tokens and hands each agent its own); otherwise it issues one with
`memhub token issue --agent NAME`, which works where the hub runs, since it signs with the hub's local secret.
"""

from __future__ import annotations

import os
import subprocess
import sys

from memhub.client_env import address_from_env


def agent_token(agent: str) -> str:
    """The token of ``agent``: $<AGENT>_TOKEN, else a new one-hour token from `memhub token issue`."""
    given = os.environ.get(f"{agent.upper()}_TOKEN", "").strip()
    if given:
        return given
    proc = subprocess.run(
        [sys.executable, "-m", "memhub.cli.main", "token", "issue", "--agent", agent, "--ttl", "1h"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(
            f"cannot issue a token for {agent}: {proc.stderr.strip()}\n"
            f"Run this where the hub runs, or set {agent.upper()}_TOKEN to a token issued for {agent}."
        )
    return proc.stdout.strip()


def hub_address() -> str:
    """MEMHUB_ADDRESS, else the address `memhub serve` recorded, else 127.0.0.1:50051."""
    return address_from_env()
