"""Options the memory commands share: argparse types (durations, relevances, versions) and the filters
(--kind, --type, --tag, --flag, --exclude-flagged)."""

from __future__ import annotations

import argparse
from datetime import timedelta


def parse_duration(text: str) -> timedelta:
    """'90s', '15m', '12h', '7d' -> timedelta."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    try:
        value, unit = float(text[:-1]), text[-1]
        return timedelta(seconds=value * units[unit])
    except (ValueError, KeyError, IndexError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 90s, 15m, 12h or 7d") from None


def parse_relevance(text: str) -> float:
    """--min-relevance: a number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"{text!r} is not a relevance from 0 to 1 (e.g. 0.5)")
    return value


def parse_version(minimum: int):  # noqa: ANN201 - an argparse type
    """--expect-version: a whole number from ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = -1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} is not a version (a whole number from {minimum}, as `get` shows)")
        return value

    return parse


def add_filter_args(p: argparse.ArgumentParser, verb: str) -> None:
    """--kind, --type, --tag: repeatable filters; a memory must match one value of each filter given."""
    p.add_argument(
        "--kind",
        action="append",
        default=[],
        dest="kinds",
        help=f"only {verb} this kind: episodic | semantic | procedural (repeatable)",
    )
    p.add_argument(
        "--type",
        action="append",
        default=[],
        dest="types",
        help=f"only {verb} this type: event | fact | preference | correction | rule | lesson | outcome | note (repeatable)",
    )
    p.add_argument("--tag", action="append", default=[], dest="tags", help=f"only {verb} memories with this tag (repeatable)")


def add_flag_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--flag", action="append", default=[], dest="flags", help="only memories with this flag: instruction_like")
    p.add_argument("--exclude-flagged", action="store_true", help="leave out memories the hub flagged")
