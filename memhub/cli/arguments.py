"""argparse pieces every memhub command line shares: no abbreviated options, and secrets refused in argv.

argparse accepts any unambiguous prefix of an option by default, so `--token
T` silently became `--token-file T`: the token landed in argv, shell history
and the error message about the missing file. Every parser here is strict,
and `--token` exists only to be refused with the reason.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from typing import Any, NoReturn

# A JWT (header.payload.signature, base64url; the header always starts with '{"' = "eyJ").
_JWT = re.compile(r"eyJ[\w-]*\.[\w-]+\.[\w-]*")

ARGV_SECRET = (
    "command-line arguments are visible to every user of this machine (ps, /proc/<pid>/cmdline) and end up "
    "in shell history and client config files. "
)


class StrictArgumentParser(argparse.ArgumentParser):
    """An ArgumentParser that takes options only by their full names; its subcommands are strict too
    (argparse builds them with the class of the parser they belong to)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _Subparsers)

    def error(self, message: str) -> NoReturn:
        # argparse quotes what it did not understand ("unrecognized arguments: --tok eyJ..."): never a token.
        super().error(_JWT.sub("<a token, not shown>", message))


class Refused(argparse.Action):
    """An option that exists only to be refused with an explanation (its value is never echoed)."""

    def __init__(self, option_strings: list[str], dest: str, why: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs="?", help=argparse.SUPPRESS)
        self.why = why

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object, option: str | None = None
    ) -> None:
        parser.error(f"{option} is refused: {ARGV_SECRET}{self.why}")


def refuse_token_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--token", action=Refused, why="Use --token-file FILE (chmod 600) or the MEMHUB_TOKEN environment variable.")


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse like ``parser.parse_args``, but report an unknown option with the usage of the subcommand it was given to.

    argparse hands a subcommand's unrecognised arguments back to the top-level
    parser, which prints `memhub`'s usage: a typo in `memhub search --top_k 3`
    then shows the list of commands instead of search's options.
    """
    args, extras = parser.parse_known_args(argv)
    if extras:
        owner = getattr(args, _OWNER, None) or parser
        owner.error(f"unrecognized arguments: {' '.join(extras)}")
    if hasattr(args, _OWNER):
        delattr(args, _OWNER)
    return args


_OWNER = "_memhub_parser"


class _Subparsers(argparse._SubParsersAction):
    """Subparsers that remember, in the parsed namespace, which (innermost) parser took the command line."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        sub = super().add_parser(name, **kwargs)
        sub.set_defaults(**{_OWNER: sub})
        return sub
