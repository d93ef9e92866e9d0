"""`memhub session put|get|list|delete` as a user runs it: a real process against a real hub (both backends)."""

from __future__ import annotations

import json
import uuid

from conftest import Stack
from test_cli import memhub

from memhub.session_state.json_text import one_line, safe_json_text


def test_put_get_list_delete_from_the_shell(stack: Stack, ns: str) -> None:
    session = f"cli-{uuid.uuid4().hex[:8]}"
    put = memhub("session", "put", ns, session, "plan", '{"step": 1, "note": "草稿"}', "--expect-version", "0", stack=stack)
    assert put.returncode == 0, put.stderr
    assert put.stdout.startswith(f"set plan in session {session} of {ns}: version ")

    got = memhub("session", "get", ns, session, "plan", stack=stack)
    assert got.returncode == 0 and got.stdout == '{"step": 1, "note": "草稿"}\n'  # the stored text, for | jq
    assert "by tester" in got.stderr
    entry = json.loads(memhub("session", "get", ns, session, "plan", "--json", stack=stack).stdout)
    assert entry["value"] == {"step": 1, "note": "草稿"} and entry["updated_by"] == "tester"

    # A stale compare-and-set: refused, the current version named, exit status 1.
    stale = memhub("session", "put", ns, session, "plan", "2", "--expect-version", "0", stack=stack)
    assert stale.returncode == 1
    assert f"ABORTED: version conflict: key 'plan' is at current version {entry['version']}" in stale.stderr
    moved = memhub("session", "put", ns, session, "plan", "v2", "--text", "--expect-version", str(entry["version"]), stack=stack)
    assert moved.returncode == 0, moved.stderr

    memhub("session", "put", ns, session, "step/1", "true", stack=stack)
    listed = memhub("session", "list", ns, session, stack=stack)
    assert listed.returncode == 0
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["plan", "step/1"]
    assert '"v2"' in listed.stdout.splitlines()[0]
    keys = json.loads(memhub("session", "list", ns, session, "--prefix", "step/", "--keys-only", "--json", stack=stack).stdout)
    assert [e["key"] for e in keys["entries"]] == ["step/1"] and "value" not in keys["entries"][0]

    bad = memhub("session", "put", ns, session, "plan", "not json", stack=stack)
    assert bad.returncode == 1 and "INVALID_ARGUMENT: value_json: is not valid JSON" in bad.stderr
    both = memhub("session", "delete", ns, session, "plan", "--all-keys", stack=stack)
    assert both.returncode == 2 and "not both" in both.stderr

    assert memhub("session", "delete", ns, session, "plan", stack=stack).stdout == "deleted plan\n"
    assert memhub("session", "delete", ns, session, "--all-keys", stack=stack).stdout.startswith(f"deleted session {session}")
    empty = memhub("session", "list", ns, session, stack=stack)
    assert empty.stdout == f"no keys in session {session} of {ns}\n"


def test_values_print_without_control_characters_and_stay_the_same_json() -> None:
    stored = '{"a": "bell\u0007? no: escaped", "b": "csi\u009b[31m", "c": "line\u2028sep"}'.replace("\u0007", "\\u0007")
    shown = safe_json_text(stored)
    assert json.loads(shown) == json.loads(stored)
    assert not any(0x7F <= ord(ch) < 0xA0 or ord(ch) in (0x2028, 0x2029) for ch in shown)
    assert safe_json_text('{\n\t"k": 1\n}') == '{\n\t"k": 1\n}'  # JSON's own whitespace is kept
    assert one_line('{\n "k": "a\u2028b",\n "z": "中"}') == '{"k":"a\\u2028b","z":"中"}'
