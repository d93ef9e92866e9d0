"""Namespace amplification (issue 10 item 3): namespaces one agent creates must cost other agents nothing.

An agent that made 3,000 namespaces under its own prefix turned another
agent's unscoped search into 3,012 policy decisions and 3,012 audit rows.
Readable namespaces are now decided once per request on the policies' scope
for the caller (Cedar partial evaluation turned into a predicate the
database applies), and audited as one entry with the counts.

The scope must mean exactly what per-namespace decisions mean: it is
compared with Cedar here on the shipped policies and on policies written to
use every construct the translation handles, over namespaces chosen to sit
on each side of every boundary, and in Postgres as well as in Python.
"""

from __future__ import annotations

import itertools
import logging
import random
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import REPO, Fleet, create_scratch_database, drop_database, write_policy_dir
from google.protobuf.timestamp_pb2 import Timestamp
from sqlalchemy import Engine, text

from memhub.client import memory_input
from memhub.db import engine as db_engine
from memhub.db import migrate
from memhub.db.namespace_scope import namespaces_in_scope
from memhub.policy import PolicyEngine, Principal
from memhub.policy.scope_probes import probe_namespaces
from memhub.v1 import admin_pb2

PRINCIPALS = [
    Principal("alice", ("support",)),
    Principal("dave", ("support", "support-leads")),
    Principal("carol", ("auditors",)),
    Principal("eve", ()),
    Principal("root", ("admins",)),
    Principal("agents", ()),  # an agent named like the agents/ root
]

# Every construct the translation handles, in policies that validate against the shipped schema.
TRICKY = """
@id("t.like") permit(principal, action == Action::"read", resource) when { resource.path like "teams/*/public*" };
@id("t.root") permit(principal in Group::"ops", action == Action::"read", resource) when { resource.root == "ops" };
@id("t.eq") permit(principal, action == Action::"read", resource == Namespace::"shared/notice");
@id("t.set") permit(principal in Group::"ops", action, resource) when {
  resource in [Namespace::"ops/a", Namespace::"ops/b/c"] };
@id("t.ite") permit(principal, action == Action::"read", resource) when {
  if resource.root == "labs" then resource.owner == "" else false };
@id("t.is") forbid(principal, action, resource is Namespace in Namespace::"labs/closed") unless { principal in Group::"ops" };
@id("t.neq") forbid(principal, action == Action::"write", resource) when {
  resource.owner != principal.id && resource.root == "agents" };
@id("t.owner") permit(principal, action, resource is Namespace) when { resource.owner == principal.id && resource.owner != "" };
@id("t.attrs") permit(principal in Group::"mirror", action == Action::"read", resource) when { resource.root == resource.owner };
@id("t.has") permit(principal in Group::"ops", action == Action::"read", resource) when {
  resource has owner && resource.path like "*a_x*" };
"""

UNSUPPORTED = """
@id("u.contains") permit(principal, action == Action::"read", resource) when { ["ops", "labs"].contains(resource.root) };
"""


def _namespaces(principals: list[Principal], engines: list[PolicyEngine]) -> list[str]:
    """Namespaces on both sides of every boundary the scopes draw, plus random ones."""
    from memhub.core.namespaces import validate_namespace
    from memhub.errors import InvalidArgument

    names: set[str] = set()
    for engine, principal, action in itertools.product(engines, principals, ("read", "write", "forget")):
        scope = engine.scope(principal, action)
        if scope.predicate is not None:
            names |= probe_namespaces(scope.predicate, principal.agent_id, probe="x")
    rng = random.Random(7)
    # "a_x" and "abx": a like pattern's "_" must not act as SQL's one-character wildcard.
    segments = ["agents", "teams", "support", "secrets", "ops", "labs", "shared", "public", "alice", "eve", "a", "b", "c",
                "a_x", "abx", "closed", "notice", "publicity", "dave", "x", "a%x"]  # fmt: skip
    for _ in range(3000):
        names.add("/".join(rng.choice(segments) for _ in range(rng.randint(1, 5))))
    valid = []
    for name in names:
        try:
            valid.append(validate_namespace(name))
        except InvalidArgument:
            pass
    return sorted(valid)


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory) -> list[PolicyEngine]:
    shipped = PolicyEngine.from_dir(REPO / "policies", files=["default.cedar", "examples/fleet.cedar"])
    tricky = PolicyEngine.from_dir(write_policy_dir(tmp_path_factory.mktemp("tricky"), TRICKY))
    return [shipped, tricky]


@pytest.fixture(scope="module")
def namespace_table(external_pg_admin_url: str, engines: list[PolicyEngine]) -> Iterator[tuple[Engine, list[str]]]:
    """A scratch database whose namespaces table holds every test namespace."""
    url = create_scratch_database(external_pg_admin_url)
    engine = db_engine.connect(url)
    migrate.upgrade(engine)
    names = _namespaces(PRINCIPALS + [Principal("ops-bot", ("ops", "mirror"))], engines)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO namespaces (name, created_by) SELECT unnest(CAST(:n AS text[])), ''"), {"n": names})
    try:
        yield engine, names
    finally:
        engine.dispose()
        drop_database(external_pg_admin_url, url)


