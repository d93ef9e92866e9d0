"""Consolidation settings from MEMHUB_* variables: valid ones read, malformed ones refused naming the variable;
the shipped example policy for the scheduled job passes its decision table."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO

from memhub.config import HubConfig
from memhub.core.model import Kind
from memhub.curation.consolidation_config import ConsolidationConfig, ScheduledNamespace
from memhub.curation.consolidation_model import Grouping
from memhub.errors import StartupError


def test_off_and_extractive_by_default() -> None:
    config = HubConfig.from_env({}).consolidation
    assert config.schedule == () and config.summariser.provider == "extractive"
    assert config.principal == "memhub-consolidator" and config.groups == ("consolidators",)


def test_a_schedule_and_an_llm_are_read() -> None:
    config = ConsolidationConfig.from_env(
        {
            "MEMHUB_CONSOLIDATE_SCHEDULE": "agents/bob=24h, teams/x=7d,ops=90m",
            "MEMHUB_CONSOLIDATE_PRINCIPAL": "curator",
            "MEMHUB_CONSOLIDATE_GROUPS": "system,curators",
            "MEMHUB_CONSOLIDATE_GROUP_BY": "embedding",
            "MEMHUB_CONSOLIDATE_KIND": "procedural",
            "MEMHUB_SUMMARISER": "llm",
            "MEMHUB_SUMMARISER_BASE_URL": "http://127.0.0.1:8000/v1",
            "MEMHUB_SUMMARISER_MODEL": "qwen2.5-7b",
            "MEMHUB_SUMMARISER_TIMEOUT_S": "30",
        }
    )
    assert config.schedule == (
        ScheduledNamespace("agents/bob", 86_400.0),
        ScheduledNamespace("teams/x", 7 * 86_400.0),
        ScheduledNamespace("ops", 5_400.0),
    )
    assert (config.principal, config.groups, config.group_by, config.kind) == (
        "curator",
        ("system", "curators"),
        Grouping.EMBEDDING,
        Kind.PROCEDURAL,
    )
    assert config.summariser.model == "qwen2.5-7b" and config.summariser.timeout_s == 30.0


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MEMHUB_CONSOLIDATE_SCHEDULE": "agents/bob"}, "is not NAMESPACE=INTERVAL"),
        ({"MEMHUB_CONSOLIDATE_SCHEDULE": "agents/bob=daily"}, "is not an interval"),
        ({"MEMHUB_CONSOLIDATE_SCHEDULE": "agents/bob=10s"}, "out of range (1m to 366d)"),
        ({"MEMHUB_CONSOLIDATE_SCHEDULE": "Agents/Bob=1d"}, "upper-case"),
        ({"MEMHUB_CONSOLIDATE_SCHEDULE": "a=1d,a=2d"}, "named twice"),
        ({"MEMHUB_CONSOLIDATE_SCHEDULE": ",".join(f"n{i}=1d" for i in range(65))}, "more than 64"),
        ({"MEMHUB_CONSOLIDATE_PRINCIPAL": "bad name"}, "MEMHUB_CONSOLIDATE_PRINCIPAL"),
        ({"MEMHUB_CONSOLIDATE_GROUPS": "ok,not ok"}, "MEMHUB_CONSOLIDATE_GROUPS"),
        ({"MEMHUB_CONSOLIDATE_GROUP_BY": "topic"}, "use one of session, tag, entity, embedding"),
        ({"MEMHUB_CONSOLIDATE_KIND": "episodic"}, "semantic or procedural"),
        ({"MEMHUB_SUMMARISER": "gpt"}, "use extractive or llm"),
        ({"MEMHUB_SUMMARISER": "llm", "MEMHUB_SUMMARISER_MODEL": "m"}, "needs MEMHUB_SUMMARISER_BASE_URL"),
        ({"MEMHUB_SUMMARISER": "llm", "MEMHUB_SUMMARISER_BASE_URL": "http://x/v1"}, "needs MEMHUB_SUMMARISER_MODEL"),
        ({"MEMHUB_SUMMARISER_TIMEOUT_S": "0"}, "MEMHUB_SUMMARISER_TIMEOUT_S"),
    ],
)
def test_malformed_settings_stop_the_hub_naming_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(StartupError) as excinfo:
        HubConfig.from_env(env)
    assert message in str(excinfo.value)
    assert any(name in str(excinfo.value) for name in env)


def test_the_example_policy_for_the_job_passes_its_table() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "memhub.cli.main",
            "policy",
            "test",
            str(REPO / "policies" / "tests" / "consolidator.csv"),
            "--dir",
            str(REPO / "policies"),
            "--files",
            "default.cedar,examples/consolidator.cedar",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "9 passed, 0 failed" in done.stdout
