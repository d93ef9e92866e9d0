"""A narrowed bridge is no oracle: a memory outside its narrowing answers exactly as a missing one.

Issue 22: forget_memory, mark_used, memory_history and write_memory's cites
answered "memory X is in 'teams/support/kb'" for a memory the agent may read
but the bridge may not touch, and "not found" for a missing id, so a model
behind a narrowed bridge could learn that a memory exists and where. Every
tool (and the memory resource) that takes an id is called through the real
MCP client against a real hub, once with an id outside the narrowing and once
with a random one; the two answers must be the same byte for byte once the
id itself is replaced by a placeholder.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from conftest import Stack
from mcp import MCPError
from test_bridge_tools import connected

from memhub.bridge import Narrowing
from memhub.client import memory_input
from memhub.v1 import memory_pb2 as pb

pytestmark = pytest.mark.anyio

ID = "<ID>"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _answer(result: Any, memory_id: str) -> str:
    """Everything the model is shown (content, flags, structured output), with the id blanked out."""
    dumped = json.dumps(result.model_dump(mode="json", exclude_none=True), sort_keys=True, ensure_ascii=False)
    return dumped.replace(memory_id, ID)


# Each call is (tool, arguments) with ID where the memory id goes.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("forget_memory", {"id": ID, "reason": "tidying up"}),
    ("mark_used", {"memory_ids": [ID]}),
    ("memory_history", {"id": ID}),
    ("explain_memory", {"id": ID}),
    ("write_memory", {"content": "A conclusion drawn from a cited memory", "cites": [ID]}),
]


def _args(arguments: dict[str, Any], memory_id: str) -> dict[str, Any]:
    return json.loads(json.dumps(arguments).replace(ID, memory_id))


async def test_a_memory_outside_the_narrowing_answers_as_a_missing_one(stack: Stack, ns: str) -> None:
    inside, outside = f"{ns}/inside", f"{ns}/kb"
    # A subject key gives memory_history a chain to show; the agent may read all of `ns`.
    foreign = (
        stack.client.write(
            [memory_input(outside, "The refund limit is 200 euros", kind="semantic", type="fact", subject_key="refunds/limit")],
            wait_indexed=True,
        )
        .results[0]
        .memory.id
    )
    narrowing = Narrowing(namespaces=(inside,), default_namespace=inside)
    async with connected(stack.address, stack.token("tester"), narrowing=narrowing) as client:
        for tool, arguments in CALLS:
            missing = str(uuid.uuid4())
            outside_answer = _answer(await client.call_tool(tool, _args(arguments, foreign)), foreign)
            missing_answer = _answer(await client.call_tool(tool, _args(arguments, missing)), missing)
            assert outside in json.dumps(stack.client.get(foreign).namespace)  # it is there, readable by the agent
            assert outside_answer == missing_answer, tool
            assert '"is_error": true' in outside_answer and outside not in outside_answer, tool

        # The memory resource: the same error, the same code.
        answers = []
        for memory_id in (foreign, str(uuid.uuid4())):
            with pytest.raises(MCPError) as refused:
                await client.read_resource(f"memhub://memory/{memory_id}")
            answers.append(json.dumps(refused.value.error.model_dump(mode="json"), sort_keys=True).replace(memory_id, ID))
        assert answers[0] == answers[1]

    # Nothing outside was touched by the refused calls.
    assert stack.client.get(foreign).status == pb.MEMORY_STATUS_ACTIVE
    assert not stack.client.list([inside]).memories
