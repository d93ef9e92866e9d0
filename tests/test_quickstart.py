"""The README's shell quickstart, run as written against a hub started with a non-default --port and --data-dir.

The commands are read from README.md itself (the block between its `--8<-- [start:quickstart]` and
`[end:quickstart]` markers, which the docs site's Quickstart page includes), so neither can drift from
what works. The only substitution is the documented `<id>` placeholder.
A client file of the test's own (XDG_CONFIG_HOME) stands in for
~/.config/memhub, which `memhub serve` writes and the commands read.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
STEP = "@@step "


def quickstart_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text[text.index("--8<-- [start:quickstart]") : text.index("--8<-- [end:quickstart]")]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block, "README's quickstart section has no ```sh block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def user_env(tmp_path: Path) -> dict[str, str]:
    """A shell environment like a new user's: nothing MEMHUB_* set, a home of its own for the client file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    return env


@pytest.fixture
def served_hub(tmp_path: Path, user_env: dict[str, str]) -> Iterator[tuple[int, Path]]:
    port, data_dir = free_port(), tmp_path / "hub-data"
    proc = subprocess.Popen(
        [sys.executable, "-m", "memhub.cli.main", "serve", "--port", str(port), "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=user_env,
        cwd=REPO,
    )
    printed = []
    try:
        for line in proc.stdout:
            printed.append(line)
            if line.startswith("  try:"):
                break
        assert any(f"listening on 127.0.0.1:{port}" in line for line in printed), "".join(printed)
        yield port, data_dir
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    # A stopped hub takes its record with it, so the next command does not dial a dead address.
    assert not (tmp_path / "config" / "memhub" / "client.json").exists()


def run_script(lines: list[str], env: dict[str, str]) -> dict[int, str]:
    """Run the lines in one bash (exports carry over), each behind a marker; returns each line's output."""
    script = "\n".join(f"echo '{STEP}{i}'\n{line}" for i, line in enumerate(lines))
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert done.returncode == 0, f"quickstart failed (rc {done.returncode}):\n{done.stdout}\n{done.stderr}"
    outputs: dict[int, str] = {}
    for chunk in done.stdout.split(STEP)[1:]:
        number, _, output = chunk.partition("\n")
        outputs[int(number)] = output
    return outputs


def test_readme_quickstart_runs_as_written_with_non_default_port_and_data_dir(
    served_hub: tuple[int, Path], user_env: dict[str, str]
) -> None:
    lines = quickstart_commands()
    assert not any("--hub" in line or "--data-dir" in line for line in lines)  # nothing repeats serve's flags
    forget = next(i for i, line in enumerate(lines) if "<id>" in line)
    first = run_script(lines[:forget], user_env)
    by_command = {line.split("#")[0].strip(): first[i] for i, line in enumerate(lines[:forget])}

    writes = [out for cmd, out in by_command.items() if cmd.startswith("memhub write")]
    assert len(writes) == 3 and all(re.fullmatch(rf"wrote {UUID} to agents/planner/\w+ \(version \d+\)\n", w) for w in writes), (
        writes
    )
    searches = [out for cmd, out in by_command.items() if cmd.startswith("memhub search")]
    assert "Deploys freeze on Fridays after 3pm" in searches[0]
    assert "ERR-4312" in searches[1] and re.search(r"(dense|keyword) #1", searches[1]), searches[1]
    listed = next(out for cmd, out in by_command.items() if cmd.startswith("memhub list"))
    assert listed.count("<memory ") == 3 and "Alice prefers answers in German" in listed

    # The documented placeholder: an id that write printed. The token from the first part is exported again.
    memory_id = re.search(UUID, writes[0]).group(0)
    token = subprocess.run(
        [sys.executable, "-m", "memhub.cli.main", "token", "issue", "--agent", "planner"],
        capture_output=True,
        text=True,
        env=user_env,
        check=True,
    ).stdout.strip()
    setup = [line for line in lines[:forget] if line.startswith("source ")]  # the shell's set-up, as the README has it
    rest = [*setup, f"export MEMHUB_TOKEN={token}", *(line.replace("<id>", memory_id) for line in lines[forget:])]
    second = run_script(rest, user_env)
    assert second[len(rest) - 1] == f"forgot 1 memory\n  {memory_id}\n"

    # The README's operator token under the shipped policies (default.cedar + operators.cedar, issue 24): it
    # administers the hub and, as an auditor, reads every namespace, so it finds planner's memories too.
    operator = [
        "source .venv/bin/activate",
        "export MEMHUB_TOKEN=$(memhub token issue --agent ops --groups admins,auditors --ttl 8h)",
        'memhub search "can I deploy on Friday afternoon?"',
        "memhub token list --agent planner",
    ]
    ops = run_script(operator, user_env)
    assert "Alice prefers answers in German" in ops[2] and ops[2].startswith("order: "), ops[2]  # (Deploys... is forgotten)
    assert "  planner  [-]  expires " in ops[3]  # the tokens planner's commands used, as the hub recorded them


def test_client_commands_without_a_recorded_hub_name_the_default_address(user_env: dict[str, str]) -> None:
    env = {**user_env, "MEMHUB_TOKEN": "x.y.z"}
    done = subprocess.run(
        [sys.executable, "-m", "memhub.cli.main", "search", "anything"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 1
    assert "is the hub running at 127.0.0.1:50051, the default?" in done.stderr


def test_a_failed_token_issue_inside_export_is_reported_by_the_next_command(tmp_path: Path, user_env: dict[str, str]) -> None:
    script = (
        f"export MEMHUB_TOKEN=$({sys.executable} -m memhub.cli.main token issue --agent planner"
        f" --data-dir {tmp_path / 'nohub'})\n"
        f"{sys.executable} -m memhub.cli.main search hello"
    )
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=user_env, timeout=60)
    assert done.returncode != 0
    assert f"no token secret at {tmp_path / 'nohub' / 'jwt-secret'} (from --data-dir)" in done.stderr
    assert "MEMHUB_TOKEN is set but empty" in done.stderr
