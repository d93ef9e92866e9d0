"""The examples in examples/ (and clients/typescript/examples/) run as a user runs them, as a subprocess, against a
hub with the policies they name. The integration examples act as two agents, alice and bob, on the shipped default
policy (the fleet hub: an agent owns agents/<its id>/**): each must show alice's memory to alice and not to bob,
and bob's write into alice's namespace refused."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from autogen_support import TARGET as AUTOGEN_PACKAGES
from autogen_support import autogen_on_path
from conftest import REPO, Fleet
from node_support import built_client
from security.hubs import SpecialStack, special_hub

from memhub.config import PolicyConfig

RESEARCH_TEAM = REPO / "examples" / "research_team.py"


@pytest.fixture(scope="module")
def team_hub(tmp_path_factory: pytest.TempPathFactory, external_pg_admin_url: str) -> Iterator[tuple[SpecialStack, Path]]:
    """A hub on the shipped default policy plus the research team's (what the example tells the user to start)."""
    folder = tmp_path_factory.mktemp("research-team")
    policy = PolicyConfig(dir=REPO / "policies", files=("default.cedar", "examples/research_team.cedar"))
    with special_hub(folder, external_pg_admin_url, policy=policy) as stack:
        yield stack, folder


def _run(env: dict[str, str]) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    return subprocess.run(
        [sys.executable, str(RESEARCH_TEAM), "--pause", "0.1"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**base, **env},
        timeout=300,
    )


def test_the_research_team_example_drafts_from_every_finding(team_hub: tuple[SpecialStack, Path]) -> None:
    stack, data_dir = team_hub
    # No tokens given: the example issues them with `memhub token issue`, from the hub's data directory.
    proc = _run({"MEMHUB_ADDRESS": stack.address, "MEMHUB_DATA_DIR": str(data_dir)})
    assert proc.returncode == 0, proc.stderr + proc.stdout
    out = proc.stdout
    heard = [line for line in out.splitlines() if line.startswith("[writer]     heard from ada:")]
    recorded = [line.removeprefix("[researcher] recorded: ") for line in out.splitlines() if line.startswith("[researcher]")]
    assert len(recorded) == 4 and [h.split(": ", 1)[1] for h in heard] == recorded  # every finding, in order
    final = out.split("final draft (", 1)[1]
    assert final.startswith("4 versions in teams/research/drafts/run-") and ", 3 superseded):" in final
    assert all(f"{i}. {text}" in final for i, text in enumerate(recorded, 1))


def test_the_example_says_which_policy_it_needs(tmp_path_factory: pytest.TempPathFactory, external_pg_admin_url: str) -> None:
    folder = tmp_path_factory.mktemp("research-team-default")
    with special_hub(
        folder, external_pg_admin_url, policy=PolicyConfig(dir=REPO / "policies", files=("default.cedar",))
    ) as stack:
        proc = _run({"MEMHUB_ADDRESS": stack.address, "MEMHUB_DATA_DIR": str(folder)})
    assert proc.returncode != 0
    assert "PERMISSION_DENIED" in proc.stderr and "MEMHUB_POLICY_FILES=default.cedar,examples/research_team.cedar" in proc.stderr


# -- the integration examples: two agents, one token each --


def _run_example(command: list[str], env: dict[str, str], cwd: Path = REPO) -> str:
    """Run an example as a user would (no MEMHUB_* or agent tokens inherited); its stdout, after checking it exited 0."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_") and k not in ("ALICE_TOKEN", "BOB_TOKEN")}
    proc = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env={**base, **env}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:] + proc.stdout
    return proc.stdout


@pytest.fixture(scope="module")
def two_agents(fleet: Fleet) -> dict[str, str]:
    """The hub's address and alice's and bob's tokens, as the examples read them."""
    return {"MEMHUB_ADDRESS": fleet.address, "ALICE_TOKEN": fleet.token("alice"), "BOB_TOKEN": fleet.token("bob")}


def _python_example(name: str, env: dict[str, str]) -> list[str]:
    return _run_example([sys.executable, str(REPO / "examples" / name)], env).splitlines()


