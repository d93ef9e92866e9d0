"""The proto as a published API: `buf lint` passes, and `buf breaking` finds no change that would break a client
built on the newest release's proto (proto-releases/). The check must be able to fail: a breaking edit of a
copy is caught, naming the field; an additive one passes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from node_support import BUF, REPO, node_modules


def _release_baseline() -> Path:
    releases = [p for p in (REPO / "proto-releases").iterdir() if p.is_dir()]
    assert releases, "proto-releases/ holds no released proto tree"
    return max(releases, key=lambda p: tuple(int(part) for part in p.name.split(".")))


def _buf(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    node_modules()
    return subprocess.run([str(BUF), *args], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture
def edited_copy(tmp_path: Path) -> Path:
    """A workspace like the repository's (buf.yaml and proto/) to edit."""
    shutil.copy(REPO / "buf.yaml", tmp_path / "buf.yaml")
    shutil.copytree(REPO / "proto", tmp_path / "proto")
    return tmp_path


def _edit(root: Path, file: str, old: str, new: str) -> None:
    path = root / "proto" / "memhub" / "v1" / file
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} is not unique in {file}"
    path.write_text(text.replace(old, new))


def test_buf_lint_passes() -> None:
    proc = _buf("lint")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_no_breaking_change_against_the_last_release() -> None:
    proc = _buf("breaking", ".", "--against", str(_release_baseline()))
    assert proc.returncode == 0, f"the API breaks clients of {_release_baseline().name}:\n{proc.stdout}{proc.stderr}"


def test_a_changed_field_type_and_a_removed_rpc_are_breaking(edited_copy: Path) -> None:
    _edit(edited_copy, "memory.proto", "  string query = 1;", "  bytes query = 1;")
    _edit(edited_copy, "memory.proto", "  rpc MarkUsed(MarkUsedRequest) returns (MarkUsedResponse);\n", "")
    proc = _buf("breaking", ".", "--against", str(_release_baseline()), cwd=edited_copy)
    assert proc.returncode != 0
    assert 'name "query" on message "SearchMemoriesRequest" changed type from "string" to "bytes"' in proc.stdout
    assert '"MarkUsed" on service "MemoryService" was deleted' in proc.stdout


def test_an_added_field_and_message_are_not_breaking(edited_copy: Path) -> None:
    _edit(
        edited_copy,
        "memory.proto",
        "message MarkUsedResponse {",
        "message Added {\n  string note = 1;\n}\n\nmessage MarkUsedResponse {",
    )
    _edit(edited_copy, "session.proto", "message SessionStateEntry {", "message SessionStateEntry {\n  string added_note = 99;")
    proc = _buf("breaking", ".", "--against", str(_release_baseline()), cwd=edited_copy)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_lint_violation_is_reported(edited_copy: Path) -> None:
    _edit(
        edited_copy,
        "session.proto",
        "message SessionStateEntry {",
        "message session_state_entry_bad {\n  string x = 1;\n}\n\nmessage SessionStateEntry {",
    )
    proc = _buf("lint", cwd=edited_copy)
    assert proc.returncode != 0 and "session_state_entry_bad" in proc.stdout
