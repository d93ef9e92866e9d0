"""Decision tables: expected decisions, checked against a policy set (`memhub policy test FILE`).

Format: CSV with a header row naming exactly these columns (any order):

    agent,groups,action,namespace,expected,note

- agent: the agent id (required);
- groups: its groups separated by "|" (empty for none);
- action: an action the schema declares (read, write, forget, consolidate,
  subscribe, admin);
- namespace: a namespace path for memory actions; empty for hub-wide actions
  (admin);
- expected: allow or deny;
- note: free text, printed with a failing row.

Blank lines and lines starting with "#" are skipped; a row may not span lines.
Errors name the file, the line and the column.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from memhub.errors import HubError
from memhub.policy.engine import PolicyEngine
from memhub.policy.model import HUB_TYPE, NAMESPACE_TYPE, Decision, Principal

COLUMNS = ("agent", "groups", "action", "namespace", "expected", "note")
EXPECTED = {"allow": True, "deny": False}


class TableError(Exception):
    """The table is malformed; `errors` has one line per problem, naming the line and the column."""

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(self.errors))


@dataclass(frozen=True)
class TableRow:
    line: int
    agent: str
    groups: tuple[str, ...]
    action: str
    namespace: str | None
    expected: bool
    note: str


@dataclass(frozen=True)
class RowResult:
    row: TableRow
    decision: Decision

    @property
    def passed(self) -> bool:
        return self.decision.allowed == self.row.expected


def load_table(path: Path | str, actions: Mapping[str, frozenset[str]]) -> list[TableRow]:
    """Parse a decision table; `actions` is `PolicyEngine.actions` (action -> resource types). Raises TableError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TableError([f"{path}: cannot read: {exc}"]) from None

    errors: list[str] = []
    header: list[str] | None = None
    rows: list[TableRow] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        try:
            fields = next(csv.reader([raw], strict=True))
        except csv.Error as exc:
            errors.append(f"{path}:{lineno}: not valid CSV: {exc}")
            continue
        fields = [f.strip() for f in fields]
        if header is None:
            header = fields
            missing = [c for c in COLUMNS if c not in header]
            unknown = [c for c in header if c not in COLUMNS]
            dupes = sorted({c for c in header if header.count(c) > 1})
            if missing or unknown or dupes:
                problems = (
                    ([f"missing column(s) {missing}"] if missing else [])
                    + ([f"unknown column(s) {unknown}"] if unknown else [])
                    + ([f"duplicate column(s) {dupes}"] if dupes else [])
                )
                raise TableError([f"{path}:{lineno}: header: {'; '.join(problems)}; expected {','.join(COLUMNS)}"])
            continue
        if len(fields) != len(header):
            errors.append(f"{path}:{lineno}: has {len(fields)} fields; the header has {len(header)}")
            continue
        row = dict(zip(header, fields, strict=False))
        row_errors: list[str] = []

        def bad(column: str, problem: str) -> None:
            row_errors.append(f"{path}:{lineno}: column {column!r}: {problem}")  # noqa: B023

        agent = row["agent"]
        if not agent:
            bad("agent", "is empty")
        groups = tuple(g.strip() for g in row["groups"].split("|")) if row["groups"] else ()
        if any(not g for g in groups):
            bad("groups", f"{row['groups']!r} has an empty group name (separate groups with '|')")
        action = row["action"]
        kinds = actions.get(action)
        if kinds is None:
            bad("action", f"unknown action {action!r}; the schema declares {', '.join(sorted(actions))}")
        namespace: str | None = row["namespace"] or None
        if kinds is not None:
            if namespace is None and HUB_TYPE not in kinds:
                bad("namespace", f"is empty but {action!r} applies to a namespace")
            elif namespace is not None and NAMESPACE_TYPE not in kinds:
                bad("namespace", f"must be empty: {action!r} is hub-wide")
        if namespace is not None:
            from memhub.core.namespaces import validate_namespace

            try:
                validate_namespace(namespace)
            except HubError as exc:
                bad("namespace", str(exc).removeprefix("namespace: "))
        expected = EXPECTED.get(row["expected"].lower())
        if expected is None:
            bad("expected", f"{row['expected']!r} is not allow or deny")
        if row_errors:
            errors.extend(row_errors)
            continue
        rows.append(TableRow(lineno, agent, groups, action, namespace, bool(expected), row["note"]))

    if header is None:
        errors.insert(0, f"{path}: empty table (expected a header: {','.join(COLUMNS)})")
    if errors:
        raise TableError(errors)
    return rows


def run_table(engine: PolicyEngine, rows: Sequence[TableRow]) -> list[RowResult]:
    """Decide every row (through the engine's normal decide path, cache included)."""
    return [RowResult(row, engine.decide(Principal(row.agent, row.groups), row.action, row.namespace)) for row in rows]


def describe(result: RowResult) -> str:
    """One line for a row result, e.g. for a failing row."""
    row, d = result.row, result.decision
    got = "allow" if d.allowed else "deny"
    want = "allow" if row.expected else "deny"
    if d.allowed:
        why = f"permitted by {', '.join(d.policy_ids)}"
    elif d.policy_ids:
        why = f"forbidden by {', '.join(d.policy_ids)}"
    else:
        why = "default deny: no policy permits it"
    if d.errors:
        why += f"; evaluation errors: {'; '.join(d.errors)}"
    groups = "|".join(row.groups) or "-"
    target = row.namespace if row.namespace is not None else "(hub)"
    note = f"  # {row.note}" if row.note else ""
    return f"agent={row.agent} groups={groups} {row.action} {target}: expected {want}, got {got} ({why}){note}"
