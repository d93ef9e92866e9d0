"""Reading and validating a policy directory.

Which files are loaded (the selection rule)
-------------------------------------------
A policy directory holds exactly one schema, `schema.cedarschema` (Cedar
schema format) or `schema.cedarschema.json` (Cedar JSON schema format), and
policy files ending in `.cedar`.

- `files=None` (the default): every `*.cedar` file directly in the directory,
  in name order. Subdirectories (`examples/`, `tests/`) are never scanned.
- `files=[...]` (`MEMHUB_POLICY_FILES=default.cedar,examples/fleet.cedar`):
  exactly the listed files, paths relative to the directory (absolute paths
  are taken as they are), in the listed order, and nothing else; each must
  exist and end in `.cedar`, none may be listed twice. List `default.cedar`
  too if you want it: nothing is added implicitly.

No policy file at all is an error (a typo in the directory would otherwise
deny everything without a word).

What a valid policy set is
--------------------------
- every file parses; templates (`?principal` / `?resource` slots) are refused;
- every policy carries `@id("...")`: 1-128 characters of letters, digits and
  `. _ - : /`, starting with a letter or digit, unique across all loaded
  files. These ids are what decisions and the audit log report;
- every policy validates against the schema (unknown entity types, actions
  or attributes, type errors);
- the schema declares the entity model the hub builds (see
  `policies/schema.cedarschema`) and the hub's actions: `admin` on `Hub`,
  the memory actions on `Namespace`.

Every error names the file, and the policy (its @id, or its position and
line when it has none); all errors are collected, not just the first.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import cedarpy

from memhub.policy.entities import entities_json
from memhub.policy.model import (
    AGENT_TYPE,
    HUB_TYPE,
    HUB_UID,
    NAMESPACE_TYPE,
    POLICY_ID_PATTERN,
    POLICY_SUFFIX,
    REQUIRED_ACTIONS,
    SCHEMA_FILE,
    SCHEMA_JSON_FILE,
    PolicyError,
    PolicyInfo,
    PolicySources,
)

# --------------------------------------------------------------------------- reading


def read_sources(directory: Path | str, files: Sequence[str] | None = None) -> PolicySources:
    """Read the schema and the selected policy files (see the module docstring); hash them into a version."""
    directory = Path(directory)
    errors: list[str] = []
    if not directory.is_dir():
        raise PolicyError([f"{directory}: not a directory"], source=str(directory))

    schema_candidates = [n for n in (SCHEMA_FILE, SCHEMA_JSON_FILE) if (directory / n).is_file()]
    schema_file, schema_text = "", ""
    if not schema_candidates:
        errors.append(f"no schema: expected {SCHEMA_FILE} (or {SCHEMA_JSON_FILE}) in {directory}")
    elif len(schema_candidates) > 1:
        errors.append(f"both {SCHEMA_FILE} and {SCHEMA_JSON_FILE} exist in {directory}: keep one")
    else:
        schema_file = schema_candidates[0]
        schema_text = _read_text(directory / schema_file, schema_file, errors)

    if files is None:
        names = sorted(p.name for p in directory.iterdir() if p.is_file() and p.name.endswith(POLICY_SUFFIX))
    else:
        names = []
        for raw in files:
            name = raw.strip()
            if not name:
                continue
            if not name.endswith(POLICY_SUFFIX):
                errors.append(f"{name}: policy files must end in {POLICY_SUFFIX}")
            elif name in names:
                errors.append(f"{name}: listed twice")
            else:
                names.append(name)
    policy_files: list[tuple[str, str]] = []
    for name in names:
        path = Path(name) if Path(name).is_absolute() else directory / name
        if not path.is_file():
            errors.append(f"{name}: no such policy file in {directory}")
            continue
        policy_files.append((name, _read_text(path, name, errors)))
    if not names and not errors:
        errors.append(f"no policy files: no *{POLICY_SUFFIX} file in {directory}" if files is None else "no policy files listed")
    if errors:
        raise PolicyError(errors, source=str(directory))

    return PolicySources(
        directory=directory,
        schema_file=schema_file,
        schema_text=schema_text,
        policy_files=tuple(policy_files),
        version=_version(schema_file, schema_text, policy_files),
    )


def _read_text(path: Path, name: str, errors: list[str]) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        errors.append(f"{name}: not UTF-8 ({exc.reason} at byte {exc.start})")
    except OSError as exc:
        errors.append(f"{name}: cannot read ({exc.strerror or exc})")
    return ""


def _version(schema_file: str, schema_text: str, policy_files: Iterable[tuple[str, str]]) -> str:
    """sha256 over every (name, text), length-framed so no two different sets hash alike."""
    h = hashlib.sha256()
    for name, text in [(schema_file, schema_text), *policy_files]:
        data = text.encode("utf-8")
        h.update(f"{name}\n{len(data)}\n".encode())
        h.update(data)
    return h.hexdigest()


# --------------------------------------------------------------------------- checking


def _split_statements(text: str) -> list[tuple[int, str]]:
    """Split Cedar policy text at top-level ';' (outside strings and // comments).

    Returns (line of the statement's first token, statement text) for each
    statement, including an unterminated trailing one. Used only to attach line
    numbers to errors: cedarpy's messages carry none.
    """
    out: list[tuple[int, str]] = []
    line, start, start_line = 1, 0, 0
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                i += 1
            elif c == '"':
                in_string = False
            elif c == "\n":
                line += 1
        elif c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        elif c == "\n":
            line += 1
        elif c == ";":
            out.append((start_line, text[start : i + 1]))
            start, start_line = i + 1, 0
        elif not c.isspace():
            if c == '"':
                in_string = True
            if start_line == 0:
                start_line = line
        i += 1
    if start_line:
        out.append((start_line, text[start:]))
    return out


def _locate_parse_errors(name: str, text: str, whole_error: str) -> list[str]:
    found = []
    for line, stmt in _split_statements(text):
        try:
            cedarpy.PolicySet.from_str(stmt)
        except ValueError as exc:
            found.append(f"{name}:{line}: cannot parse: {exc}")
    return found or [f"{name}: cannot parse: {whole_error}"]


def _policy_order(pid: str) -> tuple[int, str]:
    m = re.fullmatch(r"policy(\d+)", pid)
    return (int(m.group(1)) if m else 1 << 30, pid)


@dataclass
class _Checked:
    infos: list[PolicyInfo]
    est: dict[str, dict]  # @id -> Cedar JSON (EST) of the policy


def _check_file(name: str, text: str, schema: cedarpy.Schema, errors: list[str]) -> _Checked:
    checked = _Checked([], {})
    try:
        parsed = cedarpy.PolicySet.from_str(text)
    except ValueError as exc:
        errors.extend(_locate_parse_errors(name, text, str(exc)))
        return checked
    pst = parsed.to_pst()
    statements = _split_statements(text)
    order = sorted([*pst.static_policies, *pst.templates], key=_policy_order)
    lines = {pid: statements[k][0] for k, pid in enumerate(order)} if len(order) == len(statements) else {}

    def where(pid: str, annotated: str | None = None) -> str:
        at = f"line {lines[pid]}" if pid in lines else f"policy #{_policy_order(pid)[0] + 1}"
        return f"{name}: policy {annotated!r} ({at})" if annotated else f"{name}: policy at {at}"

    for pid in pst.templates:
        errors.append(
            f"{where(pid, pst.templates[pid].annotations.get('id'))}: is a template "
            "(?principal/?resource slots); templates are not supported, write a static policy"
        )

    ids: dict[str, str] = {}  # positional id -> @id
    for pid in sorted(pst.static_policies, key=_policy_order):
        annotated = pst.static_policies[pid].annotations.get("id")
        if annotated is None:
            errors.append(f'{where(pid)}: has no @id("...") annotation; every policy needs a stable id')
        elif not POLICY_ID_PATTERN.fullmatch(annotated):
            errors.append(
                f"{where(pid, annotated)}: @id must be 1-128 characters of letters, digits and "
                "'._:/-', starting with a letter or digit"
            )
        else:
            ids[pid] = annotated
            checked.infos.append(PolicyInfo(annotated, pst.static_policies[pid].effect, name, lines.get(pid, 0)))

    try:
        validation = cedarpy.validate_policies(text, schema).errors
    except ValueError as exc:  # not expected once the text parsed; reported rather than raised
        errors.append(f"{name}: cannot validate against the schema: {exc}")
        validation = []
    for err in validation:
        pid = err.policy_id
        message = re.sub(r"^for policy `[^`]*`, ", "", err.error)
        annotated = ids.get(pid)
        if annotated is None and pid in pst.static_policies:
            annotated = pst.static_policies[pid].annotations.get("id")
        errors.append(f"{where(pid, annotated) if pid else name}: {message}")

    est = json.loads(cedarpy.policies_to_json_str(text))
    for pid, body in est.get("staticPolicies", {}).items():
        if pid in ids:
            checked.est[ids[pid]] = body
    return checked


def _parse_schema(name: str, text: str) -> cedarpy.Schema:
    try:
        if name.endswith(".json"):
            return cedarpy.Schema.from_json_str(text)
        return cedarpy.Schema.from_str(text)
    except ValueError as exc:
        raise PolicyError([f"{name}: {exc}"]) from None


def _probe_schema(schema: cedarpy.Schema, schema_file: str) -> tuple[cedarpy.Entities, dict[str, frozenset[str]]]:
    """Build the base entity handle (Hub + the schema's actions) and learn which resource type each action takes.

    Also checks, once, that the entities the hub builds conform to the schema
    (so a schema that, say, adds a required Namespace attribute is refused at
    load instead of making every policy error at request time).
    """
    try:
        base = cedarpy.Entities.from_json_str(json.dumps([{"uid": HUB_UID, "attrs": {}, "parents": []}]), schema)
    except ValueError as exc:
        raise PolicyError([f"{schema_file}: the schema must declare entity type {HUB_TYPE}: {exc}"]) from None
    action_ids = sorted(e["uid"]["id"] for e in json.loads(str(base)) if e["uid"]["type"] == "Action")

    sample = entities_json("probe-agent", ("probe-group",), ["agents/probe-agent/notes"])
    errors: list[str] = []
    try:
        probe = base.with_added_json_str(sample, schema)
    except ValueError as exc:
        raise PolicyError([f"{schema_file}: the entities memhub builds do not conform to the schema: {exc}"]) from None

    everything = cedarpy.PolicySet.from_str("permit (principal, action, resource);")
    agent = {"type": AGENT_TYPE, "id": "probe-agent"}
    resources = {NAMESPACE_TYPE: {"type": NAMESPACE_TYPE, "id": "agents/probe-agent/notes"}, HUB_TYPE: HUB_UID}
    actions: dict[str, frozenset[str]] = {}
    for action in action_ids:
        kinds = set()
        for kind, resource in resources.items():
            request = {"principal": agent, "action": {"type": "Action", "id": action}, "resource": resource}
            if cedarpy.is_authorized(request, everything, probe, schema=schema).allowed:
                kinds.add(kind)
        if kinds:
            actions[action] = frozenset(kinds)
    for action, kind in REQUIRED_ACTIONS.items():
        if action not in actions:
            errors.append(f"{schema_file}: must declare action {action!r} applying to principal {AGENT_TYPE} and resource {kind}")
        elif kind not in actions[action]:
            errors.append(f"{schema_file}: action {action!r} must apply to resource {kind}")
    if errors:
        raise PolicyError(errors)
    return base, actions


@dataclass(frozen=True)
class CheckedSet:
    """A policy directory that passed every check, parsed and ready for decisions."""

    schema: cedarpy.Schema
    policies: tuple[PolicyInfo, ...]
    policy_set: cedarpy.PolicySet
    base_entities: cedarpy.Entities
    actions: dict[str, frozenset[str]]


def check_sources(sources: PolicySources) -> CheckedSet:
    """Parse and validate every file against the schema; raise PolicyError listing every problem."""
    errors: list[str] = []
    schema = _parse_schema(sources.schema_file, sources.schema_text)
    infos: list[PolicyInfo] = []
    est: dict[str, dict] = {}
    first_seen: dict[str, PolicyInfo] = {}
    for name, text in sources.policy_files:
        checked = _check_file(name, text, schema, errors)
        for info in checked.infos:
            if info.id in first_seen:
                prev = first_seen[info.id]
                errors.append(
                    f"{info.file}: policy {info.id!r} (line {info.line}): duplicate @id, "
                    f"already used in {prev.file} (line {prev.line}); @ids must be unique"
                )
                continue
            first_seen[info.id] = info
            infos.append(info)
        est.update({k: v for k, v in checked.est.items() if k not in est})
    if errors:
        raise PolicyError(errors, source=str(sources.directory))
    # Re-keyed by @id, so Cedar's own decision reasons are our policy ids.
    policy_set = cedarpy.PolicySet.from_json_str(json.dumps({"staticPolicies": est, "templates": {}, "templateLinks": []}))
    base, actions = _probe_schema(schema, sources.schema_file)
    return CheckedSet(schema, tuple(infos), policy_set, base, actions)
