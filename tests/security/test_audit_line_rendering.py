"""`memhub audit` prints each entry as one line: no stored character of a detail value, an agent id or a namespace
may end that line or pose as another field (issue 22, item 1: every CLI rendering)."""

from __future__ import annotations

from memhub.cli.admin_cmds import audit_line
from memhub.v1 import admin_pb2
from tests.security.rendering_support import STORABLE, header_forgery, raw_unsafe


def _entry(text: str) -> admin_pb2.AuditEntry:
    entry = admin_pb2.AuditEntry(
        agent_id="ops", action="release", namespace="teams/inbox", rpc="/memhub.v1.AdminService/ReleaseQuarantined"
    )
    entry.at.FromSeconds(1_790_000_000)
    entry.detail["reason"] = text
    entry.detail["memory_id"] = "m-1"
    return entry


def test_no_detail_character_can_break_the_line_or_stay_invisible() -> None:
    for ch in STORABLE:
        line = audit_line(_entry(f"checked{ch}2026-12-01T00:00:00  ALLOW bob"))
        assert len(line.splitlines()) == 1, f"U+{ord(ch):04X} split the audit line: {line!r}"
        assert raw_unsafe(line) == [], f"U+{ord(ch):04X} printed raw: {line!r}"


def test_a_detail_value_cannot_pose_as_another_field() -> None:
    line = audit_line(_entry(header_forgery("")))
    fields = line.split("  ")[-1]
    # The forged value is one quoted string: the only bare `memory_id=` is the real field.
    assert fields.startswith('memory_id=m-1 reason="'), line
    assert fields.count(" memory_id=") == 0 and fields.endswith('"'), line


def test_plain_values_print_as_before() -> None:
    line = audit_line(_entry("ok"))
    assert "ops" in line and "teams/inbox" in line and "memory_id=m-1 reason=ok" in line
    assert line.endswith("ReleaseQuarantined  memory_id=m-1 reason=ok")
