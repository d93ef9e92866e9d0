"""How many bytes a bridge's tools/list costs a client (and its model, every turn), per tool and in total.

    .venv/bin/python bench/bench_tools_list.py             # every tool, and --tools core
    .venv/bin/python bench/bench_tools_list.py --tools core,mark_used

Measured through the MCP SDK's own client, in memory: the ListToolsResult it
received, serialised as the SDK serialises it (by alias, unset fields left
out). No hub is needed: listing tools calls none. Prints the description,
input schema and output schema bytes of each tool, so a change that grows one
shows where. tests/test_bridge_tool_surface.py holds the whole list to 20,000 bytes.
"""

from __future__ import annotations

import argparse
import json
from datetime import timedelta

import anyio
from mcp import Client

from memhub.auth import issue_token
from memhub.bridge import BridgeSettings, Narrowing, build_bridge
from memhub.bridge.narrowing import select_tools

# A well-formed token for a hub nobody calls: the bridge reads only its subject (for the default namespace).
_TOKEN = issue_token(b"bench-tools-list" * 2, agent_id="bench", ttl=timedelta(minutes=5)).token


def _size(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


async def measure(tools: str) -> None:
    settings = BridgeSettings(hub_address="127.0.0.1:1", token=_TOKEN, narrowing=Narrowing(tools=select_tools(tools)))
    with build_bridge(settings) as bridge:
        async with Client(bridge.server) as client:
            listed = await client.list_tools()
    total = len(listed.model_dump_json(by_alias=True, exclude_none=True).encode())
    print(f"--tools {tools}: {len(listed.tools)} tools, tools/list {total:,} bytes")
    print(f"  {'tool':<22} {'all':>6} {'description':>12} {'input':>6} {'output':>7}")
    for tool in listed.tools:
        dumped = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
        print(
            f"  {tool.name:<22} {_size(dumped):>6} {len((tool.description or '').encode()):>12} "
            f"{_size(tool.input_schema):>6} {_size(tool.output_schema or {}):>7}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", action="append", help="a tool set as `memhub bridge --tools` takes it (repeatable)")
    args = parser.parse_args()
    for tools in args.tools or ["all", "core"]:
        anyio.run(measure, tools)


if __name__ == "__main__":
    main()
