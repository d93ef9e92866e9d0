"""MkDocs hook (mkdocs.yml `hooks:`): fills the docs' generated parts at build time, so none is copied by hand.

A page asks for a part with an HTML comment, `<!-- memhub:NAME ARGUMENT -->`, alone on a line or inline:

| NAME                 | replaced by                                                                 |
|----------------------|-----------------------------------------------------------------------------|
| grpc FILE            | the reference of proto/FILE, from its comments (docs_grpc.py)               |
| cli                  | every `memhub` command, from its argparse parsers (docs_cli.py)             |
| config               | every MEMHUB_* variable, from the settings dataclasses (docs_config.py)     |
| metrics              | every metric /metrics serves, from the registry (docs_metrics.py)           |
| mcp-tools-reference  | the bridge's tools in full, listed by an MCP client (docs_mcp_tools.py)     |
| mcp-tools-table      | the same, one line each                                                     |
| mcp-tool-count       | how many tools the bridge offers (inline)                                   |
| mcp-tool-names       | their names (inline)                                                        |
| include PATH         | a file of the repository (e.g. deploy/README-compose.md), links rewritten   |

An unknown marker, or a generator that fails, stops the build with the reason: a reference page is never
published half-made.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Sibling modules: MkDocs puts this file's folder on sys.path while it loads the hook.
import docs_cli
import docs_config
import docs_grpc
import docs_mcp_tools
import docs_metrics

REPO = Path(__file__).resolve().parents[2]
# A marker written as code (`<!-- memhub:cli -->`, in a page about the markers) is shown, not replaced.
MARKER = re.compile(r"(?<!`)<!--\s*memhub:([a-z-]+)(?:\s+([^\s>]+))?\s*-->(?!`)")
_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)")


class MarkerError(ValueError):
    """A page asked for something the hook cannot generate."""


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    src = page.file.src_uri

    def replace(match: re.Match[str]) -> str:
        name, argument = match.group(1), match.group(2) or ""
        try:
            return generate(name, argument, src)
        except MarkerError as exc:
            raise MarkerError(f"{src}: {match.group(0)}: {exc}") from None

    return MARKER.sub(replace, markdown)


def generate(name: str, argument: str, page_src: str) -> str:
    """The Markdown that replaces marker `name` with `argument` on the page at `page_src` (relative to docs/)."""
    simple: dict[str, Callable[[], str]] = {
        "cli": docs_cli.render,
        "config": docs_config.render,
        "metrics": docs_metrics.render,
        "mcp-tools-reference": docs_mcp_tools.reference,
        "mcp-tool-count": docs_mcp_tools.count,
        "mcp-tool-names": docs_mcp_tools.names_inline,
    }
    if name in simple:
        return simple[name]()
    if name == "mcp-tools-table":
        return docs_mcp_tools.summary_table(_relative(page_src, "reference/mcp-tools.md"))
    if name == "grpc":
        try:
            return docs_grpc.render_file(argument)
        except KeyError as exc:
            raise MarkerError(str(exc)) from None
    if name == "include":
        return include(argument, page_src)
    raise MarkerError(f"unknown marker {name!r}; see scripts/docsgen/hooks.py for the ones there are")


def _relative(page_src: str, target: str) -> str:
    return posixpath.relpath(target, posixpath.dirname(page_src) or ".")


def include(path: str, page_src: str) -> str:
    """A repository file's text, its relative links pointed at the site (docs/ pages) or shown as repository paths."""
    source = (REPO / path).resolve()
    if REPO not in source.parents or not source.is_file():
        raise MarkerError(f"{path} is not a file of the repository")
    text = source.read_text()
    folder = posixpath.dirname(path)

    def relink(match: re.Match[str]) -> str:
        label, target = match.group(1), match.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return match.group(0)  # a URL or an anchor of the same text
        where, _, anchor = target.partition("#")
        resolved = posixpath.normpath(posixpath.join(folder, where))
        if resolved.startswith("docs/"):
            link = _relative(page_src, resolved.removeprefix("docs/"))
            return f"[{label}]({link}{'#' + anchor if anchor else ''})"
        shown = f"`{resolved}`"
        return shown if label.strip("`") in (resolved, posixpath.basename(resolved)) else f"{label} ({shown})"

    return _LINK.sub(relink, text)
