"""The memhub command line for people: light to start, every option explained, mistakes answered by the right usage."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import pytest
from conftest import Stack

from memhub.cli.client_cmds import forgot_summary
from memhub.cli.main import build_parser

# What a client command must not load: the stores and their drivers cost seconds of CPU per call.
HEAVY = ("sqlalchemy", "pymilvus", "pandas", "alembic", "psycopg", "onnxruntime", "mcp")


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("memhub",)):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, (*path, name))
        elif not isinstance(action, argparse._HelpAction):
            yield path, action


def test_every_option_and_positional_has_a_help_line() -> None:
    missing = [
        f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest}"
        for path, action in walk(build_parser())
        if not action.help
    ]
    assert missing == []


@pytest.mark.parametrize(
    ("argv", "usage", "unknown"),
    [
        (["search", "q", "--top_k", "3"], "usage: memhub search", "--top_k 3"),
        (["serve", "--prot", "1"], "usage: memhub serve", "--prot 1"),
        (["token", "issue", "--agent", "a", "--tll", "1h"], "usage: memhub token issue", "--tll 1h"),
        (["policy", "validate", "--verbose"], "usage: memhub policy validate", "--verbose"),
    ],
)
def test_a_typo_in_a_subcommand_option_prints_that_subcommands_usage(argv: list[str], usage: str, unknown: str) -> None:
    done = subprocess.run([sys.executable, "-m", "memhub.cli.main", *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.startswith(usage), done.stderr
    assert f"error: unrecognized arguments: {unknown}" in done.stderr


def test_help_and_client_commands_do_not_import_the_stores(stack: Stack) -> None:
    """`memhub --help` and `memhub search` load gRPC and the protos, not SQLAlchemy, pymilvus, pandas or alembic."""
    probe = (
        "import json, sys\n"
        "from memhub.cli.main import main\n"
        "rc = main(sys.argv[1:])\n"
        f"print(json.dumps({{'rc': rc, 'heavy': sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))}}))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env["MEMHUB_TOKEN"] = stack.token("tester")
    for argv in (["search", "anything", "--hub", stack.address], ["list", "--hub", stack.address, "--page-size", "1"]):
        done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert result == {"rc": 0, "heavy": []}, (argv, result)
    loaded = "import sys\nimport memhub.cli.main\nprint(sorted(m for m in sys.modules if m.split('.')[0] in sys.argv[1:]))"
    listed = subprocess.run(
        [sys.executable, "-c", loaded, *HEAVY],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.stdout.strip() == "[]", listed.stdout


@pytest.mark.parametrize(
    ("count", "asked", "line"),
    [
        (1, 1, "forgot 1 memory"),
        (0, 1, "forgot 0 memories (already forgotten)"),
        (2, 3, "forgot 2 memories (1 already forgotten)"),
        (3, 0, "forgot 3 memories"),
        (0, 0, "forgot 0 memories (nothing active matched the filter)"),
    ],
)
def test_forget_counts_read_as_english(count: int, asked: int, line: str) -> None:
    assert forgot_summary(count, asked=asked) == line
