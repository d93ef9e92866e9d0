"""Cedar policies: the shipped set, the engine's decisions and errors, reloads, and the `memhub policy` commands."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from memhub.core.access import Action
from memhub.errors import FailedPrecondition
from memhub.policy import Decision, PolicyEngine, PolicyError, PolicyStore, Principal
from memhub.policy import cli as policy_cli
from memhub.policy.entities import entities_json
from memhub.policy.model import REQUIRED_ACTIONS
from memhub.policy.sources import read_sources

REPO = Path(__file__).resolve().parent.parent
POLICIES = REPO / "policies"
FLEET = ["default.cedar", "examples/fleet.cedar"]


@pytest.fixture(autouse=True)
def _no_policy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(policy_cli.DIR_ENV, raising=False)
    monkeypatch.delenv(policy_cli.FILES_ENV, raising=False)


def make_dir(tmp_path: Path, files: dict[str, str], schema: str | None = None) -> Path:
    """A policy directory with the shipped schema (or `schema`) and the given policy files."""
    d = tmp_path / "pol"
    d.mkdir(exist_ok=True)
    if schema is None:
        shutil.copy(POLICIES / "schema.cedarschema", d / "schema.cedarschema")
    else:
        (d / "schema.cedarschema").write_text(schema)
    for name, text in files.items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(text)
    return d


def policy_cli_run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = policy_cli.main(["policy", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


ann = Principal("ann")
GRANT_TEAM_A = """
@id("team-a.members-read-write")
permit (principal in Group::"team-a", action in [Action::"read", Action::"write"], resource in Namespace::"teams/a");
"""


# --------------------------------------------------------------------------- shipped policies


def test_schema_declares_every_hub_action() -> None:
    """Every action but issue_token is required of a schema; the shipped one declares issue_token too (a schema of
    your own without it loads, and the hub then issues no token)."""
    hub_wide = (Action.ADMIN, Action.ISSUE_TOKEN)
    assert REQUIRED_ACTIONS == {a.value: ("Hub" if a in hub_wide else "Namespace") for a in Action if a is not Action.ISSUE_TOKEN}
    engine = PolicyEngine.from_dir(POLICIES)
    assert set(engine.actions) == {a.value for a in Action}
    assert engine.actions["issue_token"] == frozenset({"Hub"})


@pytest.mark.parametrize("files", [None, ["default.cedar"], FLEET])
def test_shipped_policies_validate(capsys: pytest.CaptureFixture[str], files: list[str] | None) -> None:
    argv = ["validate", "--dir", str(POLICIES)] + (["--files", ",".join(files)] if files else [])
    code, out, err = policy_cli_run(capsys, *argv)
    assert code == 0, err
    assert "default.agent-owns-own-namespace" in out and "default.admins-administer-hub" in out
    assert ("fleet.support-secrets-leads-only" in out) == (files == FLEET)
    engine = PolicyEngine.from_dir(POLICIES, files=files)
    assert engine.version[:12] in out
    assert len(engine.policy_ids) == len(set(engine.policy_ids))


def test_default_selection_is_the_dir_only() -> None:
    """Without --files: every *.cedar directly in the dir; examples/ and tests/ are never picked up."""
    assert PolicyEngine.from_dir(POLICIES).files == ("default.cedar", "operators.cedar")
    assert PolicyEngine.from_dir(POLICIES, files=FLEET).files == tuple(FLEET)


@pytest.mark.parametrize(
    ("table", "files"),
    [("default.csv", ["default.cedar"]), ("fleet.csv", FLEET), ("operators.csv", ["default.cedar", "operators.cedar"])],
)
def test_shipped_tables_pass(capsys: pytest.CaptureFixture[str], table: str, files: list[str]) -> None:
    code, out, err = policy_cli_run(
        capsys, "test", str(POLICIES / "tests" / table), "--dir", str(POLICIES), "--files", ",".join(files)
    )
    assert code == 0, out + err
    assert "FAIL" not in out
    assert " passed, 0 failed" in out
    assert int(out.split(" passed")[0].split()[-1]) >= 25


def test_fleet_table_fails_without_the_fleet_policy(capsys: pytest.CaptureFixture[str]) -> None:
    """The table can fail: run against default.cedar alone, the team grants are missing."""
    code, out, _ = policy_cli_run(
        capsys, "test", str(POLICIES / "tests" / "fleet.csv"), "--dir", str(POLICIES), "--files", "default.cedar"
    )
    assert code == 1
    assert "FAIL" in out and "expected allow, got deny" in out
    # a deny the fleet file alone supplies (auditors may not write their own namespace) shows the permit that won
    assert "expected deny, got allow (permitted by default.agent-owns-own-namespace)" in out


def test_memhub_entry_point_and_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    """`memhub policy ...` through memhub.cli.main; with no --dir it checks the hub's own default directory."""
    from memhub.cli.main import main as memhub_main
    from memhub.config import default_policy_dir

    assert policy_cli.SHIPPED_DIR == default_policy_dir()
    assert memhub_main(["policy", "validate"]) == 0
    assert "default.agent-owns-own-namespace" in capsys.readouterr().out
    assert memhub_main(["policy", "test", str(POLICIES / "tests" / "fleet.csv")]) == 1  # fleet.cedar not listed
    assert " failed" in capsys.readouterr().out
    engine = PolicyEngine.from_dir(POLICIES)
    assert engine.loaded_at.tzinfo is not None


