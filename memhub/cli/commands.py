"""The table of `memhub` commands: each one's name, one-line help and the module that defines it.

`memhub --help` and a mistyped command are answered from this table alone, and a command imports only its
own module: importing every command's module (gRPC, the JWT and Cedar libraries, protobuf stubs) made
`memhub --help` take 0.3 s on a quiet machine and seconds on a loaded one. The modules stay the truth for
their options; tests/test_cli_startup.py checks this table against them (names, order, help).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:  # not subscriptable at run time
    Subparsers = argparse._SubParsersAction[Any]  # of ArgumentParser or a subclass (StrictArgumentParser)


class Command(NamedTuple):  # not a dataclass: importing dataclasses costs `memhub --help` a sixth of its time
    name: str
    module: str
    """Its module has ``add_parser(sub)`` or ``add_parsers(sub)``, which may register several commands."""
    help: str


COMMANDS: tuple[Command, ...] = (
    Command("serve", "memhub.cli.serve", "run the hub (embedded Postgres + Milvus Lite unless configured otherwise)"),
    Command("console", "memhub.cli.console_cmd", "serve the web console for a running hub (browse, search, audit, policies)"),
    Command("write", "memhub.cli.client_cmds", "store a memory"),
    Command("search", "memhub.cli.client_cmds", "recall memories relevant to a query"),
    Command("get", "memhub.cli.client_cmds", "show one memory"),
    Command("list", "memhub.cli.client_cmds", "list memories, newest first"),
    Command("forget", "memhub.cli.client_cmds", "forget memories by id, or everything matching a filter"),
    Command(
        "context",
        "memhub.cli.context_cmd",
        "assemble the memories relevant to a task into one block, grouped and within a token budget",
    ),
    Command("history", "memhub.cli.history_cmd", "show every version of a memory's subject, oldest first, and who changed it"),
    Command(
        "why",
        "memhub.cli.why_cmd",
        "explain a memory: its versions, what it was derived from or cites, and what was derived from it",
    ),
    Command("restore", "memhub.cli.restore_cmd", "bring archived memories back into search (list them with --status archived)"),
    Command(
        "consolidate", "memhub.cli.consolidate_cmd", "turn episodes into semantic (or procedural) memories derived from them"
    ),
    Command(
        "retrieval-log",
        "memhub.cli.retrieval_log_cmd",
        "recent searches, what they returned and which of those were marked used",
    ),
    Command("watch", "memhub.cli.watch_cmd", "print changes to memories as they happen (and the cursor to resume from)"),
    Command(
        "session",
        "memhub.cli.session_cmds",
        "the shared state of a task in progress (short-lived JSON values by session and key)",
    ),
    Command("import", "memhub.cli.import_jsonl", "bulk-load memories from a JSON Lines file"),
    Command(
        "reindex", "memhub.cli.reindex", "rebuild the retrieval index from Postgres (e.g. after changing the embedding model)"
    ),
    Command("index-server", "memhub.cli.index_server", "serve a Milvus Lite data file over TCP so several hubs can share it"),
    Command("token", "memhub.cli.token_cmds", "issue, list or revoke agent tokens"),
    Command("audit", "memhub.cli.admin_cmds", "read the audit log of access decisions, newest first"),
    Command("admin", "memhub.cli.admin_cmds", "namespaces and policies of a running hub"),
    Command("policy", "memhub.policy.cli", "validate policies and run decision tables"),
    Command(
        "bridge",
        "memhub.bridge.cli",
        "run an MCP server that gives one agent memory tools on the hub (`memhub bridge init` sets one up)",
    ),
)

BY_NAME = {command.name: command for command in COMMANDS}


def register(sub: Subparsers, load: set[str], *, others: bool = True) -> None:
    """Add the commands of the modules in ``load`` to ``sub`` with their real parsers (the module's own
    registration) and, with ``others``, every other command as a stand-in that carries only its help line;
    in the table's order."""
    registered: set[str] = set()
    for command in COMMANDS:
        if command.module in load:
            if command.module not in registered:
                registered.add(command.module)
                _registrar(importlib.import_module(command.module))(sub)
        elif others:
            sub.add_parser(command.name, help=command.help, add_help=False)


def command_in(argv: list[str]) -> Command | None:
    """The command an argument list runs: its first argument that is not an option (`memhub` itself takes only
    -h/--help and --version, which take no value). None when there is none, it is not a command, or memhub's
    own help or version comes first (then that is all that runs)."""
    for arg in argv:
        if arg in ("--", "-h", "--help", "--version"):
            return None
        if not arg.startswith("-"):
            return BY_NAME.get(arg)
    return None


def _registrar(module: ModuleType) -> Callable[[Subparsers], None]:
    add: Callable[[Subparsers], None] = getattr(module, "add_parsers", None) or module.add_parser
    return add
