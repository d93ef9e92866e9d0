"""`--json` and `--jsonl` of every client command, against a real hub: exactly one JSON document (json.loads takes
the whole output), one object per line, enums as the names the input takes, integers as numbers.

The commands run in this process (memhub.cli.main.main, the entry point's own function: argparse, the command,
gRPC to the hub) rather than as subprocesses: some thirty of them, and an interpreter start each would cost more
than the whole test. tests/test_cli.py covers the command as a process.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Stack

from memhub.cli.main import main
from memhub.client import memory_input

Run = Callable[..., str]


@pytest.fixture
def hub(stacks: dict[str, Stack]) -> Stack:
    # Output formatting does not depend on the Postgres behind the hub: one backend is enough.
    return stacks["external-pg"]


@pytest.fixture
def run(hub: Stack, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    """`memhub ARGS --hub ADDRESS` as the tester; returns stdout, fails on a non-zero exit."""
    monkeypatch.setenv("MEMHUB_TOKEN", hub.token("tester"))
    capsys.readouterr()

    def memhub(*args: str, hub_flag: bool = True) -> str:
        code = main([*args, *(["--hub", hub.address] if hub_flag else [])])
        out, err = capsys.readouterr()
        assert code == 0, f"memhub {' '.join(args)} exited {code}: {err}"
        return out

    return memhub


def refused(hub: Stack, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """Run a command that must be refused as a usage mistake (exit 2, nothing on stdout); returns stderr."""
    code = main([*args, "--hub", hub.address])
    out, err = capsys.readouterr()
    assert (code, out) == (2, ""), f"memhub {' '.join(args)}: {code} {out} {err}"
    return err


def one_document(out: str) -> Any:  # noqa: ANN401 - any JSON value
    return json.loads(out)  # raises on two documents back to back, which `list --all --json` used to print


def json_lines(out: str) -> list[Any]:
    lines = out.splitlines()
    assert lines, "no lines printed"
    return [json.loads(line) for line in lines]


def test_memory_commands_print_one_document_with_plain_names_and_numbers(run: Run, hub: Stack, ns: str) -> None:
    wrote = one_document(run("write", ns, "Grace deploys on Tuesdays", "--type", "fact", "--tag", "deploy", "--json"))
    memory = wrote["results"][0]["memory"]
    assert memory["kind"] == "semantic" and memory["type"] == "fact" and memory["status"] == "active"
    assert memory["version"] == 1 and isinstance(memory["version"], int)  # int64: a number, not "1"
    assert wrote["results"][0]["deduplicated"] is False  # defaults are present, not left out
    assert memory["trust"] in {"verified", "agent", "external", "unspecified"}

    again = one_document(run("write", ns, "Grace deploys on Tuesdays", "--type", "fact", "--json"))
    assert again["results"][0]["deduplicated"] is True and again["results"][0]["memory"]["seen_count"] == 2

    got = one_document(run("get", memory["id"], "--json"))
    assert got["id"] == memory["id"] and got["kind"] == "semantic" and got["flags"] == []

    hits = one_document(run("search", "who deploys on Tuesdays?", "--ns", ns, "--explain", "--json"))
    assert hits["hits"][0]["memory"]["id"] == memory["id"]
    assert {c["channel"] for c in hits["hits"][0]["channel_ranks"]} <= {"dense", "keyword", "entity", "temporal"}

    assert one_document(run("history", memory["id"], "--json"))["versions"][0]["id"] == memory["id"]
    assert json_lines(run("history", memory["id"], "--jsonl"))[0]["id"] == memory["id"]
    why = one_document(run("why", memory["id"], "--json"))
    assert why["entries"][0]["memory"]["id"] == memory["id"] and why["entries"][0]["depth"] == 0

    context = one_document(run("context", "when does Grace deploy?", "--ns", ns, "--json"))
    assert memory["id"] in context["memory_ids"] and isinstance(context["tokens"], int)

    restored = one_document(run("restore", memory["id"], "--json"))
    assert restored["restored_ids"] == []  # it was not archived

    forgot = one_document(run("forget", memory["id"], "--reason", "test", "--json"))
    assert forgot["forgotten_ids"] == [memory["id"]]
    assert one_document(run("list", "--ns", ns, "--status", "forgotten", "--json"))["memories"][0]["status"] == "forgotten"


def test_list_all_is_one_document_and_jsonl_is_one_memory_per_line(
    run: Run, hub: Stack, ns: str, capsys: pytest.CaptureFixture[str]
) -> None:
    written = hub.client.write([memory_input(ns, f"Rack {i} sits in row {i + 10} of hall B") for i in range(5)])
    ids = {r.memory.id for r in written.results}

    every = one_document(run("list", "--ns", ns, "--page-size", "2", "--all", "--json"))
    assert {m["id"] for m in every["memories"]} == ids and every["next_page_token"] == ""

    first = one_document(run("list", "--ns", ns, "--page-size", "2", "--json"))
    assert len(first["memories"]) == 2 and first["next_page_token"]  # the way on, inside the one document

    lines = json_lines(run("list", "--ns", ns, "--page-size", "2", "--all", "--jsonl"))
    assert {m["id"] for m in lines} == ids and all(m["kind"] == "episodic" for m in lines)

    assert "choose one" in refused(hub, capsys, "list", "--ns", ns, "--json", "--jsonl")


def test_admin_session_log_and_token_commands(run: Run, hub: Stack, ns: str, tmp_path: Path) -> None:
    hub.client.write([memory_input(f"{ns}/a", "The VPN gateway restarts nightly at 02:00")])
    searched = hub.client.search("VPN gateway", [ns]).search_id

    audit = one_document(run("audit", "--ns", ns, "--limit", "5", "--json"))
    assert audit["entries"] and all(e["decision"] in {"allow", "deny"} for e in audit["entries"])
    assert all(isinstance(e["id"], int) for e in audit["entries"])
    assert all(e["decision"] in {"allow", "deny"} for e in json_lines(run("audit", "--ns", ns, "--limit", "5", "--jsonl")))
    by_policy = one_document(run("audit", "--ns", ns, "--policy", "tests-open", "--json"))["entries"]
    assert by_policy and all("tests-open" in e["policy_ids"] for e in by_policy)
    assert one_document(run("audit", "--ns", ns, "--policy", "no-such-policy", "--json"))["entries"] == []

    names = one_document(run("admin", "namespaces", "--under", ns, "--json"))["namespaces"]
    assert f"{ns}/a" in names
    assert {"namespace": f"{ns}/a"} in json_lines(run("admin", "namespaces", "--under", ns, "--jsonl"))
    assert one_document(run("admin", "policy", "--json"))["version"]
    reloaded = one_document(run("admin", "policy", "--reload", "--json"))  # was: a text line, then the document
    assert reloaded["changed"] in (True, False) and reloaded["policy"]["version"]
    limits = one_document(run("admin", "limits", "--ns", f"{ns}/a", "--json"))
    assert limits["namespace"]["memories"] == 1  # an int64 count: a number

    # The log is written in the background (memhub/retrieval_log/writer.py): wait for the search above, the newest,
    # so that both reads below see the same entries (once it was flushed between them, and they differed).
    deadline = time.monotonic() + 30
    while [e["search_id"] for e in one_document(run("retrieval-log", "--limit", "1", "--json"))["entries"]] != [searched]:
        assert time.monotonic() < deadline, "the search never reached the retrieval log"
        time.sleep(0.1)
    logged = one_document(run("retrieval-log", "--limit", "3", "--json"))["entries"]
    assert logged and all(isinstance(e["namespace_count"], int) for e in logged)
    assert json_lines(run("retrieval-log", "--limit", "2", "--jsonl"))[0]["search_id"] == logged[0]["search_id"]

    put = one_document(run("session", "put", ns, "task-1", "plan", '{"step": 3}', "--json"))
    assert put["entry"]["value"] == {"step": 3} and put["entry"]["version"] >= 1 and put["replayed"] is False
    run("session", "put", ns, "task-1", "step/1", '"claimed"')
    assert one_document(run("session", "get", ns, "task-1", "plan", "--json"))["value"] == {"step": 3}
    listed = one_document(run("session", "list", ns, "task-1", "--page-size", "1", "--all", "--json"))
    assert [e["key"] for e in listed["entries"]] == ["plan", "step/1"]
    assert [e["key"] for e in json_lines(run("session", "list", ns, "task-1", "--all", "--page-size", "1", "--jsonl"))] == [
        "plan",
        "step/1",
    ]
    assert one_document(run("session", "delete", ns, "task-1", "--all-keys", "--json")) == {"deleted": 2}

    secret = str(hub.hub.config.auth.hs256_secret_file)
    issued = one_document(run("token", "issue", "--agent", "json-test", "--secret-file", secret, "--json", hub_flag=False))
    assert set(issued) == {"token", "token_id", "expires_at"}
    revoked = one_document(run("token", "revoke", issued["token_id"], "--reason", "test", "--json"))
    assert revoked == {"token_id": issued["token_id"], "revoked": True}


def test_consolidate_and_import(run: Run, hub: Stack, ns: str, tmp_path: Path) -> None:
    hub.client.write(
        [
            memory_input(ns, "The staging database was restored from Sunday's backup"),
            memory_input(ns, "After the restore the staging login worked again"),
        ]
    )
    dry = one_document(run("consolidate", "--ns", ns, "--dry-run", "--json"))
    assert dry["dry_run"] is True and isinstance(dry["sources_selected"], int)

    lines = tmp_path / "memories.jsonl"
    lines.write_text(json.dumps({"namespace": ns, "content": "Invoices are sent on the first working day"}) + "\n")
    summary = one_document(run("import", str(lines), "--json"))
    assert summary["lines"] == 1 and summary["stored"] == 1


def test_watch_json_needs_count_and_prints_one_document(
    run: Run, hub: Stack, ns: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert "--jsonl" in refused(hub, capsys, "watch", "--ns", ns, "--json")  # a stream without an end: no one document

    stop = threading.Event()

    def keep_writing() -> None:  # until the watch has subscribed and seen one
        while not stop.wait(0.5):
            hub.client.write([memory_input(ns, f"Meeting room {uuid.uuid4().hex[:6]} is booked")])

    writer = threading.Thread(target=keep_writing, daemon=True)
    writer.start()
    try:
        watched = one_document(run("watch", "--ns", ns, "--count", "1", "--json"))
    finally:
        stop.set()
        writer.join()
    (change,) = watched["changes"]
    assert change["change"] == "written" and change["memory"]["namespace"] == ns and watched["cursor"]
