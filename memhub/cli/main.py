"""Entry point of the `memhub` command.

A command imports only its own module (memhub/cli/commands.py): `memhub --help` loads no gRPC, no stores and
no model, and a client command no server-side module. tests/test_cli_startup.py checks which heavy modules
each path imports.
"""

from __future__ import annotations

import argparse
import os
import sys

# gRPC's C core prints INFO lines ("Got goaway ... connection idle") on stderr unless told otherwise before
# it is imported; a command line tool should show its own messages and real errors only.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

from memhub import __version__  # noqa: E402 - after the environment the imports below may read
from memhub.cli import commands  # noqa: E402
from memhub.cli.arguments import StrictArgumentParser, parse  # noqa: E402
from memhub.errors import HubError  # noqa: E402

DESCRIPTION = "A shared memory hub for fleets of LLM agents."


def build_parser() -> argparse.ArgumentParser:
    """The whole command line, every command with its options (for documentation and tests: it imports every
    command's module; `main` builds only what the command it runs needs)."""
    return _parser({command.module for command in commands.COMMANDS})


def parser_for(argv: list[str]) -> argparse.ArgumentParser:
    """The command line for ``argv``: the command it runs with its options (and none of the others, which could
    not parse it anyway); with no command, or an unknown one, every command as a help line."""
    named = commands.command_in(argv)
    if named is None:
        return _parser(set())
    return _parser({named.module}, others=False)


def _parser(load: set[str], *, others: bool = True) -> argparse.ArgumentParser:
    parser = StrictArgumentParser(prog="memhub", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"memhub {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.register(sub, load, others=others)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse(parser_for(argv), argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:
        # The reader went away (`memhub list | head`): stop quietly, as Unix tools do, instead of a traceback;
        # stdout is pointed at /dev/null so the interpreter's final flush cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except HubError as exc:  # start-up problems: the message says what to fix
        print(f"memhub {args.command}: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:  # bad enum names and similar argument mistakes
        print(f"memhub {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        grpc = sys.modules.get("grpc")  # loaded by every command that calls the hub; never loaded here for nothing
        if grpc is None or not isinstance(exc, grpc.RpcError):
            raise
        print(f"memhub {args.command}: {_rpc_failure(args, exc)}", file=sys.stderr)
        return 1


def _rpc_failure(args: argparse.Namespace, exc: Exception) -> str:
    """The hub's refusal in one line, with what to do for the codes a user can act on."""
    import grpc

    from memhub.client import version_conflict

    # Every error a channel raises is both an RpcError and a Call; the stubs make the two incompatible.
    call: object = exc
    assert isinstance(call, grpc.Call) and isinstance(exc, grpc.RpcError)
    code = call.code()
    hint = ""
    if code == grpc.StatusCode.UNAVAILABLE:
        where = getattr(args, "hub", None) or "?"
        source = getattr(args, "hub_source", "")
        hint = f" (is the hub running at {where}{f', {source}' if source else ''}? start it with `memhub serve`)"
    elif code == grpc.StatusCode.ABORTED and (conflict := version_conflict(exc)) is not None:
        hint = f" (the current version is {conflict.current_version}; read it again before retrying)"
    elif code == grpc.StatusCode.UNAUTHENTICATED:
        hint = " (set MEMHUB_TOKEN or --token-file; `memhub token issue --agent NAME` makes one)"
    return f"{code.name}: {call.details()}{hint}"


if __name__ == "__main__":
    sys.exit(main())