def test_memhub_policy_runs_as_a_process() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    ok = subprocess.run(
        [
            sys.executable,
            "-m",
            "memhub.policy.cli",
            "policy",
            "test",
            "policies/tests/fleet.csv",
            "--files",
            "default.cedar",
            "--files",
            "examples/fleet.cedar",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    env["MEMHUB_POLICY_FILES"] = "default.cedar"
    bad = subprocess.run(
        [sys.executable, "-m", "memhub.policy.cli", "policy", "test", "policies/tests/fleet.csv"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 1, bad.stdout + bad.stderr


# --------------------------------------------------------------------------- decisions


def test_default_deny(tmp_path: Path) -> None:
    engine = PolicyEngine.from_dir(make_dir(tmp_path, {"p.cedar": GRANT_TEAM_A}))
    d = engine.decide(Principal("ann", ("team-b",)), "read", "teams/a")
    assert d == Decision(allowed=False, policy_ids=(), version=engine.version)
    assert not engine.decide(ann, "read", "agents/ann").allowed  # no owner policy in this set
    assert not engine.decide(Principal("ann", ("team-a",)), "forget", "teams/a").allowed  # action not granted


def test_descendants_inherit_grants_segment_wise(tmp_path: Path) -> None:
    engine = PolicyEngine.from_dir(make_dir(tmp_path, {"p.cedar": GRANT_TEAM_A}))
    member = Principal("ann", ("team-a",))
    for ns in ("teams/a", "teams/a/b", "teams/a/b/c/d/e/f"):
        assert engine.decide(member, "write", ns).allowed, ns
    for ns in ("teams", "teams/ab", "teams/a-b", "teams/b/a", "a", "x/teams/a"):
        assert not engine.decide(member, "read", ns).allowed, ns


def test_forbid_wins_and_decisions_report_ids(tmp_path: Path) -> None:
    engine = PolicyEngine.from_dir(
        make_dir(
            tmp_path,
            {
                "p.cedar": GRANT_TEAM_A
                + """
@id("everyone-reads-teams")
permit (principal, action == Action::"read", resource in Namespace::"teams");

@id("no-one-in-vault")
forbid (principal, action, resource in Namespace::"teams/a/vault");
"""
            },
        )
    )
    member = Principal("ann", ("team-a",))
    d = engine.decide(member, "read", "teams/a/x")
    assert d.allowed and d.policy_ids == ("everyone-reads-teams", "team-a.members-read-write")
    d = engine.decide(member, "write", "teams/a/x")
    assert d.allowed and d.policy_ids == ("team-a.members-read-write",)
    d = engine.decide(member, "read", "teams/a/vault/k")
    assert not d.allowed and d.policy_ids == ("no-one-in-vault",)  # an explicit deny names the forbid
    assert not engine.decide(member, "write", "teams/a/vault").allowed
    assert engine.decide(member, "read", "teams/a/vaults").allowed  # look-alike is not forbidden


def test_shipped_fleet_decisions() -> None:
    engine = PolicyEngine.from_dir(POLICIES, files=FLEET)
    assert engine.decide(Principal("root", ("admins",)), "admin", None).policy_ids == ("default.admins-administer-hub",)
    d = engine.decide(Principal("sue", ("support",)), "read", "teams/support/secrets/k")
    assert not d.allowed and d.policy_ids == ("fleet.support-secrets-leads-only",)
    d = engine.decide(Principal("sam", ("support", "auditors")), "write", "teams/support")
    assert not d.allowed and d.policy_ids == ("fleet.auditors-never-modify",)
    assert not engine.decide(ann, "read", "agents/anna").allowed
    assert engine.decide(Principal("anna"), "read", "agents/anna").allowed


def test_group_order_and_duplicates_do_not_matter() -> None:
    engine = PolicyEngine.from_dir(POLICIES, files=FLEET)
    a = engine.decide(Principal("sam", ("support", "auditors")), "write", "teams/support")
    b = engine.decide(Principal("sam", ("auditors", "support", "auditors")), "write", "teams/support")
    assert a == b and not a.allowed
    assert engine.cache_info["hits"] == 1


def test_decide_many_matches_decide() -> None:
    engine = PolicyEngine.from_dir(POLICIES, files=FLEET)
    other = PolicyEngine.from_dir(POLICIES, files=FLEET)
    p = Principal("lee", ("support",))
    namespaces = ["agents/lee", "teams/support", "teams/support/secrets", "teams/sales", "teams/support", "agents/ann"]
    many = engine.decide_many(p, "read", namespaces)
    assert many == [other.decide(p, "read", ns) for ns in namespaces]
    assert [d.allowed for d in many] == [True, True, False, False, True, False]


def test_request_entities() -> None:
    """The entities built per request: the agent, its groups, the namespace and its ancestors up to the Hub."""
    ents = {e["uid"]["id"]: e for e in json.loads(entities_json('a"b', ("g",), ["agents/ann/notes", "top", None]))}
    assert ents['a"b'] == {
        "uid": {"type": "Agent", "id": 'a"b'},
        "attrs": {"id": 'a"b'},
        "parents": [{"type": "Group", "id": "g"}],
    }
    assert ents["g"]["uid"] == {"type": "Group", "id": "g"}
    ns = {k: (v["attrs"], v["parents"]) for k, v in ents.items() if v["uid"]["type"] == "Namespace"}
    hub = [{"type": "Hub", "id": "memhub"}]
    assert ns == {
        "agents/ann/notes": (
            {"path": "agents/ann/notes", "root": "agents", "owner": "ann"},
            [{"type": "Namespace", "id": "agents/ann"}],
        ),
        "agents/ann": ({"path": "agents/ann", "root": "agents", "owner": "ann"}, [{"type": "Namespace", "id": "agents"}]),
        "agents": ({"path": "agents", "root": "agents", "owner": ""}, hub),
        "top": ({"path": "top", "root": "top", "owner": ""}, hub),
    }


def test_decide_is_thread_safe() -> None:
    engine = PolicyEngine.from_dir(POLICIES, files=FLEET, cache_size=50)
    reference = PolicyEngine.from_dir(POLICIES, files=FLEET, cache_size=0)
    principals = [Principal("sue", ("support",)), Principal("ann"), Principal("audrey", ("auditors",))]
    spaces = ["agents/ann/x", "teams/support/t{}", "teams/support/secrets/a"]

    def work(k: int) -> list[tuple]:
        wrong = []
        for i in range(300):
            p, ns = principals[(i + k) % 3], spaces[i % 3].format(i % 40)
            if engine.decide(p, "read", ns) != reference.decide(p, "read", ns):
                wrong.append((p, ns))
        return wrong

    with ThreadPoolExecutor(8) as pool:
        assert [w for ws in pool.map(work, range(8)) for w in ws] == []
    assert engine.cache_info["size"] == 50 and engine.cache_info["hits"] > 0


def test_requests_the_schema_cannot_express_are_errors_not_denials() -> None:
    engine = PolicyEngine.from_dir(POLICIES)
    with pytest.raises(ValueError, match="unknown action"):
        engine.decide(ann, "delete", "agents/ann")
    with pytest.raises(ValueError, match="hub-wide"):
        engine.decide(Principal("root", ("admins",)), "admin", "agents/root")
    with pytest.raises(ValueError, match="applies to a namespace"):
        engine.decide(ann, "read", None)
    with pytest.raises(ValueError, match="agent_id"):
        engine.decide(Principal(""), "read", "agents/x")
    with pytest.raises(ValueError, match="groups"):
        engine.decide(Principal("ann", ("",)), "read", "agents/ann")


def test_evaluation_errors_deny(tmp_path: Path) -> None:
    """A forbid that fails to evaluate (Long overflow) must not let a permit through, although Cedar would."""
    engine = PolicyEngine.from_dir(
        make_dir(
            tmp_path,
            {
                "p.cedar": GRANT_TEAM_A
                + """
@id("broken-forbid")
forbid (principal, action, resource in Namespace::"teams/a/x")
when { 9223372036854775807 + 1 > 0 };
"""
            },
        )
    )
    d = engine.decide(Principal("ann", ("team-a",)), "read", "teams/a/x")
    assert not d.allowed and d.errors
    assert engine.decide(Principal("ann", ("team-a",)), "read", "teams/a/y").allowed


# --------------------------------------------------------------------------- loading errors


def test_policy_without_id_is_refused(tmp_path: Path) -> None:
    d = make_dir(tmp_path, {"p.cedar": GRANT_TEAM_A + '\npermit (principal, action == Action::"read", resource);\n'})
    with pytest.raises(PolicyError) as exc:
        PolicyEngine.from_dir(d)
    assert len(exc.value.errors) == 1
    assert "p.cedar: policy at line 5" in exc.value.errors[0] and "no @id" in exc.value.errors[0]


def test_duplicate_ids_are_refused_within_and_across_files(tmp_path: Path) -> None:
    d = make_dir(tmp_path, {"a.cedar": GRANT_TEAM_A, "b.cedar": GRANT_TEAM_A})
    with pytest.raises(PolicyError) as exc:
        PolicyEngine.from_dir(d)
    (err,) = exc.value.errors
    assert "b.cedar" in err and "a.cedar" in err and "team-a.members-read-write" in err and "duplicate @id" in err
    (d / "a.cedar").write_text(GRANT_TEAM_A + GRANT_TEAM_A)
    with pytest.raises(PolicyError) as exc:
        PolicyEngine.from_dir(d, files=["a.cedar"])
    (err,) = exc.value.errors
    assert err.startswith("a.cedar: policy 'team-a.members-read-write' (line 5): duplicate @id") and "a.cedar (line 2)" in err


@pytest.mark.parametrize(
    ("policy", "problem"),
    [
        ('permit (principal, action == Action::"delete", resource);', 'unrecognized action `Action::"delete"`'),
        ("permit (principal is User, action, resource);", "unrecognized entity type `User`"),
        ('permit (principal, action == Action::"read", resource) when { resource.tenant == "x" };', "attribute `tenant`"),
        ('permit (principal, action == Action::"admin", resource in Namespace::"teams");', "unable to find an applicable action"),
    ],
)
def test_schema_validation_refuses_unknown_names(tmp_path: Path, policy: str, problem: str) -> None:
    d = make_dir(tmp_path, {"ok.cedar": GRANT_TEAM_A, "bad.cedar": f'// a comment\n\n@id("the-bad-one")\n{policy}\n'})
    with pytest.raises(PolicyError) as exc:
        PolicyEngine.from_dir(d)
    assert any(e.startswith("bad.cedar: policy 'the-bad-one' (line 3): ") and problem in e for e in exc.value.errors), (
        exc.value.errors
    )


def test_parse_errors_name_file_and_line_and_all_errors_are_listed(tmp_path: Path) -> None:
    d = make_dir(
        tmp_path,
        {
            "a.cedar": GRANT_TEAM_A + '\n@id("x")\npermit (principal, action, resource) when { resource.path == "a; b" }\n',
            "b.cedar": '@id("y")\npermit (principal, acton, resource);\n',
        },
    )
    with pytest.raises(PolicyError) as exc:
        PolicyEngine.from_dir(d)
    errors = exc.value.errors
    assert len(errors) == 2, errors
    assert errors[0].startswith("a.cedar:5: cannot parse")
    assert errors[1].startswith("b.cedar:1: cannot parse") and "acton" in errors[1]
    assert isinstance(exc.value, FailedPrecondition)  # maps to FAILED_PRECONDITION / exit 1 in memhub.cli.main


def test_templates_and_bad_ids_are_refused(tmp_path: Path) -> None:
    d = make_dir(
        tmp_path,
        {
            "p.cedar": """
@id("tmpl")
permit (principal == ?principal, action == Action::"read", resource);
@id("has space")
permit (principal, action == Action::"read", resource);
"""
        },
    )
    with pytest.raises(PolicyError) as exc:
        PolicyEngine.from_dir(d)
    text = str(exc.value)
    assert "'tmpl' (line 2): is a template" in text and "'has space' (line 4): @id must be" in text


def test_schema_problems_are_refused(tmp_path: Path) -> None:
    schema = (POLICIES / "schema.cedarschema").read_text()
    no_forget = schema.replace("action read, write, forget,", "action read, write,")
    with pytest.raises(PolicyError, match="must declare action 'forget'"):
        PolicyEngine.from_dir(make_dir(tmp_path, {"p.cedar": GRANT_TEAM_A}, schema=no_forget))
    extra_attr = schema.replace("owner: String,", "owner: String,\n  tier: Long,")
    with pytest.raises(PolicyError, match="do not conform to the schema"):
        PolicyEngine.from_dir(make_dir(tmp_path, {"p.cedar": GRANT_TEAM_A}, schema=extra_attr))
    with pytest.raises(PolicyError, match="schema.cedarschema: "):
        PolicyEngine.from_dir(make_dir(tmp_path, {"p.cedar": GRANT_TEAM_A}, schema="entity Agent = { id: Strin };"))


def test_file_selection_errors(tmp_path: Path) -> None:
    d = make_dir(tmp_path, {"p.cedar": GRANT_TEAM_A})
    with pytest.raises(PolicyError) as exc:
        PolicyEngine.from_dir(d, files=["p.cedar", "p.cedar", "missing.cedar", "notes.txt"])
    text = str(exc.value)
    assert "p.cedar: listed twice" in text and "missing.cedar: no such policy file" in text and "notes.txt" in text
    empty = tmp_path / "empty"
    empty.mkdir()
    shutil.copy(POLICIES / "schema.cedarschema", empty)
    with pytest.raises(PolicyError, match="no policy files"):
        PolicyEngine.from_dir(empty)
    (empty / "schema.cedarschema").unlink()
    with pytest.raises(PolicyError, match="no schema"):
        PolicyEngine.from_dir(empty)


def test_json_schema_is_accepted(tmp_path: Path) -> None:
    import cedarpy

    d = make_dir(tmp_path, {"p.cedar": GRANT_TEAM_A})
    schema = cedarpy.Schema.from_str((d / "schema.cedarschema").read_text())
    (d / "schema.cedarschema").unlink()
    # Schema handles render only to Cedar syntax; write the JSON form by hand.
    (d / "schema.cedarschema.json").write_text("""{"": {
      "entityTypes": {
        "Group": {}, "Hub": {},
        "Agent": {"memberOfTypes": ["Group"], "shape": {"type": "Record", "attributes": {"id": {"type": "String"}}}},
        "Namespace": {"memberOfTypes": ["Namespace", "Hub"], "shape": {"type": "Record", "attributes": {
          "path": {"type": "String"}, "root": {"type": "String"}, "owner": {"type": "String"}}}}},
      "actions": {
        "read": {"appliesTo": {"principalTypes": ["Agent"], "resourceTypes": ["Namespace"]}},
        "write": {"appliesTo": {"principalTypes": ["Agent"], "resourceTypes": ["Namespace"]}},
        "forget": {"appliesTo": {"principalTypes": ["Agent"], "resourceTypes": ["Namespace"]}},
        "consolidate": {"appliesTo": {"principalTypes": ["Agent"], "resourceTypes": ["Namespace"]}},
        "subscribe": {"appliesTo": {"principalTypes": ["Agent"], "resourceTypes": ["Namespace"]}},
        "write_unfiltered": {"appliesTo": {"principalTypes": ["Agent"], "resourceTypes": ["Namespace"]}},
        "admin": {"appliesTo": {"principalTypes": ["Agent"], "resourceTypes": ["Hub"]}}}}}""")
    engine = PolicyEngine.from_dir(d)
    assert engine.schema_file == "schema.cedarschema.json" and str(schema)
    assert engine.decide(Principal("ann", ("team-a",)), "write", "teams/a/b").allowed


# --------------------------------------------------------------------------- versions, cache, reloads


def test_version_covers_schema_and_policy_texts(tmp_path: Path) -> None:
    d = make_dir(tmp_path, {"p.cedar": GRANT_TEAM_A})
    v1 = read_sources(d).version
    assert read_sources(d).version == v1 and PolicyEngine.from_dir(d).version == v1
    (d / "p.cedar").write_text(GRANT_TEAM_A + "\n")
    v2 = read_sources(d).version
    (d / "schema.cedarschema").write_text((d / "schema.cedarschema").read_text() + "\n")
    v3 = read_sources(d).version
    assert len({v1, v2, v3}) == 3


def test_cache_is_keyed_by_version_and_reload_changes_decisions(tmp_path: Path) -> None:
    d = make_dir(tmp_path, {"p.cedar": GRANT_TEAM_A})
    store = PolicyStore(d)
    old = store.current()
    member = Principal("ann", ("team-a",))
    first = old.decide(member, "forget", "teams/a/x")
    assert not first.allowed
    assert old.decide(member, "forget", "teams/a/x") is first  # served from the cache
    assert old.cache_info["hits"] == 1

    assert store.reload() == type(store.reload())(changed=False, version=old.version, previous_version=old.version)
    (d / "p.cedar").write_text(
        GRANT_TEAM_A.replace('[Action::"read", Action::"write"]', '[Action::"read", Action::"write", Action::"forget"]')
    )
    result = store.reload()
    assert result.changed and result.version != old.version and result.previous_version == old.version
    new = store.current()
    assert new is not old and new.version == result.version and new.cache_info["size"] == 0
    d2 = new.decide(member, "forget", "teams/a/x")
    assert d2.allowed and d2.version == result.version and d2.policy_ids == ("team-a.members-read-write",)
    assert old.decide(member, "forget", "teams/a/x") == first  # the old engine is unchanged


def test_cache_is_bounded(tmp_path: Path) -> None:
    engine = PolicyEngine.from_dir(make_dir(tmp_path, {"p.cedar": GRANT_TEAM_A}), cache_size=8)
    for i in range(50):
        engine.decide(Principal(f"agent-{i}"), "read", "teams/a")
    assert engine.cache_info["size"] == 8


def test_invalid_edit_keeps_the_old_engine_and_says_why(tmp_path: Path) -> None:
    d = make_dir(tmp_path, {"p.cedar": GRANT_TEAM_A})
    store = PolicyStore(d)
    old = store.current()
    member = Principal("ann", ("team-a",))
    assert old.decide(member, "read", "teams/a").allowed

    (d / "p.cedar").write_text(GRANT_TEAM_A + '\n@id("oops")\npermit (principal, action == Action::"erase", resource);\n')
    with pytest.raises(PolicyError) as exc:
        store.reload()
    text = str(exc.value)
    assert "p.cedar: policy 'oops' (line 5)" in text and 'Action::"erase"' in text
    assert f"policies in force are unchanged (version {old.version[:12]})" in text
    assert store.current() is old and store.current().decide(member, "read", "teams/a").allowed

    # the watcher logs it once and keeps the old engine; a fixed file is picked up
    assert store.poll_once() is None and store.current() is old
    assert store.poll_once() is None
    (d / "p.cedar").unlink()
    assert store.poll_once() is None and store.current() is old  # "no policy files" is refused too
    (d / "p.cedar").write_text(GRANT_TEAM_A.replace("team-a", "team-b"))
    result = store.poll_once()
    assert result is not None and result.changed and store.current().version == result.version
    assert not store.current().decide(member, "read", "teams/a").allowed


def test_invalid_policies_at_start_raise(tmp_path: Path) -> None:
    d = make_dir(tmp_path, {"p.cedar": "permit (principal, action, resource);"})
    with pytest.raises(PolicyError, match="no @id"):
        PolicyStore(d)


def test_background_watcher_reloads_changed_files(tmp_path: Path) -> None:
    d = make_dir(tmp_path, {"p.cedar": GRANT_TEAM_A})
    store = PolicyStore(d, poll_interval_s=0.02)
    first = store.current().version
    store.start()
    try:
        (d / "q.cedar").write_text('@id("all-read")\npermit (principal, action == Action::"read", resource);\n')
        deadline = time.monotonic() + 30
        while store.current().version == first and time.monotonic() < deadline:
            time.sleep(0.02)
        assert store.current().files == ("p.cedar", "q.cedar")
        assert store.current().decide(ann, "read", "anything").policy_ids == ("all-read",)
    finally:
        store.stop()
    assert store._thread is None  # noqa: SLF001 - other hubs in this session run watchers of their own


# --------------------------------------------------------------------------- `memhub policy test` tables


HEADER = "agent,groups,action,namespace,expected,note\n"


def test_a_failing_row_exits_1_and_shows_decision_and_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = make_dir(tmp_path, {"p.cedar": GRANT_TEAM_A})
    table = tmp_path / "t.csv"
    table.write_text(
        HEADER + "ann,team-a,read,teams/a/x,allow,ok\n"
        "ann,team-a,write,teams/a,deny,wrong on purpose\n"
        "bob,,read,teams/a,allow,also wrong\n"
    )
    code, out, _ = policy_cli_run(capsys, "test", str(table), "--dir", str(d))
    assert code == 1
    assert (
        f"FAIL {table}:3: agent=ann groups=team-a write teams/a: expected deny, got allow "
        "(permitted by team-a.members-read-write)  # wrong on purpose" in out
    )
    assert f"FAIL {table}:4: agent=bob groups=- read teams/a: expected allow, got deny (default deny" in out
    assert "1 passed, 2 failed" in out


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("ann,,delete,agents/ann,allow,\n", ":2: column 'action': unknown action 'delete'"),
        ("ann,,read,agents/ann,maybe,\n", ":2: column 'expected': 'maybe' is not allow or deny"),
        ("ann,admins,admin,agents/ann,allow,\n", ":2: column 'namespace': must be empty"),
        ("ann,,read,,allow,\n", ":2: column 'namespace': is empty"),
        ("ann,,read,Agents/Ann,deny,\n", ":2: column 'namespace': segment 'Agents' has upper-case"),
        (",,read,agents/ann,deny,\n", ":2: column 'agent': is empty"),
        ("ann,a||b,read,agents/ann,deny,\n", ":2: column 'groups'"),
        ("ann,,read,agents/ann,deny\n", ":2: has 5 fields; the header has 6"),
    ],
)
def test_malformed_tables_exit_2_naming_row_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, expected: str
) -> None:
    table = tmp_path / "t.csv"
    table.write_text(HEADER + body + "# a comment\nann,,read,agents/ann,deny,fine\n")
    code, out, err = policy_cli_run(capsys, "test", str(table), "--dir", str(POLICIES))
    assert code == 2, out + err
    assert f"{table}{expected}" in err
    assert "passed" not in out


def test_bad_header_and_missing_table_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    table = tmp_path / "t.csv"
    table.write_text("agent,group,action,namespace,expected\nann,,read,agents/ann,deny\n")
    code, _, err = policy_cli_run(capsys, "test", str(table), "--dir", str(POLICIES))
    assert code == 2 and "missing column(s) ['groups', 'note']" in err and "unknown column(s) ['group']" in err
    code, _, err = policy_cli_run(capsys, "test", str(tmp_path / "nope.csv"), "--dir", str(POLICIES))
    assert code == 2 and "cannot read" in err


def test_validate_exits_1_listing_every_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = make_dir(
        tmp_path,
        {
            "a.cedar": "permit (principal, action, resource);",
            "b.cedar": '@id("b")\npermit (principal is Robot, action, resource);',
        },
    )
    code, out, err = policy_cli_run(capsys, "validate", "--dir", str(d))
    assert code == 1 and out == ""
    assert "a.cedar: policy at line 1: has no @id" in err and "b.cedar: policy 'b' (line 1)" in err and "Robot" in err
    code, _, err = policy_cli_run(capsys, "test", str(POLICIES / "tests" / "default.csv"), "--dir", str(d))
    assert code == 1 and "no @id" in err


def test_env_selects_files(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(policy_cli.DIR_ENV, str(POLICIES))
    monkeypatch.setenv(policy_cli.FILES_ENV, "default.cedar, examples/fleet.cedar")
    code, out, _ = policy_cli_run(capsys, "test", str(POLICIES / "tests" / "fleet.csv"))
    assert code == 0 and "0 failed" in out


def test_operator_table_fails_without_operators_cedar(capsys: pytest.CaptureFixture[str]) -> None:
    """The README's operator token reads nothing under default.cedar alone: the table says so, naming the default deny."""
    code, out, _ = policy_cli_run(
        capsys, "test", str(POLICIES / "tests" / "operators.csv"), "--dir", str(POLICIES), "--files", "default.cedar"
    )
    assert code == 1
    assert (
        "agent=ops groups=admins|auditors read agents/planner/ops: expected allow, got deny "
        "(default deny: no policy permits it)" in out
    )
    assert "agent=issuer groups=admins|token-issuers issue_token (hub): expected allow, got deny" in out


def test_naming_the_policies_behind_a_set_agrees_with_evaluating_each_namespace() -> None:
    """memhub/policy/attribution.py finds subtrees and agents' namespaces by substring search: it must name
    exactly the policies that apply to at least one name, look-alike names included."""
    from memhub.policy import attribution
    from memhub.policy.scope import Like

    engine = PolicyEngine.from_dir(POLICIES, files=FLEET)
    names = [
        "agents/lee",
        "agents/lee/notes",
        "agents/leex",
        "agents/lee.old/x",
        "teams/support",
        "teams/supportx",
        "teams/support-archive/a",
        "teams/support/secrets/a",
        "teams/support/inbox",
        "shared",
        "agentsx/lee",
    ]
    principals = [
        Principal("lee", ("support", "support-leads")),
        Principal("audrey", ("auditors",)),
        Principal("mo", ("write-only",)),
        Principal("lee.old"),
    ]
    extra = (("like", Like("path", ("teams/", None, "/inbox"))),)  # a shape scanned name by name
    for principal in principals:
        for action in ("read", "write", "forget"):
            scope = engine.scope(principal, action)
            for policies in (scope.permits, scope.forbids, scope.permits + extra):
                for subset in (names, names[:1], names[4:], names[-3:], []):
                    naive = tuple(sorted(pid for pid, p in policies if any(p.matches(n) for n in subset)))
                    assert attribution.matching(policies, subset) == naive, (principal, action, subset)