def test_the_asyncio_example_shows_each_agent_its_own_memories(fleet: Fleet) -> None:
    # No tokens given: the example issues alice's and bob's with `memhub token issue`, from the hub's data directory.
    out = _python_example(
        "asyncio_client.py", {"MEMHUB_ADDRESS": fleet.address, "MEMHUB_DATA_DIR": str(fleet.hub.config.store.data_dir)}
    )
    assert out[0] == "[alice] sees: ['Deploys freeze on Fridays after 3pm']"
    assert out[1] == "[bob] sees: ['The staging database is restored every Sunday night']"
    assert out[2].startswith("[bob] writing in agents/alice/asyncio-example/run-") and ": PERMISSION_DENIED: " in out[2]
    assert out[3].startswith("[alice] 4 searches at once on one connection: [")
    assert out[4] == "[alice] change feed: The release train leaves every Tuesday at 10:00"


def test_the_langgraph_example_graphs_remember_for_their_own_agent(two_agents: dict[str, str]) -> None:
    assert _python_example("langgraph_store.py", two_agents) == [
        "[alice] graph answers: my favourite editor is Helix",
        "[bob]   graph answers: I don't know",
        "[bob]   reading alice's facts finds 0 items",
        "[bob]   writing into alice's store: PERMISSION_DENIED",
    ]


def test_the_openai_agents_example_recalls_only_the_agents_own_facts(two_agents: dict[str, str]) -> None:
    out = _python_example("openai_agents_session.py", two_agents)
    assert out[0].startswith("[alice] remember answered: [{'stored': True, 'id': ")
    assert out[1:] == [
        '[alice] recall_memories found: ["Alice\'s locker code is 4417"]',
        # two user turns, two tool calls and their outputs, two answers: every item of the run, read back
        "[alice] the conversation in memhub holds 8 items",
        "[bob]   recall_memories found: []",
        "[bob]   reading alice's conversation: PERMISSION_DENIED",
    ]


def test_the_google_adk_example_recalls_a_session_for_its_own_agent(two_agents: dict[str, str]) -> None:
    assert _python_example("google_adk_memory.py", two_agents) == [
        "[alice] concierge, next session: From memory: "
        + "I'm flying to Lisbon on the 14th and need a hotel near the Alfama district",
        "[bob]   concierge: I don't remember anything about that.",
        "[bob]   searching alice's namespace finds 0 memories",
        "[bob]   adding a session to alice's namespace: PERMISSION_DENIED",
    ]


def test_the_autogen_example_recalls_only_the_agents_own_memory(two_agents: dict[str, str]) -> None:
    autogen_on_path()  # AutoGen cannot be a pip extra (tests/autogen_support.py): the example finds it on PYTHONPATH
    out = _python_example("autogen_memory.py", {**two_agents, "PYTHONPATH": str(AUTOGEN_PACKAGES)})
    assert out == [
        "[alice] memory recalled: ['The analyst prefers latency charts with a log scale']",
        "[bob]   memory recalled: []",
        "[bob]   adding to alice's memory: PERMISSION_DENIED",
        "[alice] after clear, a query finds 0 memories",
    ]


def test_the_typescript_example_shows_each_agent_its_own_memories(two_agents: dict[str, str]) -> None:
    dist = built_client()
    out = _run_example(["node", str(dist / "examples" / "two-agents.js")], two_agents, cwd=dist.parent).splitlines()
    assert out[0] == '[alice] sees: ["Deploys freeze on Fridays after 3pm"]'
    assert out[1] == '[bob] sees: ["The staging database is restored every Sunday night"]'
    assert out[2].startswith("[bob] writing in agents/alice/typescript-example/run-") and ": PERMISSION_DENIED: " in out[2]
    assert out[3] == "[alice] change feed: The release train leaves every Tuesday at 10:00"


def test_every_example_is_run_here() -> None:
    """A new example must join this file: an example nobody runs drifts from the code it shows."""
    here = Path(__file__).read_text()
    examples = [p.name for p in (REPO / "examples").glob("*.py") if p.name != "agent_tokens.py"]
    examples += [p.stem + ".js" for p in (REPO / "clients" / "typescript" / "examples").glob("*.ts")]
    assert examples and all(f'"{name}"' in here for name in examples), examples
