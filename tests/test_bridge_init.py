"""`memhub bridge init`: the files it writes, and the Claude Desktop configuration it prints, used as printed.

The command runs as a user runs it (a subprocess of `memhub`), signing with
the fleet hub's secret; the printed JSON's command line is then started by
the SDK's own stdio client, as Claude Desktop would, and lists the tools.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import jwt
import pytest
from conftest import REPO, Fleet
from mcp import Client, StdioServerParameters, stdio_client

from memhub.bridge.narrowing import TOOL_NAMES, load_narrowing

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
        [sys.executable, "-m", "memhub.cli.main", "bridge", "init", "--secret-file", str(fleet.hub.config.auth.hs256_secret_file)]
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
        assert tools == sorted(TOOL_NAMES)
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
        [sys.executable, "-m", "memhub.cli.main", "bridge", "init", "--agent", "alice", "--data-dir", str(tmp_path / "no-hub")]
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
        "from memhub.cli.main import main\n"
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


# -- the docs' HTTP bridge flow (docs/guides/mcp-bridge.md), as written -------------------------------

STEP = "@@step "


def readme_bridge_commands() -> list[str]:
    text = (REPO / "docs" / "guides" / "mcp-bridge.md").read_text()
    section = text[text.index("## Try it: a bridge for HTTP clients") :]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "the MCP bridge guide's 'Try it' section has no ```sh block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served_hub(env: dict[str, str], data_dir: Path) -> Iterator[int]:
    """`memhub serve` on a non-default port and data directory, as a user starts it in another terminal."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "memhub.cli.main", "serve", "--port", str(port), "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=REPO,
    )
    printed = []
    try:
        for line in proc.stdout:
            printed.append(line)
            if line.startswith("  try:"):
                break
        assert any(f"listening on 127.0.0.1:{port}" in line for line in printed), "".join(printed)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_docs_http_bridge_flow_runs_as_written(tmp_path: Path) -> None:
    """The MCP bridge guide's block, line by line in one bash, by a user whose home is fresh; the only substitution is
    the bridge's port (8765 may be taken on a test machine)."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHUB_", "OTEL_")) and k != "XDG_CONFIG_HOME"}
    env["HOME"] = str(home)
    lines = readme_bridge_commands()
    assert any(line.startswith("memhub bridge init --agent reviewer") for line in lines)
    assert not any("--hub" in line for line in lines)  # the bridge finds the hub as the client commands do
    port = str(free_port())
    script = "\n".join(f"echo '{STEP}{i}'\n{line.replace('8765', port)}" for i, line in enumerate(lines))

    with served_hub(env, tmp_path / "hub-data"):
        proc = subprocess.Popen(
            ["bash", "-c", "set -e\n" + script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=REPO,
            start_new_session=True,  # the backgrounded bridge is in this group: stopped below if the script fails
        )
        try:
            stdout, stderr = proc.communicate(timeout=300)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
    assert proc.returncode == 0, f"rc {proc.returncode}\n{stdout}\n{stderr}"
    outputs = {int(n): out for n, _, out in (chunk.partition("\n") for chunk in stdout.split(STEP)[1:])}
    by_command = {line.split("  #")[0].strip(): outputs[i] for i, line in enumerate(lines)}

    agents = home / ".config" / "memhub" / "agents"
    assert mode(agents / "reviewer.jwt") == 0o600 and mode(agents / "reviewer-http.token") == 0o600
    init_out = next(out for cmd, out in by_command.items() if cmd.startswith("memhub bridge init"))
    assert printed_json(init_out)["mcpServers"]["memhub"]["args"][:2] == ["bridge", "--hub"]
    listed = next(out for cmd, out in by_command.items() if cmd.endswith(" list"))
    assert sorted(line.split(":")[0] for line in listed.splitlines() if not line.startswith(" ")) == sorted(TOOL_NAMES)
    searched = next(out for cmd, out in by_command.items() if "call search_memories" in cmd)
    assert searched.startswith("No memories match 'release freeze' in every namespace this agent may read.")
    assert f"streamable HTTP for agent 'reviewer' on http://127.0.0.1:{port}/mcp" in stderr