@pytest.mark.parametrize("which", ["shipped", "tricky"])
@pytest.mark.parametrize("action", ["read", "write", "forget"])
def test_the_scope_means_what_per_namespace_decisions_mean(
    engines: list[PolicyEngine], namespace_table: tuple[Engine, list[str]], which: str, action: str
) -> None:
    policy = engines[0 if which == "shipped" else 1]
    db, names = namespace_table
    for principal in [*PRINCIPALS, Principal("ops-bot", ("ops", "mirror"))]:
        scope = policy.scope(principal, action)
        assert scope.predicate is not None, scope.unsupported
        expected = [n for n, d in zip(names, policy.decide_many(principal, action, names), strict=True) if d.allowed]
        assert [n for n in names if scope.predicate.matches(n)] == expected, (principal, action)
        with db.connect() as conn:
            assert namespaces_in_scope(conn, [], scope.predicate) == expected, (principal, action)
            for root in ("teams", "agents/alice", "labs/closed"):
                under = [n for n in expected if n == root or n.startswith(root + "/")]
                assert namespaces_in_scope(conn, [root], scope.predicate) == under


def test_policies_the_scope_cannot_express_fall_back_to_per_namespace_decisions(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    engine = PolicyEngine.from_dir(write_policy_dir(tmp_path / "p", UNSUPPORTED))
    with caplog.at_level(logging.WARNING, logger="memhub.policy.engine"):
        scope = engine.scope(Principal("eve", ()), "read")
    assert scope.predicate is None and "contains" in scope.unsupported
    assert "deciding each namespace" in caplog.text


# -- end to end: the cost of a search no longer grows with other agents' namespaces ----------------


def _read_rows(fleet: Fleet, agent: str, since: Timestamp) -> list[admin_pb2.AuditEntry]:
    fleet.hub.audit.flush()
    with fleet.client("root") as root:
        reply = root.call_admin(
            "QueryAuditLog", admin_pb2.QueryAuditLogRequest(agent_id=agent, action="read", since=since, page_size=1000)
        )
    return list(reply.entries)


def test_another_agents_namespaces_cost_a_search_nothing(fleet: Fleet) -> None:
    engine = fleet.hub.policies.current()
    with fleet.client("eve") as eve:
        eve.write([memory_input(f"agents/eve/notes{i}", f"eve's note {i}") for i in range(3)], wait_indexed=True)
        eve.search("eve's note", [])  # the scope is computed (and cached) once
        fleet.hub.audit.flush()
        since = Timestamp()
        since.FromDatetime(datetime.now(timezone.utc))
        first = eve.search("eve's note", []).hits
        with fleet.client("mallory") as mallory:  # no groups: owns agents/mallory/** under the default policy
            for start in range(0, 300, 100):
                mallory.write([memory_input(f"agents/mallory/n{i}", f"filler {i}") for i in range(start, start + 100)])
        misses = engine.cache_info["misses"]
        second = eve.search("eve's note", []).hits
        assert engine.cache_info["misses"] == misses  # not one policy decision for mallory's 300 namespaces
    assert {h.memory.id for h in first} == {h.memory.id for h in second}
    assert all(h.memory.namespace.startswith("agents/eve/") for h in second)
    rows = _read_rows(fleet, "eve", since)
    assert len(rows) == 2  # one read entry per search, not one per namespace
    for row in rows:
        assert row.decision == admin_pb2.DECISION_ALLOW and row.namespace == ""
        assert row.detail["namespaces"] == str(_count_under(fleet, "agents/eve"))  # all eve may read, and no more
        assert "default.agent-owns-own-namespace" in row.policy_ids


def _count_under(fleet: Fleet, root: str) -> int:
    """Namespaces at or under ``root`` (other tests of the session may have made some too)."""
    with fleet.hub.engine.connect() as conn:
        return int(
            conn.execute(
                text("SELECT count(*) FROM namespaces WHERE name = :r OR name LIKE :p"), {"r": root, "p": root + "/%"}
            ).scalar_one()
        )


def test_a_denied_search_is_one_deny_entry_naming_the_root(fleet: Fleet) -> None:
    fleet.hub.audit.flush()
    since = Timestamp()
    since.FromDatetime(datetime.now(timezone.utc))
    with fleet.client("eve") as eve:
        assert not eve.search("secrets", ["teams/support"]).hits
    rows = _read_rows(fleet, "eve", since)
    assert [(r.namespace, r.decision, r.detail["namespaces"], r.detail["roots"]) for r in rows] == [
        ("teams/support", admin_pb2.DECISION_DENY, "0", "teams/support")
    ]


def test_an_auditor_still_reads_everything_but_secrets(fleet: Fleet) -> None:
    with fleet.client("dave") as dave:
        dave.write([memory_input("teams/support/secrets", "the vault code")], wait_indexed=True)
        dave.write([memory_input("teams/support/amp", "a support note about the vault")], wait_indexed=True)
    with fleet.client("carol") as carol:
        spaces = {h.memory.namespace for h in carol.search("vault", [], top_k=50).hits}
    assert "teams/support/amp" in spaces and "teams/support/secrets" not in spaces
