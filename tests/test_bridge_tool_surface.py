"""What the bridge offers a model: tools/list small enough to send every turn, closed argument lists, chosen tool sets.

Driven by the SDK's own client against a real hub (in memory, as tests/test_bridge_tools.py; one run over stdio
through `python -m memhub.bridge.probe` for the command line's --tools).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import REPO, Stack, eventually
from mcp import Client
from mcp_types import CallToolResult

from memhub.bridge import BridgeSettings, ConfigError, Narrowing, build_bridge
from memhub.bridge.cli import settings_from_args
from memhub.bridge.main import build_parser
from memhub.bridge.narrowing import TOOL_NAMES, TOOL_SETS, select_tools
from memhub.client import memory_input

pytestmark = pytest.mark.anyio

# The whole tools/list result as the SDK serialises it on the wire. It was 60.7 KB (58 KB here before the
# cut): every client sends it to the model on every turn.
MAX_TOOLS_LIST_BYTES = 20_000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def hub(stacks: dict[str, Stack]) -> Stack:
    return stacks["external-pg"]  # what a bridge publishes does not depend on the hub's Postgres


@contextlib.asynccontextmanager
async def connected(hub: Stack, token: str, narrowing: Narrowing = Narrowing()) -> AsyncIterator[Client]:
    with build_bridge(BridgeSettings(hub_address=hub.address, token=token, narrowing=narrowing)) as bridge:
        async with Client(bridge.server) as client:
            yield client


def text(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


async def test_tools_list_fits_in_20_kb_with_closed_valid_schemas_that_say_when(hub: Stack) -> None:
    async with connected(hub, hub.token("tester")) as client:
        listed = await client.list_tools()
        size = len(listed.model_dump_json(by_alias=True, exclude_none=True).encode())
        instructions = client.instructions or ""
    assert [t.name for t in listed.tools] == list(TOOL_NAMES)
    assert size <= MAX_TOOLS_LIST_BYTES, f"tools/list is {size} bytes"
    for tool in listed.tools:
        assert tool.description and tool.description.startswith("Call this"), tool.name
        assert tool.input_schema["additionalProperties"] is False, tool.name
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", tool.name
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
        assert "title" not in json.dumps(tool.input_schema["properties"]).replace('"title":', "")  # no pydantic titles
    for name in TOOL_NAMES:  # the instructions point at every tool this bridge offers
        assert name in instructions


async def test_an_unknown_argument_is_refused_naming_the_ones_the_tool_takes(hub: Stack, ns: str) -> None:
    agent = f"surface-{ns}"
    with hub.client_as(agent) as direct:
        direct.write([memory_input(f"{ns}/a", "The planner's deploy window is Tuesday", type="fact")], wait_indexed=True)
    async with connected(hub, hub.token(agent)) as client:
        # `namespace` for `namespaces` used to be dropped silently: the search then ran over every namespace.
        result = await client.call_tool("search_memories", {"query": "deploy window", "namespace": f"{ns}/a"})
        assert result.is_error
        assert "unknown argument 'namespace' (did you mean 'namespaces'?); nothing was done." in text(result)
        assert "search_memories takes: query, namespaces, kinds, top_k, occurred_after" in text(result)

        slips = await client.call_tool("search_memories", {"query": "deploy window", "topK": 3, "kind": ["semantic"]})
        assert (
            slips.is_error
            and "unknown arguments 'topK', 'kind' (did you mean 'top_k' for 'topK'; 'kinds' for 'kind'?)" in text(slips)
        )

        wrote = await client.call_tool("write_memory", {"content": "Rollbacks need a second reviewer", "colour": "red"})
        assert wrote.is_error and "unknown argument 'colour'" in text(wrote) and "write_memory takes: content," in text(wrote)

        many = await client.call_tool("forget_memory", {"id": "x" * 36, "reason": "r", **{f"extra{i}": i for i in range(20)}})
        assert many.is_error and "and 12 more" in text(many)  # a long list of mistakes stays short

        unknown_tool = await client.call_tool("remember", {"content": "x"})
        assert unknown_tool.is_error and "Unknown tool: 'remember'; this bridge offers: write_memory, search_memories" in text(
            unknown_tool
        )
        fixed = await client.call_tool("search_memories", {"query": "deploy window", "namespaces": [f"{ns}/a"]})
        assert [h["namespace"] for h in fixed.structured_content["hits"]] == [f"{ns}/a"]
    with hub.client_as(agent) as direct:
        # Only the corrected search reached the hub (the log is written off the hot path, hence the wait).
        eventually(lambda: len(direct.retrieval_log().entries) >= 1, "the corrected search is logged")
        assert len(direct.retrieval_log().entries) == 1
        assert [m.content for m in direct.list([f"agents/{agent}"]).memories] == []  # the refused write stored nothing


async def test_a_chosen_tool_set_offers_only_those_tools_and_grants_nothing(hub: Stack, ns: str) -> None:
    core = select_tools("core")
    assert (
        core
        == TOOL_SETS["core"]
        == (
            "write_memory",
            "search_memories",
            "forget_memory",
            "get_preferences",
            "recall_context",
        )
    )
    async with connected(hub, hub.token("tester"), Narrowing(tools=core)) as client:
        listed = await client.list_tools()
        instructions = client.instructions or ""
        assert [t.name for t in listed.tools] == list(core)
        assert "mark_used" not in instructions and "session_state" not in instructions  # never points elsewhere
        refused = await client.call_tool("mark_used", {"memory_ids": ["x" * 36]})
        assert refused.is_error and "Unknown tool: 'mark_used'; this bridge offers: write_memory," in text(refused)
        written = await client.call_tool("write_memory", {"content": "Invoices go out on the 1st", "namespace": ns})
        found = await client.call_tool("search_memories", {"query": "when do invoices go out?", "namespaces": [ns]})
        assert not written.is_error and not found.is_error and found.structured_content["search_id"]
        assert "mark_used" not in text(found)  # a search_id, but no pointer at a tool this bridge lacks

    # A tool on the list grants nothing: an agent the hub's policy gives no rights is still refused.
    outsider = hub.token(f"outsider-{ns}", groups=())
    async with connected(hub, outsider, Narrowing(tools=select_tools("core,forget_memory"))) as client:
        denied = await client.call_tool("write_memory", {"content": "Let me in", "namespace": ns})
        assert denied.is_error and "permission denied" in text(denied)


def test_tools_option_narrows_the_narrowing_file_and_refuses_unknown_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "narrowing.toml"
    config.write_text('tools = ["search_memories", "mark_used", "memory_history"]\n')
    env = {"MEMHUB_TOKEN": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFubmVyIn0.sig"}

    def settings(*args: str) -> BridgeSettings:
        return settings_from_args(build_parser().parse_args(["--config", str(config), *args]), env)

    assert settings().narrowing.tools == ("search_memories", "mark_used", "memory_history")
    # The intersection, in the bridge's order: --tools can only take away what the file allows.
    assert settings("--tools", "core,mark_used").narrowing.tools == ("search_memories", "mark_used")
    assert settings("--tools", "all").narrowing.tools == ("search_memories", "mark_used", "memory_history")
    with pytest.raises(ConfigError, match="none of which the narrowing file's tools"):
        settings("--tools", "write_memory")
    with pytest.raises(ConfigError) as unknown:
        settings("--tools", "core,remember_this")
    assert "unknown tool 'remember_this'" in str(unknown.value)
    assert "core: write_memory, search_memories, forget_memory, get_preferences, recall_context" in str(unknown.value)
    assert "from: " + ", ".join(TOOL_NAMES) in str(unknown.value)
    with pytest.raises(ConfigError, match="is empty"):
        settings("--tools", " , ")
    monkeypatch.setenv("MEMHUB_BRIDGE_TOOLS", "core")  # the option's default, read when the parser is built
    from_env = settings_from_args(build_parser().parse_args([]), env | {"MEMHUB_BRIDGE_TOOLS": "core"})
    assert from_env.narrowing.tools == TOOL_SETS["core"]
    with pytest.raises(ConfigError, match="^MEMHUB_BRIDGE_TOOLS: unknown tool 'nope'"):
        monkeypatch.setenv("MEMHUB_BRIDGE_TOOLS", "nope")
        settings_from_args(build_parser().parse_args([]), env | {"MEMHUB_BRIDGE_TOOLS": "nope"})


def test_the_command_line_refuses_an_unknown_tool_at_start_and_probe_lists_a_core_bridge_as_json(hub: Stack) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHUB_", "OTEL_"))}
    env["MEMHUB_TOKEN"] = hub.token("tester", ttl=timedelta(minutes=10))
    bridge = [sys.executable, "-m", "memhub.bridge.main", "--hub", hub.address]

    bad = subprocess.run([*bridge, "--tools", "core,forget"], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert bad.returncode == 2 and bad.stdout == ""
    assert "memhub-bridge: --tools: unknown tool 'forget'; give a set (core: write_memory," in bad.stderr

    probe = [sys.executable, "-m", "memhub.bridge.probe", "--json", "list", "--", *bridge, "--tools", "core"]
    listed = subprocess.run(probe, capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert listed.returncode == 0, listed.stderr
    document: dict[str, Any] = json.loads(listed.stdout)  # one JSON document
    assert [t["name"] for t in document["tools"]] == list(TOOL_SETS["core"])
