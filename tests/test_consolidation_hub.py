"""Consolidation on a hub of its own: rights under its own policies, the audit, the LLM summariser against a
local server speaking the chat-completions wire format with scripted replies, and the schedule.

The hub runs on the embedded Postgres and its own Milvus Lite file, with the LLM summariser configured (so it
is the default there; the rights tests ask for the extractive one by name) and with a 2 s timeout.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import grpc
import pytest
from chat_server import Raw, Scripted, chat_server
from conftest import REPO, ManualClock, backend_database, client_of, rpc_error, serving, write_policy_dir
from conftest import hub_config as base_config

from memhub.app import Hub
from memhub.client import MemhubClient, memory_input
from memhub.core.consolidation_schedule import ScheduledConsolidation
from memhub.curation.consolidation_config import ConsolidationConfig, ScheduledNamespace, SummariserConfig
from memhub.v1 import admin_pb2
from memhub.v1 import memory_pb2 as pb

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
POLICIES = [
    '@id("t.testers") permit(principal in Group::"testers", action, resource);',
    '@id("t.admins") permit(principal in Group::"admins", action == Action::"admin", resource == Hub::"memhub");',
    # lena curates proj/**, except that she may not read any proj/<x>/private.
    '@id("t.lena") permit(principal == Agent::"lena", action in [Action::"read", Action::"write", Action::"consolidate"],'
    ' resource in Namespace::"proj");',
    '@id("t.lena-no-private") forbid(principal == Agent::"lena", action == Action::"read", resource)'
    ' when { resource.path like "proj/*/private" || resource.path like "proj/*/private/*" };',
    '@id("t.rita") permit(principal == Agent::"rita", action in [Action::"read", Action::"write"],'
    ' resource in Namespace::"proj");',
    '@id("t.wade") permit(principal == Agent::"wade", action in [Action::"read", Action::"consolidate"],'
    ' resource in Namespace::"proj");',
    (REPO / "policies" / "examples" / "consolidator.cedar").read_text(),
]
EPISODES = [
    "Friday's deploy of checkout v2.7 failed because the build cache was cold.",
    "If the build cache is cold, the deploy takes 40 minutes, so Priya pre-warms it before a release.",
    "Priya pre-warmed the build cache and the deploy of checkout v2.8 took 6 minutes.",
]


@dataclass
class CuratedHub:
    hub: Hub
    address: str
    script: Scripted

    def client(self, agent: str, groups: tuple[str, ...] = ()) -> MemhubClient:
        return client_of(self.hub, self.address, agent, groups, timeout_s=60)


@pytest.fixture(scope="module")
def curated(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[CuratedHub]:
    script = Scripted()
    root: Path = tmp_path_factory.mktemp("consolidation-hub")
    with backend_database(request, "embedded-pg") as url, chat_server(script) as base_url:
        config = base_config(root, url, "consolidation_hub", write_policy_dir(root / "policies", *POLICIES))
        summariser = SummariserConfig(provider="llm", base_url=base_url, model="scripted-model", timeout_s=2.0)
        config = dataclasses.replace(config, consolidation=ConsolidationConfig(summariser=summariser))
        with serving(config) as (hub, address):
            yield CuratedHub(hub, address, script)


@pytest.fixture
def tester(curated: CuratedHub) -> Iterator[MemhubClient]:
    with curated.client("tester", ("testers",)) as client:
        yield client


def _seed(client: MemhubClient, ns: str, session: str, texts: list[str]) -> list[str]:
    reply = client.write(
        [memory_input(ns, t, occurred_at=T0 + timedelta(minutes=i)) for i, t in enumerate(texts)], session_id=session
    )
    return [r.memory.id for r in reply.results]


def _unique(root: str) -> str:
    return f"{root}/t{uuid.uuid4().hex[:10]}"


# -- rights ------------------------------------------------------------------------------------------


def test_unreadable_episodes_are_neither_used_nor_counted(curated: CuratedHub, tester: MemhubClient) -> None:
    ns = _unique("proj")
    visible = _seed(tester, ns, "s1", EPISODES)
    hidden = _seed(tester, f"{ns}/private", "s1", ["The private salary review of Priya is on Monday, if HR agrees."] * 1)
    with curated.client("lena") as lena:
        for dry_run in (True, False):
            reply = lena.consolidate(ns, summariser="extractive", dry_run=dry_run)
            assert [list(g.source_ids) for g in reply.groups] == [visible]  # same session, yet only what she may read
            assert reply.sources_selected == len(visible) and reply.sources_ungrouped == 0
            assert "salary" not in reply.groups[0].memory.content and hidden[0] not in reply.groups[0].memory.links.derived_from
        assert reply.memories_written == 1 and lena.get(reply.groups[0].memory.id).source.agent_id == "lena"


def test_no_consolidate_right_is_permission_denied(curated: CuratedHub, tester: MemhubClient) -> None:
    ns = _unique("proj")
    _seed(tester, ns, "s1", EPISODES)
    with curated.client("rita") as rita, pytest.raises(grpc.RpcError) as excinfo:
        rita.consolidate(ns, summariser="extractive")
    code, message = rpc_error(excinfo)
    assert code == grpc.StatusCode.PERMISSION_DENIED and "may not consolidate" in message and ns in message
    assert list(tester.list([ns], tags=["consolidated"]).memories) == []


def test_the_target_needs_write(curated: CuratedHub, tester: MemhubClient) -> None:
    ns = _unique("proj")
    _seed(tester, ns, "s1", EPISODES)
    with curated.client("wade") as wade, pytest.raises(grpc.RpcError) as excinfo:
        wade.consolidate(ns, summariser="extractive")  # may consolidate and read proj, not write it
    code, message = rpc_error(excinfo)
    assert code == grpc.StatusCode.PERMISSION_DENIED and "may not write" in message
    with curated.client("lena") as lena, pytest.raises(grpc.RpcError) as excinfo:
        lena.consolidate(ns, summariser="extractive", target_namespace="elsewhere/lessons")
    code, message = rpc_error(excinfo)
    assert code == grpc.StatusCode.PERMISSION_DENIED and "may not write in namespace 'elsewhere/lessons'" in message


def test_decisions_are_audited(curated: CuratedHub, tester: MemhubClient) -> None:
    ns = _unique("proj")
    _seed(tester, ns, "s1", EPISODES)
    with curated.client("lena") as lena, curated.client("rita") as rita, curated.client("root", ("admins",)) as root:
        lena.consolidate(ns, summariser="extractive", dry_run=True)
        with pytest.raises(grpc.RpcError):
            rita.consolidate(ns, summariser="extractive")
        curated.hub.audit.flush()

        def entries(agent: str, decision: int) -> list:
            query = admin_pb2.QueryAuditLogRequest(agent_id=agent, action="consolidate", decision=decision)
            return [e for e in root.call_admin("QueryAuditLog", query).entries if e.namespace == ns]

        allowed, denied = entries("lena", admin_pb2.DECISION_ALLOW), entries("rita", admin_pb2.DECISION_DENY)
        assert allowed and list(allowed[0].policy_ids) == ["t.lena"]
        assert denied and denied[0].rpc == "memhub.v1.MemoryService/ConsolidateMemories"


# -- the LLM summariser -----------------------------------------------------------------------------


def test_llm_summary_is_written_derived_from_its_sources(curated: CuratedHub, tester: MemhubClient) -> None:
    ns = _unique("llm")
    ids = _seed(tester, ns, "s1", EPISODES + ['Priya wrote "warm the cache first" in the release notes.'])
    lesson = "When the build cache is cold, pre-warming it before a release cut the deploy from 40 to 6 minutes."
    curated.script.replies.append((200, lesson, 0.0))
    before = len(curated.script.requests)
    reply = tester.consolidate(ns)
    assert reply.summariser == "llm:scripted-model" and reply.memories_written == 1
    memory = tester.get(reply.groups[0].memory.id)
    assert memory.content == lesson and sorted(memory.links.derived_from) == sorted(ids)
    request = curated.script.requests[before]
    assert request["model"] == "scripted-model" and request["temperature"] == 0
    system, user = request["messages"][0]["content"], request["messages"][1]["content"]
    assert "Keep every condition" in system and "Do not generalise" in system and "NONE" in system
    # Episodes go in as JSON strings, marked as data: the quote inside one cannot close it.
    for text in EPISODES + ['Priya wrote "warm the cache first" in the release notes.']:
        assert json.dumps(text) in user
    assert tester.consolidate(ns).memories_written == 0  # idempotent whatever the model would say next time


def test_an_llm_with_nothing_to_keep_writes_nothing(curated: CuratedHub, tester: MemhubClient) -> None:
    ns = _unique("llm")
    _seed(tester, ns, "s1", ["Hi there, how was your weekend?", "Good, thanks, and yours was fine too?"])
    curated.script.replies.append((200, "NONE", 0.0))
    reply = tester.consolidate(ns)
    assert reply.groups_skipped == 1 and reply.memories_written == 0 and list(reply.groups) == []


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        ((500, Raw('{"error": "model overloaded"}'), 0.0), "HTTP 500"),
        ((200, Raw('{"object": "not a completion"}'), 0.0), "not a chat completion"),
        ((200, "x" * 16_385, 0.0), "16385 characters"),
        ((200, "too late", 5.0), "did not answer within 2 s"),
    ],
)
def test_a_failing_llm_fails_the_call_and_nothing_is_half_written(
    curated: CuratedHub,
    tester: MemhubClient,
    failure: tuple[int, str, float],
    expected: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    ns = _unique("llm")
    _seed(tester, ns, "s1", EPISODES)
    _seed(tester, ns, "s2", ["The orders database ran out of connections on Monday.", "Tom raised the pool to 200."])
    curated.script.replies.extend([(200, "A good first lesson that must not be stored alone.", 0.0), failure])
    with caplog.at_level(logging.WARNING, logger="memhub"), pytest.raises(grpc.RpcError) as excinfo:
        tester.consolidate(ns)
    code, message = rpc_error(excinfo)
    assert code == grpc.StatusCode.UNAVAILABLE and "nothing was written" in message
    # The agent is told the summariser failed; where it lives and what it answered are for the operator (issue 22).
    url = curated.hub.config.consolidation.summariser.base_url
    assert "summariser is unavailable" in message and url not in message and expected not in message
    assert "127.0.0.1" not in message and "http" not in message.lower()
    logged = [r.getMessage() for r in caplog.records]
    assert any(url in line and expected in line for line in logged), logged
    assert list(tester.list([ns], tags=["consolidated"]).memories) == []  # the first group's lesson is not stored
    curated.script.replies.clear()


# -- the schedule ------------------------------------------------------------------------------------


def test_the_schedule_runs_as_its_principal_with_the_rights_policy_gives_it(curated: CuratedHub, tester: MemhubClient) -> None:
    granted, refused = _unique("teams/support"), _unique("proj")
    ids = _seed(tester, granted, "s1", EPISODES)
    _seed(tester, refused, "s1", EPISODES)
    clock = ManualClock()
    config = ConsolidationConfig(
        schedule=(ScheduledNamespace(granted, 3600.0), ScheduledNamespace(refused, 3600.0)),
        group_by=curated.hub.config.consolidation.group_by,
    )
    job = ScheduledConsolidation(curated.hub.consolidator, config, clock=clock)

    assert job.run_due() == {granted: 1, refused: 0}  # the example policy grants teams/support only
    stored = list(tester.list([granted], tags=["consolidated"]).memories)
    assert len(stored) == 1 and stored[0].source.agent_id == "memhub-consolidator"
    assert sorted(stored[0].links.derived_from) == sorted(ids)
    assert list(tester.list([refused], tags=["consolidated"]).memories) == []

    clock.now += 1800
    assert job.run_due() == {}  # not due yet
    _seed(tester, granted, "s2", ["Tom raised the orders pool to 200 when traffic peaked.", "The timeouts stopped after that."])
    clock.now += 1800
    curated.script.replies.append((200, "When traffic peaked, raising the orders pool to 200 stopped the timeouts.", 0.0))
    assert job.run_due() == {granted: 1, refused: 0}  # due: only the new session is consolidated
    assert len(list(tester.list([granted], tags=["consolidated"]).memories)) == 2


# -- the target's kind and type follow the write rules (issue 22) --------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"target_type": "event"}, "target_type"),  # was written as a semantic "event", which no write may store
        ({"target_type": "outcome", "target_kind": "semantic"}, "target_type"),
        ({"target_type": "fact", "target_kind": "procedural"}, "target_kind"),
        ({"target_type": "preference", "target_kind": "procedural"}, "target_kind"),
    ],
)
def test_a_target_type_a_write_would_refuse_is_invalid_argument(
    curated: CuratedHub, tester: MemhubClient, kwargs: dict, field: str
) -> None:
    ns = _unique("types")
    _seed(tester, ns, "s1", EPISODES)
    with pytest.raises(grpc.RpcError) as excinfo:
        tester.consolidate(ns, summariser="extractive", **kwargs)
    code, message = rpc_error(excinfo)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith(f"{field}: "), message
    assert kwargs["target_type"] in message  # says which type, and so what to change
    assert list(tester.list([ns], tags=["consolidated"]).memories) == []


def test_a_target_type_alone_takes_a_kind_the_write_rules_allow(curated: CuratedHub, tester: MemhubClient) -> None:
    ns = _unique("types")
    _seed(tester, ns, "s1", EPISODES)
    for type_, kind in (("fact", pb.MEMORY_KIND_SEMANTIC), ("rule", pb.MEMORY_KIND_SEMANTIC)):
        reply = tester.consolidate(ns, summariser="extractive", target_type=type_, dry_run=True)
        assert [g.memory.kind for g in reply.groups] == [kind], type_
