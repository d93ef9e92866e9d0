"""`memhub policy validate` and `memhub policy test FILE`: policy checks for CI and for operators.

    memhub policy validate [--dir policies] [--files default.cedar,examples/fleet.cedar]
        exit 0 and one summary line (version, files, policy ids), or exit 1
        listing every error.
    memhub policy test TABLE.csv [--dir policies] [--files ...] [-v]
        runs a decision table (memhub/policy/table.py); prints each failing row
        with the decision and the policy ids that made it, then
        "N passed, M failed". Exit 0 when all pass, 1 on any failing row or
        invalid policies, 2 when the table is malformed (or missing).

--dir defaults to $MEMHUB_POLICY_DIR, else the policies/ folder shipped
beside the hub package (the hub's own default, so the check covers what the
hub loads); --files (comma
separated, repeatable) defaults to $MEMHUB_POLICY_FILES, else every *.cedar
file directly in the directory (see memhub/policy/sources.py for the rule).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memhub.cli.arguments import StrictArgumentParser
from memhub.policy.model import PolicyError

if TYPE_CHECKING:
    from memhub.policy.engine import PolicyEngine

DIR_ENV = "MEMHUB_POLICY_DIR"
SHIPPED_DIR = (Path(__file__).parent.parent / "shipped_policies").resolve()  # same as memhub.config.default_policy_dir()
FILES_ENV = "MEMHUB_POLICY_FILES"


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register `policy` with its `validate` and `test` subcommands (each sets `func`)."""
    p = sub.add_parser(
        "policy",
        help="validate policies and run decision tables",
        description="Check Cedar policies against their schema and against decision tables.",
    )
    psub = p.add_subparsers(dest="policy_command", required=True, metavar="SUBCOMMAND")

    v = psub.add_parser(
        "validate",
        help="validate the policy files against the schema",
        description="Load the schema and policy files; exit 1 listing every error.",
    )
    _add_common(v)
    v.set_defaults(func=run_validate)

    t = psub.add_parser(
        "test",
        help="check a decision table against the policies",
        description="Run a CSV decision table (agent,groups,action,namespace,expected,note).",
    )
    t.add_argument("table", type=Path, metavar="FILE", help="the decision table (CSV)")
    t.add_argument("-v", "--verbose", action="store_true", help="print passing rows too")
    _add_common(t)
    t.set_defaults(func=run_test)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dir", type=Path, default=None, help=f"policy directory (default: ${DIR_ENV}, else the shipped policies/ folder)"
    )
    p.add_argument(
        "--files",
        action="append",
        default=None,
        metavar="A.cedar,B.cedar",
        help=f"policy files relative to --dir, comma separated (default: ${FILES_ENV}, else every *.cedar directly in --dir)",
    )


def _selection(args: argparse.Namespace) -> tuple[Path, list[str] | None]:
    directory = args.dir or (Path(os.environ[DIR_ENV]).expanduser() if os.environ.get(DIR_ENV) else SHIPPED_DIR)
    raw = args.files if args.files is not None else ([os.environ[FILES_ENV]] if os.environ.get(FILES_ENV) else None)
    files = None if raw is None else [f.strip() for chunk in raw for f in chunk.split(",") if f.strip()]
    return directory, files


def _load(args: argparse.Namespace, command: str) -> PolicyEngine | None:
    from memhub.policy.engine import PolicyEngine  # cedarpy is loaded by the commands that use it, not by `memhub --help`

    directory, files = _selection(args)
    try:
        return PolicyEngine.from_dir(directory, files=files)
    except PolicyError as exc:
        print(f"memhub policy {command}: {exc}", file=sys.stderr)
        return None


def run_validate(args: argparse.Namespace) -> int:
    engine = _load(args, "validate")
    if engine is None:
        return 1
    print(
        f"OK {len(engine.policies)} policies valid against {engine.schema_file} "
        f"(version {engine.version[:12]}; files {', '.join(engine.files)}): {', '.join(engine.policy_ids)}"
    )
    return 0


def run_test(args: argparse.Namespace) -> int:
    from memhub.policy.table import TableError, describe, load_table, run_table

    engine = _load(args, "test")
    if engine is None:
        return 1
    try:
        rows = load_table(args.table, engine.actions)
    except TableError as exc:
        print(f"memhub policy test: malformed table ({len(exc.errors)} problem(s)):", file=sys.stderr)
        for err in exc.errors:
            print(f"  {err}", file=sys.stderr)
        return 2
    results = run_table(engine, rows)
    failed = [r for r in results if not r.passed]
    for r in results:
        if not r.passed:
            print(f"FAIL {args.table}:{r.row.line}: {describe(r)}")
        elif args.verbose:
            print(f"ok   {args.table}:{r.row.line}: {describe(r)}")
    print(
        f"{len(results) - len(failed)} passed, {len(failed)} failed "
        f"({args.table}; policy version {engine.version[:12]}; files {', '.join(engine.files)})"
    )
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Standalone entry point (`python -m memhub.policy.cli policy validate ...`) until memhub/cli/main.py wires it in."""
    parser = StrictArgumentParser(prog="memhub")
    add_parsers(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
