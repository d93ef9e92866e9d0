"""Cedar policy engine: loads `policies/`, validates it, answers decisions.

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

Decisions
---------
`decide()` builds the request's entities (the agent, its groups, the namespace
and its ancestors up to `Hub::"memhub"`) on top of a pre-parsed base handle
that already holds the Hub and the schema's action entities, and evaluates
against a pre-parsed `PolicySet` whose Cedar policy ids ARE the `@id`
annotations, so Cedar's own "reasons" are the ids we report. The request is
not re-validated against the schema on this path (it costs ~20 us and the
hub builds the entities itself); the shape of the entities was checked
against the schema once, at load.

Default deny. `forbid` beats `permit`. If Cedar reports an evaluation error
for any policy the decision is a deny (logged): a forbid that failed to
evaluate must not let a permit through.

Decisions are cached (LRU, bounded) per engine. An engine is immutable and
is identified by its `version` (sha256 over the schema and policy texts), so
the cache key is effectively (version, agent, groups, action, namespace):
reloading builds a new engine with an empty cache.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from json.encoder import encode_basestring_ascii
from pathlib import Path

import cedarpy

from hub.errors import FailedPrecondition

log = logging.getLogger(__name__)

SCHEMA_FILE = "schema.cedarschema"
SCHEMA_JSON_FILE = "schema.cedarschema.json"
POLICY_SUFFIX = ".cedar"
HUB_ID = "memhub"
DEFAULT_CACHE_SIZE = 65_536

NAMESPACE_TYPE = "Namespace"
HUB_TYPE = "Hub"
AGENT_TYPE = "Agent"
GROUP_TYPE = "Group"

# The hub's own actions and the resource type each must apply to (hub.core.access.Action).
REQUIRED_ACTIONS: dict[str, str] = {
    "read": NAMESPACE_TYPE,
    "write": NAMESPACE_TYPE,
    "forget": NAMESPACE_TYPE,
    "consolidate": NAMESPACE_TYPE,
    "subscribe": NAMESPACE_TYPE,
    "admin": HUB_TYPE,
}

_POLICY_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}")
_HUB_UID = {"type": HUB_TYPE, "id": HUB_ID}


class PolicyError(FailedPrecondition):
    """The policy directory cannot be loaded; `errors` lists every problem found (one line each)."""

    def __init__(self, errors: Sequence[str], *, source: str = "") -> None:
        self.errors = list(errors)
        self.source = source
        where = f" in {source}" if source else ""
        n = len(self.errors)
        head = f"invalid policies{where}: {n} error{'s' if n != 1 else ''}"
        super().__init__(head + "".join(f"\n  - {e}" for e in self.errors))


@dataclass(frozen=True)
class Principal:
    """The caller as policies see it: `Agent::"<agent_id>"` in `Group::"<g>"` for each group."""

    agent_id: str
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Decision:
    """The answer to one request.

    allowed: the request may proceed.
    policy_ids: the @ids that determined it: the permits that matched for an
        allow, the forbids that matched for an explicit deny, empty for the
        default deny (nothing permitted it).
    version: the policy version that decided.
    errors: policies Cedar could not evaluate for this request (the decision
        is then a deny); normally empty.
    """

    allowed: bool
    policy_ids: tuple[str, ...]
    version: str
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class PolicyInfo:
    """One loaded policy: its @id, effect, source file (relative to the dir) and line."""

    id: str
    effect: str
    file: str
    line: int


@dataclass(frozen=True)
class PolicySources:
    """The raw texts of a policy directory, read but not parsed; `version` identifies them."""

    directory: Path
    schema_file: str
    schema_text: str
    policy_files: tuple[tuple[str, str], ...]  # (name relative to directory, text)
    version: str


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
        elif not _POLICY_ID.fullmatch(annotated):
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


# --------------------------------------------------------------------------- entities


_HUB_JSON = json.dumps(_HUB_UID, separators=(",", ":"))


def entities_json(agent_id: str, groups: Sequence[str], namespaces: Iterable[str | None]) -> str:
    """The per-request entities, as Cedar JSON text (the Hub and the actions live in the base handle).

    Agent::"<id>" {id} in each Group::"<g>"; each Group; each namespace and each
    of its ancestors once: Namespace::"<path>" {path, root, owner} whose parent
    is the next namespace up, or Hub::"memhub" for a top-level one. Formatted
    by hand (json.dumps of nested dicts costs more than the rest of the path).
    """
    q = encode_basestring_ascii  # json.dumps(str) without the encoder set-up: a quoted, escaped JSON string
    a = q(agent_id)
    gs = [q(g) for g in groups]
    group_refs = ",".join(f'{{"type":"Group","id":{g}}}' for g in gs)
    parts = [f'{{"uid":{{"type":"Agent","id":{a}}},"attrs":{{"id":{a}}},"parents":[{group_refs}]}}']
    parts.extend(f'{{"uid":{{"type":"Group","id":{g}}},"attrs":{{}},"parents":[]}}' for g in gs)
    seen: set[str] = set()
    for namespace in namespaces:
        if namespace is None:
            continue
        segments = namespace.split("/")
        root = q(segments[0])
        owner = q(segments[1]) if len(segments) >= 2 and segments[0] == "agents" else '""'
        path = namespace
        for depth in range(len(segments), 0, -1):
            if path in seen:
                break
            seen.add(path)
            qp = q(path)
            if depth > 1:
                path = path[: path.rindex("/")]
                parent = f'{{"type":"Namespace","id":{q(path)}}}'
            else:
                parent = _HUB_JSON
            owner_json = owner if depth >= 2 else '""'
            parts.append(
                f'{{"uid":{{"type":"Namespace","id":{qp}}},'
                f'"attrs":{{"path":{qp},"root":{root},"owner":{owner_json}}},"parents":[{parent}]}}'
            )
    return "[" + ",".join(parts) + "]"


def _normalize_principal(principal: Principal) -> tuple[str, tuple[str, ...]]:
    if not isinstance(principal.agent_id, str) or not principal.agent_id:
        raise ValueError("principal.agent_id must be a non-empty string")
    if any(not isinstance(g, str) or not g for g in principal.groups):
        raise ValueError(f"principal.groups must be non-empty strings, got {principal.groups!r}")
    return principal.agent_id, tuple(sorted(set(principal.groups)))


# --------------------------------------------------------------------------- engine


class _LRU:
    """A bounded, thread-safe LRU map."""

    def __init__(self, size: int) -> None:
        self.size = max(0, size)
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key):  # noqa: ANN001, ANN201
        with self._lock:
            value = self._data.get(key)
            if value is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return value

    def put(self, key, value) -> None:  # noqa: ANN001
        if self.size == 0:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


class PolicyEngine:
    """An immutable, validated policy set with its decision cache. Build with `from_dir`."""

    def __init__(self, sources: PolicySources, *, cache_size: int = DEFAULT_CACHE_SIZE) -> None:
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

        self.version: str = sources.version
        self.loaded_at: datetime = datetime.now(timezone.utc)
        self.directory: Path = sources.directory
        self.schema_file: str = sources.schema_file
        self.files: tuple[str, ...] = tuple(name for name, _ in sources.policy_files)
        self.policies: tuple[PolicyInfo, ...] = tuple(infos)
        self._schema = schema
        self._policy_set = cedarpy.PolicySet.from_json_str(
            json.dumps({"staticPolicies": est, "templates": {}, "templateLinks": []})
        )
        self._base, self.actions = _probe_schema(schema, sources.schema_file)
        self._cache = _LRU(cache_size)

    # -- construction ---------------------------------------------------------

    @classmethod
    def from_dir(
        cls, path: Path | str, *, files: Sequence[str] | None = None, cache_size: int = DEFAULT_CACHE_SIZE
    ) -> PolicyEngine:
        """Load and validate a policy directory; raise PolicyError listing every problem."""
        return cls(read_sources(path, files), cache_size=cache_size)

    # -- introspection --------------------------------------------------------

    @property
    def policy_ids(self) -> tuple[str, ...]:
        return tuple(p.id for p in self.policies)

    @property
    def cache_info(self) -> dict[str, int]:
        return {"size": len(self._cache), "max_size": self._cache.size, "hits": self._cache.hits, "misses": self._cache.misses}

    def __repr__(self) -> str:
        return f"PolicyEngine(version={self.version[:12]}, files={list(self.files)}, policies={len(self.policies)})"

    # -- decisions ------------------------------------------------------------

    def decide(self, principal: Principal, action: str, namespace: str | None) -> Decision:
        """Decide one request. `namespace=None` addresses the Hub (hub-wide actions such as admin).

        Raises ValueError for a request the schema cannot express (unknown
        action, a namespace given to a hub-wide action or missing for a
        namespace action, empty agent id): those are caller bugs, not denials.
        """
        agent_id, groups = _normalize_principal(principal)
        key = (agent_id, groups, action, namespace)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        self._check_request(action, namespace)
        entities, request = self._request(agent_id, groups, action, [namespace])
        decision = self._to_decision(cedarpy.is_authorized(request[0], self._policy_set, entities), key)
        self._cache.put(key, decision)
        return decision

    def decide_many(self, principal: Principal, action: str, namespaces: Sequence[str | None]) -> list[Decision]:
        """Decide the same action on several namespaces (e.g. every namespace a search may span).

        Cache misses are evaluated in one Cedar batch over one entity set, which
        is cheaper than one call each. Returns decisions in input order.
        """
        agent_id, groups = _normalize_principal(principal)
        out: list[Decision | None] = []
        missing: dict[str | None, list[int]] = {}
        for i, ns in enumerate(namespaces):
            hit = self._cache.get((agent_id, groups, action, ns))
            out.append(hit)
            if hit is None:
                self._check_request(action, ns)
                missing.setdefault(ns, []).append(i)
        if missing:
            todo = list(missing)
            entities, requests = self._request(agent_id, groups, action, todo)
            results = cedarpy.is_authorized_batch(requests, self._policy_set, entities)
            for ns, result in zip(todo, results, strict=False):
                key = (agent_id, groups, action, ns)
                decision = self._to_decision(result, key)
                self._cache.put(key, decision)
                for i in missing[ns]:
                    out[i] = decision
        return out  # type: ignore[return-value]

    def _check_request(self, action: str, namespace: str | None) -> None:
        kind = self.actions.get(action)
        if kind is None:
            raise ValueError(f"unknown action {action!r}; the schema declares {sorted(self.actions)}")
        if namespace is None:
            if HUB_TYPE not in kind:
                raise ValueError(f"action {action!r} applies to a namespace; none was given")
        else:
            if NAMESPACE_TYPE not in kind:
                raise ValueError(f"action {action!r} is hub-wide; it takes no namespace (got {namespace!r})")
            from hub.core.namespaces import validate_namespace  # defence in depth; callers validate first

            validate_namespace(namespace)

    def _request(
        self, agent_id: str, groups: tuple[str, ...], action: str, namespaces: Sequence[str | None]
    ) -> tuple[cedarpy.Entities, list[dict]]:
        requests = []
        principal_uid = {"type": AGENT_TYPE, "id": agent_id}
        action_uid = {"type": "Action", "id": action}
        for ns in namespaces:
            if ns is None:
                resource = _HUB_UID
            else:
                resource = {"type": NAMESPACE_TYPE, "id": ns}
            requests.append({"principal": principal_uid, "action": action_uid, "resource": resource})
        return self._base.with_added_json_str(entities_json(agent_id, groups, namespaces)), requests

    def _to_decision(self, result: cedarpy.AuthzResult, key: tuple) -> Decision:
        diagnostics = result.diagnostics
        errors = tuple(str(e) for e in diagnostics.errors)
        reasons = tuple(sorted(diagnostics.reasons))
        allowed = result.allowed and not errors
        if errors:
            log.warning(
                "policy evaluation errors; denying",
                extra={"policy_version": self.version, "request": list(key), "errors": list(errors)},
            )
        return Decision(allowed=allowed, policy_ids=reasons, version=self.version, errors=errors)


def _probe_schema(schema: cedarpy.Schema, schema_file: str) -> tuple[cedarpy.Entities, dict[str, frozenset[str]]]:
    """Build the base entity handle (Hub + the schema's actions) and learn which resource type each action takes.

    Also checks, once, that the entities the hub builds conform to the schema
    (so a schema that, say, adds a required Namespace attribute is refused at
    load instead of making every policy error at request time).
    """
    try:
        base = cedarpy.Entities.from_json_str(json.dumps([{"uid": _HUB_UID, "attrs": {}, "parents": []}]), schema)
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
    resources = {NAMESPACE_TYPE: {"type": NAMESPACE_TYPE, "id": "agents/probe-agent/notes"}, HUB_TYPE: _HUB_UID}
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
