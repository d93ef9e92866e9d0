"""`memhub bridge init`: the files it writes, and the Claude Desktop configuration it prints, used as printed.

The command runs as a user runs it (a subprocess of `memhub`), signing with
the fleet hub's secret; the printed JSON's command line is then started by
the SDK's own stdio client, as Claude Desktop would, and lists the tools.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import jwt
import pytest
from conftest import REPO, Fleet
from mcp import Client, StdioServerParameters, stdio_client

from mcp_bridge.narrowing import load_narrowing

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def user_env(tmp_path: Path) -> dict[str, str]:
    """A user's shell: no MEMHUB_* settings, a config home of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHUB_", "OTEL_"))}
    return env | {"XDG_CONFIG_HOME": str(tmp_path / "config")}


def init(fleet: Fleet, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hub.cli.main", "bridge", "init", "--secret-file", str(fleet.hub.config.auth.hs256_secret_file)]
        + ["--hub", fleet.address, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=user_env(tmp_path),
        timeout=120,
    )


def printed_json(stdout: str) -> dict:
    """The JSON block init prints: from a line that is just '{' to the next line that is just '}'."""
    block = re.search(r"^\{\n.*?^\}$", stdout, re.S | re.M)
    assert block, stdout
    return json.loads(block.group(0))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_init_writes_private_files_and_a_claude_desktop_config_that_starts_a_working_bridge(
    fleet: Fleet, tmp_path: Path
) -> None:
    out = tmp_path / "agents"
    done = init(fleet, tmp_path, "--agent", "alice", "--groups", "support", "--out", str(out), "--namespaces", "teams/support")
    assert done.returncode == 0, done.stderr

    token_file, narrowing_file, http_file = out / "alice.jwt", out / "alice.toml", out / "alice-http.token"
    assert mode(out) == 0o700 and mode(token_file) == 0o600 and mode(http_file) == 0o600
    assert mode(narrowing_file) == 0o644  # no secret in it
    claims = jwt.decode(token_file.read_text().strip(), fleet.secret, algorithms=["HS256"], audience="memhub")
    assert (claims["sub"], claims["groups"]) == ("alice", ["support"])
    assert timedelta(seconds=claims["exp"] - claims["iat"]) == timedelta(days=30)  # a desktop set-up outlives 1h
    assert load_narrowing(narrowing_file).namespaces == ("teams/support",)
    assert len(http_file.read_text().strip()) == 64
    assert claims["jti"] in done.stdout and token_file.read_text().strip() not in done.stdout  # named, never shown

    config = printed_json(done.stdout)
    server = config["mcpServers"]["memhub"]
    assert Path(server["command"]).is_absolute() and Path(server["command"]).name == "memhub"
    assert server["args"] == [
        "bridge",
        "--hub",
        fleet.address,
        "--token-file",
        str(token_file),
        "--config",
        str(narrowing_file),
    ]
    assert "~/Library/Application Support/Claude/claude_desktop_config.json" in done.stdout
    assert r"%APPDATA%\Claude\claude_desktop_config.json" in done.stdout
    assert f"http://127.0.0.1:8765/mcp and the header\n  Authorization: Bearer <the contents of {http_file}>" in done.stdout

    # As Claude Desktop starts it: the command and args exactly, an environment without memhub settings.
    params = StdioServerParameters(command=server["command"], args=server["args"], env=user_env(tmp_path))
    async with Client(stdio_client(params)) as client:
        tools = sorted(tool.name for tool in (await client.list_tools()).tools)
        assert tools == ["forget_memory", "get_preferences", "search_memories", "write_memory"]
        found = await client.call_tool("search_memories", {"query": "anything"})
        assert not found.is_error and found.structured_content["namespaces"] == ["teams/support"]


def test_init_refuses_to_overwrite_a_token_file_unless_forced_and_names_the_replaced_token(fleet: Fleet, tmp_path: Path) -> None:
    out = tmp_path / "agents"
    assert init(fleet, tmp_path, "--agent", "bob", "--out", str(out)).returncode == 0
    first = (out / "bob.jwt").read_text()
    http_token = (out / "bob-http.token").read_text()

    again = init(fleet, tmp_path, "--agent", "bob", "--out", str(out))
    assert again.returncode == 1 and again.stdout == ""
    assert f"{out / 'bob.jwt'} already exists; pass --force to replace it" in again.stderr
    assert (out / "bob.jwt").read_text() == first

    rotated = init(fleet, tmp_path, "--agent", "bob", "--out", str(out), "--force", "--ttl", "7d")
    assert rotated.returncode == 0, rotated.stderr
    old_id = jwt.decode(first.strip(), options={"verify_signature": False})["jti"]
    assert f'memhub token revoke {old_id} --reason "rotated"' in rotated.stdout
    assert (out / "bob.jwt").read_text() != first and mode(out / "bob.jwt") == 0o600
    assert (out / "bob-http.token").read_text() == http_token  # HTTP clients configured with it keep working


def test_init_says_what_is_wrong_before_writing_anything(fleet: Fleet, tmp_path: Path) -> None:
    out = tmp_path / "agents"
    cases = [
        (("--agent", "alice", "--namespaces", "Teams/support"), "--namespaces[0]: segment 'Teams' has upper-case letters"),
        (("--agent", "no/slash"), "--agent: must be 1 to 128 characters"),
        (("--agent", "alice", "--ttl", "400d"), "--ttl: must be between 1 second and 366 days"),
    ]
    for args, message in cases:
        done = init(fleet, tmp_path, *args, "--out", str(out))
        assert done.returncode == 2 and message in done.stderr, done.stderr
    missing = subprocess.run(
        [sys.executable, "-m", "hub.cli.main", "bridge", "init", "--agent", "alice", "--data-dir", str(tmp_path / "no-hub")]
        + ["--out", str(out)],
        capture_output=True,
        text=True,
        env=user_env(tmp_path),
        timeout=120,
    )
    assert missing.returncode == 1 and f"no token secret at {tmp_path / 'no-hub' / 'jwt-secret'}" in missing.stderr
    assert not out.exists()


def test_memhub_help_and_bridge_init_help_load_no_sdk_and_no_store_libraries(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from hub.cli.main import main\n"
        "for argv in (['--help'], ['bridge', '--help'], ['bridge', 'init', '--help']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'pymilvus', 'sqlalchemy', 'httpx2', 'anyio'})\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=user_env(tmp_path), timeout=120)
    assert "HEAVY []" in done.stderr, done.stderr
    assert "memhub bridge init [-h] --agent AGENT" in done.stdout and "default 30d" in done.stdout
