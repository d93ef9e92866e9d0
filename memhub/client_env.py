"""Where an agent's process finds its hub and its token: the environment, as the CLI and the MCP bridge read it.

MEMHUB_ADDRESS (else the hub `memhub serve` recorded, else 127.0.0.1:50051) and MEMHUB_TOKEN_FILE (a file
holding the agent's JWT) or MEMHUB_TOKEN (the JWT itself). One token per agent: the hub decides from it what
the agent may read, write and forget.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from memhub import client_config


def address_from_env(env: Mapping[str, str] | None = None) -> str:
    """MEMHUB_ADDRESS, else the address `memhub serve` recorded for this account, else the default."""
    env = os.environ if env is None else env
    if chosen := env.get("MEMHUB_ADDRESS", "").strip():
        return chosen
    recorded = client_config.read()
    return recorded.address if recorded is not None else client_config.DEFAULT_ADDRESS


def token_from_env(env: Mapping[str, str] | None = None) -> str:
    """The agent's JWT: the contents of MEMHUB_TOKEN_FILE, else MEMHUB_TOKEN; ValueError saying what to set."""
    env = os.environ if env is None else env
    if file := env.get("MEMHUB_TOKEN_FILE", "").strip():
        try:
            token = Path(file).read_text().strip()
        except OSError as exc:
            raise ValueError(f"cannot read the token file {file} (MEMHUB_TOKEN_FILE): {exc.strerror}") from None
        if not token:
            raise ValueError(f"the token file {file} (MEMHUB_TOKEN_FILE) is empty; write the agent's JWT into it")
        return token
    given = env.get("MEMHUB_TOKEN")
    if given is None:
        raise ValueError("no memhub token: set MEMHUB_TOKEN_FILE to a file holding the agent's JWT, or MEMHUB_TOKEN to the JWT")
    if not given.strip():
        raise ValueError("MEMHUB_TOKEN is set but empty (did the `memhub token issue` that set it fail? run it alone to see why)")
    return given.strip()
