"""The examples in examples/ run as a user runs them (a subprocess) against a hub with the policies they name."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO
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
