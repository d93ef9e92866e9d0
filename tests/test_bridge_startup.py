"""The bridge's start-up check: a set-up that cannot work stops the bridge at once, with the reason and the fix.

Each case starts the real bridge process (`memhub bridge`, stdio) against
the fleet hub and expects it to exit 1 before serving, with one message on
stderr and nothing on stdout. Without the check every one of them would
start, serve its tool list, and fail only on the first tool call.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import GROUPS, REPO, Fleet
from mcp import Client, StdioServerParameters, stdio_client

from memhub.auth import issue_token
from memhub.bridge.narrowing import TOOL_NAMES

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def env_with(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHUB_", "OTEL_"))}
    return env | extra


def start(hub: str, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`memhub bridge` over stdio with nothing on stdin: a bridge that passes its check serves and exits 0 at EOF."""
    return subprocess.run(
        [sys.executable, "-m", "memhub.cli.main", "bridge", "--hub", hub, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env_with(MEMHUB_TOKEN=token),
        timeout=120,
    )


def refused(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1 and done.stdout == "", (done.returncode, done.stdout, done.stderr)
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("memhub bridge: ")]
    return line


def token(fleet: Fleet, agent: str = "alice", ttl: timedelta = timedelta(days=30), **kw) -> str:  # noqa: ANN003
    return issue_token(fleet.secret, agent_id=agent, groups=list(GROUPS[agent]), ttl=ttl, **kw).token


def test_a_good_token_and_a_running_hub_pass(fleet: Fleet) -> None:
    done = start(fleet.address, token(fleet))
    assert done.returncode == 0, done.stderr  # served, then stdin ended


def test_an_expired_token_is_refused_at_start_with_how_to_renew_it(fleet: Fleet) -> None:
    issued_at = datetime.now(timezone.utc) - timedelta(hours=3)
    line = refused(start(fleet.address, token(fleet, ttl=timedelta(hours=1), now=issued_at)))
    assert "the agent's token (from MEMHUB_TOKEN) expired at " in line and ", 2 h ago: the hub refuses it." in line
    assert "`memhub bridge init --agent alice --force`" in line and "restart the bridge" in line


def test_a_token_not_valid_yet_is_refused_naming_the_clock(fleet: Fleet, tmp_path: Path) -> None:
    token_file = tmp_path / "alice.jwt"
    token_file.write_text(token(fleet, ttl=timedelta(days=2), now=datetime.now(timezone.utc) + timedelta(days=1)))
    token_file.chmod(0o600)
    line = refused(start(fleet.address, "", "--token-file", str(token_file)))
    assert f"the agent's token (from the file {token_file}) is not valid until " in line
    assert "the clock of this machine or of the one that issued it is wrong" in line


def test_a_token_that_is_no_jwt_is_refused(fleet: Fleet) -> None:
    line = refused(start(fleet.address, "not-a-token-at-all"))
    assert "is not a JWT" in line and "not-a-token-at-all" not in line


def test_an_unreachable_hub_is_refused_naming_the_address_and_what_to_do(fleet: Fleet) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    line = refused(start(f"127.0.0.1:{port}", token(fleet), "--startup-wait", "0.5"))
    assert f"cannot reach the hub at 127.0.0.1:{port} (from --hub): UNAVAILABLE" in line
    assert "Is `memhub serve` running?" in line and "--hub HOST:PORT" in line


def test_a_token_for_another_audience_is_refused_in_the_hubs_words(fleet: Fleet) -> None:
    line = refused(start(fleet.address, token(fleet, audience="elsewhere")))
    assert (
        f"the hub at {fleet.address} refused the agent's token: token audience is wrong: this hub accepts tokens for 'memhub'"
        in line
    )
    assert "(the token says sub 'alice', aud 'elsewhere', iss 'memhub')" in line
    assert "MEMHUB_JWT_AUDIENCE" in line


def test_a_token_signed_with_another_key_is_refused(fleet: Fleet) -> None:
    foreign = issue_token(b"another-hub-secret-of-32-bytes!!", agent_id="alice", groups=[], ttl=timedelta(hours=1)).token
    line = refused(start(fleet.address, foreign))
    assert "refused the agent's token: token signature is invalid" in line and "another --data-dir?" in line


async def test_a_short_lived_token_still_starts_but_says_when_it_will_stop_working(fleet: Fleet, tmp_path: Path) -> None:
    errors = tmp_path / "stderr.log"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memhub.cli.main", "bridge", "--hub", fleet.address],
        env=env_with(MEMHUB_TOKEN=token(fleet, ttl=timedelta(hours=1))),
        cwd=str(REPO),
    )
    with errors.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            assert len((await client.list_tools()).tools) == len(TOOL_NAMES)
    logged = errors.read_text()
    assert "the agent's token expires in " in logged
    assert "`memhub bridge init --agent alice --force` issues one for 30 days" in logged
