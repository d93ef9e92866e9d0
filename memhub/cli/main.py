"""Entry point of the `memhub` command."""

from __future__ import annotations

import argparse
import os
import sys

# gRPC's C core prints INFO lines ("Got goaway ... connection idle") on stderr unless told otherwise before
# it is imported; a command line tool should show its own messages and real errors only.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

import grpc

from memhub.bridge import cli as bridge_cli
from memhub.cli import (
    admin_cmds,
    client_cmds,
    console_cmd,
    consolidate_cmd,
    context_cmd,
    history_cmd,
    import_jsonl,
    index_server,
    reindex,
    restore_cmd,
    retrieval_log_cmd,
    serve,
    session_cmds,
    token_cmds,
    watch_cmd,
    why_cmd,
)
from memhub.cli.arguments import StrictArgumentParser, parse
from memhub.client import version_conflict
from memhub.errors import HubError
from memhub.policy import cli as policy_cli


def build_parser() -> argparse.ArgumentParser:
    parser = StrictArgumentParser(prog="memhub", description="A shared memory hub for fleets of LLM agents.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve.add_parser(sub)
    console_cmd.add_parser(sub)
    client_cmds.add_parsers(sub)
    context_cmd.add_parser(sub)
    history_cmd.add_parser(sub)
    why_cmd.add_parser(sub)
    restore_cmd.add_parser(sub)
    consolidate_cmd.add_parser(sub)
    retrieval_log_cmd.add_parser(sub)
    watch_cmd.add_parser(sub)
    session_cmds.add_parsers(sub)
    import_jsonl.add_parser(sub)
    reindex.add_parser(sub)
    index_server.add_parser(sub)
    token_cmds.add_parser(sub)
    admin_cmds.add_parsers(sub)
    policy_cli.add_parsers(sub)
    bridge_cli.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parse(build_parser(), argv)
    try:
        return args.func(args)
    except BrokenPipeError:
        # The reader went away (`memhub list | head`): stop quietly, as Unix tools do, instead of a traceback;
        # stdout is pointed at /dev/null so the interpreter's final flush cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except HubError as exc:  # start-up problems: the message says what to fix
        print(f"memhub {args.command}: {exc}", file=sys.stderr)
        return 1
    except grpc.RpcError as exc:
        code = exc.code()
        hint = ""
        if code == grpc.StatusCode.UNAVAILABLE:
            where = getattr(args, "hub", None) or "?"
            source = getattr(args, "hub_source", "")
            hint = f" (is the hub running at {where}{f', {source}' if source else ''}? start it with `memhub serve`)"
        elif code == grpc.StatusCode.ABORTED and (conflict := version_conflict(exc)) is not None:
            hint = f" (the current version is {conflict.current_version}; read it again before retrying)"
        elif code == grpc.StatusCode.UNAUTHENTICATED:
            hint = " (set MEMHUB_TOKEN or --token-file; `memhub token issue --agent NAME` makes one)"
        print(f"memhub {args.command}: {code.name}: {exc.details()}{hint}", file=sys.stderr)
        return 1
    except ValueError as exc:  # bad enum names and similar argument mistakes
        print(f"memhub {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
