"""The CLI reference, generated from the argparse parsers `memhub` itself builds (memhub.cli.main.build_parser).

Every command and subcommand gets its usage line, its description and a table of its arguments, so an option
added, renamed or re-documented in the code is the reference changed at the next build.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator

from docs_markdown import code, escape, table

USAGE_WIDTH = "100"  # argparse wraps usage lines at $COLUMNS: fixed, so the page does not depend on the terminal


Command = tuple[tuple[str, ...], str, argparse.ArgumentParser]


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[Command]:
    """(path, one-line help, parser) of every command below `parser`, depth first, in the order `--help` lists them."""
    for action in parser._actions:  # noqa: SLF001 - argparse has no public accessor for its actions
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}  # noqa: SLF001
            for name, sub in action.choices.items():
                yield (*path, name), helps.get(name, ""), sub
                yield from commands(sub, (*path, name))


def render() -> str:
    from memhub.cli.main import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = USAGE_WIDTH
    try:
        top = build_parser()
        parts = [_command(("memhub",), top.description or "", top)]
        parts += [_command(("memhub", *path), summary, sub) for path, summary, sub in commands(top)]
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return "\n\n".join(parts) + "\n"


def _command(path: tuple[str, ...], summary: str, parser: argparse.ArgumentParser) -> str:
    name = " ".join(path)
    anchor = "-".join(path)
    parts = [f"## {name} {{ #{anchor} }}"]
    if summary:
        parts.append(escape(summary[:1].upper() + summary[1:]) + ("" if summary.endswith(".") else "."))
    if parser.description and parser.description.rstrip(".").lower() != summary.rstrip(".").lower():
        parts.append(escape(parser.description))
    parts.append("```text\n" + parser.format_usage().removeprefix("usage: ").rstrip() + "\n```")
    rows = [_row(parser, action) for action in parser._actions if _shown(action)]  # noqa: SLF001
    if rows:
        parts.append(table(["argument", "meaning"], rows))
    subcommands = [p for p, _, _ in commands(parser) if len(p) == 1]
    if subcommands:
        links = ", ".join(f"[{code(name + ' ' + sub[0])}](#{anchor}-{sub[0]})" for sub in subcommands)
        parts.append(f"Subcommands: {links}.")
    if parser.epilog:
        parts.append(escape(parser.epilog))
    return "\n\n".join(parts)


def _shown(action: argparse.Action) -> bool:
    if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):  # noqa: SLF001
        return False
    return not isinstance(action, argparse._SubParsersAction)  # noqa: SLF001 - listed as subcommands instead


def _row(parser: argparse.ArgumentParser, action: argparse.Action) -> list[str]:
    if action.option_strings:
        metavar = ""
        if action.nargs != 0:
            formatter = parser._get_formatter()  # noqa: SLF001
            metavar = " " + formatter._format_args(action, action.dest.upper())  # noqa: SLF001
        shown = ", ".join(code(option + metavar) for option in action.option_strings)
    else:
        shown = code(action.metavar if isinstance(action.metavar, str) else action.dest)
    helptext = parser._get_formatter()._expand_help(action) if action.help else ""  # noqa: SLF001 - %(default)s and friends
    meaning = escape(" ".join(helptext.split()))
    if action.required and action.option_strings:
        meaning = "Required. " + meaning
    default = action.default
    if (
        default not in (None, False, argparse.SUPPRESS, [], "")
        and action.nargs != 0
        and "default" not in helptext.lower()
        and isinstance(default, (str, int, float))
    ):
        meaning += f" Default: {code(str(default))}."
    return [shown, meaning.strip()]
