"""Markdown helpers shared by the reference generators: text from code and comments shown as text, never as markup."""

from __future__ import annotations

import re

# Backtick spans stay code; everything else is escaped so a comment's "<JWT>" or "a*b" is shown as written.
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_SPECIAL = re.compile(r"([\\*_\[\]<>&|])")


def escape(text: str) -> str:
    """Plain text as inline Markdown: code spans kept, markup characters and table pipes escaped."""
    out: list[str] = []
    last = 0
    for match in _CODE_SPAN.finditer(text):
        out.append(_escape_plain(text[last : match.start()]))
        out.append(match.group(0))  # Markdown tables leave a pipe inside a code span alone
        last = match.end()
    out.append(_escape_plain(text[last:]))
    return "".join(out)


def _escape_plain(text: str) -> str:
    return _SPECIAL.sub(lambda m: "&amp;" if m.group(1) == "&" else ("&lt;" if m.group(1) == "<" else "\\" + m.group(1)), text)


def code(text: str) -> str:
    """An inline code span that survives backticks inside it and table cells."""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def paragraphs(comment: str) -> str:
    """A comment block as Markdown paragraphs: its "- " items become a list, its other lines text.

    Comments are written as plain text with dash lists; Markdown needs a blank line before a list and
    treats markup characters as markup, so both are fixed here. Lines are grouped into paragraphs and list
    items first and escaped as a whole, so a code span that wraps onto the next line stays one span.
    """
    blocks: list[tuple[str, list[str]]] = []  # ("p" | "li", lines)
    for line in comment.strip("\n").splitlines():
        stripped = line.strip()
        if not stripped:
            blocks.append(("gap", []))
        elif stripped.startswith("- "):
            blocks.append(("li", [stripped[2:]]))
        elif blocks and blocks[-1][0] == "li" and line.startswith((" ", "\t")):
            blocks[-1][1].append(stripped)  # a list item's continuation
        elif blocks and blocks[-1][0] == "p":
            blocks[-1][1].append(stripped)
        else:
            blocks.append(("p", [stripped]))
    out: list[str] = []
    previous = "gap"
    for kind, lines in blocks:
        if kind == "gap":
            previous = kind
            continue
        if out and not (kind == "li" and previous == "li"):
            out.append("")
        text = escape("\n".join(lines))
        out.append("- " + text.replace("\n", "\n  ") if kind == "li" else text)
        previous = kind
    return "\n".join(out)


def one_line(comment: str) -> str:
    """A comment block flattened into one table cell."""
    return escape(" ".join(line.strip() for line in comment.strip().splitlines() if line.strip()))


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table; cells are already Markdown (escape them first)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("\n", " ") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def first_sentence(text: str) -> str:
    """The first sentence of a description (up to the first ". " or line end)."""
    flat = " ".join(text.split())
    match = re.match(r"(.+?[.!?])(\s+(?=[A-Z\"(])|$)", flat)
    return match.group(1) if match else flat
