"""`memhub retrieval-log` as a user runs it: a real process against a real hub."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid

from conftest import Stack, eventually

from memhub.client import memory_input

HEAVY = ("sqlalchemy", "pymilvus", "pandas", "alembic", "psycopg", "onnxruntime", "mcp")
# Runs the command and reports which heavy modules it loaded (client commands must stay light).
PROBE = (
    "import json, sys\n"
    "from memhub.cli.main import main\n"
    "rc = main(sys.argv[1:])\n"
    f"print(json.dumps({{'rc': rc, 'heavy': sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))}}))\n"
)


def memhub(stack: Stack, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env["MEMHUB_TOKEN"] = token
    argv = [sys.executable, "-c", PROBE, "retrieval-log", *args, "--hub", stack.address]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)


def _result(done: subprocess.CompletedProcess[str]) -> tuple[str, dict]:
    """(what the command printed, the probe's report)."""
    lines = done.stdout.rstrip("\n").split("\n")
    return "\n".join(lines[:-1]), json.loads(lines[-1])


def test_shows_searches_what_they_returned_and_what_was_used(stack: Stack, ns: str) -> None:
    agent = f"cli-{uuid.uuid4().hex[:8]}"
    token = stack.token(agent)
    with stack.client_as(agent) as client:
        ids = [
            r.memory.id
            for r in client.write(
                [memory_input(ns, "The build cache lives on the NFS share"), memory_input(ns, "Build agents run Ubuntu 24.04")],
                wait_indexed=True,
            ).results
        ]
        reply = client.search("where is the build cache?", [ns], top_k=2)
        used = reply.hits[0].memory.id
        client.mark_used([used], search_id=reply.search_id, useful=True)
        eventually(lambda: bool(client.retrieval_log().entries), "the search is logged")

    done = memhub(stack, token, "--since", "1h")
    assert done.returncode == 0, done.stderr
    printed, probe = _result(done)
    assert probe == {"rc": 0, "heavy": []}
    lines = printed.split("\n")
    assert lines[0].endswith(f"search {reply.search_id}") and f"  {agent}  SearchMemories  query-hash " in lines[0]
    assert "2 returned; 1 used" in lines[0]
    hit_lines = {re.search(r"[0-9a-f]{8}-[0-9a-f-]{27}", line).group(0): line for line in lines[1:]}
    assert set(hit_lines) == set(ids)
    assert " useful " in hit_lines[used] and '"' in hit_lines[used]
    other = next(i for i in ids if i != used)
    assert " useful " not in hit_lines[other] and " used " not in hit_lines[other]

    as_json = memhub(stack, token, "--json", "--limit", "1")
    entries = json.loads(_result(as_json)[0])["entries"]
    assert [e["search_id"] for e in entries] == [reply.search_id]
    assert {h["memory_id"]: h.get("used", False) for h in entries[0]["hits"]} == {used: True, other: False}


def test_other_agents_entries_need_the_admin_right(stack: Stack) -> None:
    outsider = stack.token(f"outsider-{uuid.uuid4().hex[:8]}", groups=())
    done = memhub(stack, outsider, "--all")
    assert done.returncode == 0  # the probe's own exit; the command's code is in its report
    printed, probe = _result(done)
    assert probe["rc"] == 1 and "PERMISSION_DENIED" in done.stderr and "admin" in done.stderr
    quiet = memhub(stack, outsider)
    printed, probe = _result(quiet)
    assert probe["rc"] == 0 and printed == "no searches logged"
