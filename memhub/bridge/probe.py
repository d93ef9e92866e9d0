"""Try a bridge from the shell with the SDK's own client: list its tools or call one.

    # a bridge this command starts over stdio (everything after -- is the bridge's command line):
    python -m memhub.bridge.probe call search_memories '{"query": "release freeze"}' -- memhub-bridge --hub 127.0.0.1:50051
    # a bridge already serving streamable HTTP (its bearer token from MEMHUB_BRIDGE_HTTP_TOKEN):
    python -m memhub.bridge.probe --url http://127.0.0.1:8765/mcp list
    # the same for a bridge started a moment ago: wait until it answers
    python -m memhub.bridge.probe --url http://127.0.0.1:8765/mcp --wait 30 list

For operators checking a deployment and for the docs' walkthroughs; agents
use their MCP client instead. Prints the tool's text, or with --json one JSON
document (the tools as tools/list gives them; a call's text, structured
content and error flag), and exits 1 when the tool reports an error. Under stdio
the bridge inherits this shell's MEMHUB_* and OTEL_* variables (so
MEMHUB_TOKEN works) and nothing else beyond the SDK's safe defaults.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx2
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from memhub.cli.arguments import StrictArgumentParser
from memhub.memory_text import json_safe


def _parser() -> argparse.ArgumentParser:
    p = StrictArgumentParser(prog="python -m memhub.bridge.probe", description=__doc__.splitlines()[0])
    p.add_argument("--url", help="a bridge serving streamable HTTP; its bearer token comes from MEMHUB_BRIDGE_HTTP_TOKEN")
    p.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    p.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="with --url: wait this long for the bridge to answer (its /healthz) before giving up",
    )
    sub = p.add_subparsers(dest="action", required=True)
    sub.add_parser("list", help="list the tools")
    call = sub.add_parser("call", help="call one tool")
    call.add_argument("tool")
    call.add_argument("arguments", nargs="?", default="{}", help="the arguments as a JSON object")
    return p


def _transport(url: str | None, command: list[str]) -> Any:
    if url:
        token = os.environ.get("MEMHUB_BRIDGE_HTTP_TOKEN", "")
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"} if token else {}, timeout=60)
        return streamable_http_client(url, http_client=http)
    if not command:
        raise SystemExit("give the bridge's command after --, or --url for a bridge serving HTTP")
    env = {k: v for k, v in os.environ.items() if k.startswith(("MEMHUB_", "OTEL_"))}
    return stdio_client(StdioServerParameters(command=command[0], args=command[1:], env=env))


async def _wait_for(url: str, seconds: float) -> None:
    """Poll the bridge's /healthz (answered without a token) until it is up: a bridge started in the background
    takes a few seconds to check its hub and listen."""
    parts = urlsplit(url)
    health = urlunsplit((parts.scheme, parts.netloc, "/healthz", "", ""))
    deadline = time.monotonic() + seconds
    async with httpx2.AsyncClient(timeout=5) as http:
        while True:
            try:
                if (await http.get(health)).status_code == 200:
                    return
            except httpx2.TransportError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"no bridge answered at {health} within {seconds:g} s")
            await anyio.sleep(0.2)


async def _run(args: argparse.Namespace, command: list[str]) -> int:
    if args.url and args.wait > 0:
        await _wait_for(args.url, args.wait)
    async with Client(_transport(args.url, command)) as client:
        if args.action == "list":
            listed = await client.list_tools()
            if args.json:
                _print_json(listed.model_dump(mode="json", by_alias=True, exclude_none=True))
                return 0
            for tool in listed.tools:
                hints = tool.annotations.model_dump(exclude_none=True, by_alias=True) if tool.annotations else {}
                summary = tool.description.splitlines()[0][:100] if tool.description else ""
                print(f"{tool.name}: {summary}...\n    {json.dumps(hints)}")
            return 0
        result = await client.call_tool(args.tool, json.loads(args.arguments))
        text = "\n".join(block.text for block in result.content if block.type == "text")
        if args.json:
            _print_json({"is_error": bool(result.is_error), "text": text, "structured_content": result.structured_content})
        else:
            print(text)
        return 1 if result.is_error else 0


def _print_json(data: Any) -> None:  # noqa: ANN401 - any JSON value
    # The one-document form of the CLI's --json, escaped so no stored character acts on a terminal.
    print(json_safe(json.dumps(data, ensure_ascii=False, indent=2), keep_whitespace=True))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1 :]
    args = _parser().parse_args(argv)
    return anyio.run(_run, args, command)


if __name__ == "__main__":
    sys.exit(main())
