"""Cedar policy engine: answers decisions for a loaded, validated policy set (see sources.py for loading).

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

Scopes
------
`scope()` answers "which namespaces may this principal <action>?" without
naming any: Cedar's partial evaluation with the resource unknown, translated
into a predicate over namespace paths (memhub/policy/scope.py) and checked
against real decisions on the namespaces at its boundaries before it is
trusted. A search then costs the same whatever the number of namespaces.
Scopes are cached per (agent, groups, action) like decisions.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import cedarpy

from memhub.errors import InvalidArgument
from memhub.policy.entities import entities_json, normalize_principal
from memhub.policy.model import (
    AGENT_TYPE,
    DEFAULT_CACHE_SIZE,
    HUB_TYPE,
    HUB_UID,
    NAMESPACE_TYPE,
    Decision,
    PolicyInfo,
    PolicySources,
    Principal,
)
from memhub.policy.scope import PolicyPredicates, Predicate, Unsupported, combine, split
from memhub.policy.scope_probes import probe_namespaces
from memhub.policy.sources import check_sources, read_sources

SCOPE_CACHE_SIZE = 4096


@dataclass(frozen=True)
class Scope:
    """The namespaces a principal may act on, for one action."""

    predicate: Predicate | None
    """Which namespace paths are allowed; None when the policies use something the translation does not handle
    (then each namespace must be decided on its own)."""
    policy_ids: tuple[str, ...]
    """The policies that can decide for this principal and action (those whose residual is not plain false)."""
    version: str
    unsupported: str = ""
    """Why there is no predicate."""
    permits: PolicyPredicates = ()
    """Where each permit that can decide applies: what names the policies behind a decision over many namespaces."""
    forbids: PolicyPredicates = ()


log = logging.getLogger(__name__)

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
        checked = check_sources(sources)  # raises PolicyError listing every problem
        self.version: str = sources.version
        self.loaded_at: datetime = datetime.now(timezone.utc)
        self.directory: Path = sources.directory
        self.schema_file: str = sources.schema_file
        self.files: tuple[str, ...] = tuple(name for name, _ in sources.policy_files)
        self.policies: tuple[PolicyInfo, ...] = checked.policies
        self._schema = checked.schema
        self._policy_set = checked.policy_set
        self._base, self.actions = checked.base_entities, checked.actions
        self._cache = _LRU(cache_size)
        self._scopes = _LRU(SCOPE_CACHE_SIZE)
        self._warned_unsupported = False

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
        agent_id, groups = normalize_principal(principal)
        key = (agent_id, groups, action, namespace)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        self._check_request(action, namespace)
        entities, request = self._request(agent_id, groups, action, [namespace])
        decision = self._to_decision(cedarpy.is_authorized(request[0], self._policy_set, entities), key)
        self._cache.put(key, decision)
        return decision

    def decide_many(
        self, principal: Principal, action: str, namespaces: Sequence[str | None], *, cache: bool = True
    ) -> list[Decision]:
        """Decide the same action on several namespaces (e.g. every namespace a search may span).

        Cache misses are evaluated in one Cedar batch over one entity set, which
        is cheaper than one call each. Returns decisions in input order.
        ``cache=False`` neither reads nor fills the cache: for one-off reports over
        thousands of namespaces (AdminService.ExplainAccess) that must not evict
        the decisions agents' calls reuse.
        """
        agent_id, groups = normalize_principal(principal)
        out: list[Decision | None] = []
        missing: dict[str | None, list[int]] = {}
        for i, ns in enumerate(namespaces):
            hit = self._cache.get((agent_id, groups, action, ns)) if cache else None
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
                if cache:
                    self._cache.put(key, decision)
                for i in missing[ns]:
                    out[i] = decision
        return out  # type: ignore[return-value]

    def scope(self, principal: Principal, action: str) -> Scope:
        """The namespaces ``principal`` may ``action``, as a predicate (see the module docstring); cached."""
        agent_id, groups = normalize_principal(principal)
        key = (agent_id, groups, action)
        hit = self._scopes.get(key)
        if hit is not None:
            return hit
        kind = self.actions.get(action)
        if kind is None or NAMESPACE_TYPE not in kind:
            raise ValueError(f"action {action!r} is not a namespace action; the schema declares {sorted(self.actions)}")
        try:
            found = self._partial_scope(agent_id, groups, action)
        except Unsupported as exc:
            found = Scope(None, (), self.version, str(exc))
            # Once per policy version at WARNING: it is a property of the policies, not of the caller.
            level = logging.DEBUG if self._warned_unsupported else logging.WARNING
            self._warned_unsupported = True
            log.log(
                level,
                "policies cannot be reduced to namespace prefixes; deciding each namespace (searches cost more "
                "as namespaces grow): %s",
                exc,
                extra={"policy_version": self.version},
            )
        self._scopes.put(key, found)
        return found

    def _partial_scope(self, agent_id: str, groups: tuple[str, ...], action: str) -> Scope:
        entities = self._base.with_added_json_str(entities_json(agent_id, groups, []))
        request = {"principal": f"{AGENT_TYPE}::{json.dumps(agent_id)}", "action": f"Action::{json.dumps(action)}", "context": {}}
        result = cedarpy.is_authorized_partial(request, self._policy_set, entities)
        errors = result.diagnostics.errors
        if errors:
            raise Unsupported(f"partial evaluation reported errors: {'; '.join(str(e) for e in errors)[:300]}")
        residuals = result.residuals
        if not residuals:
            raise Unsupported(f"partial evaluation returned no residuals (decision {result.decision.name})")
        permits, forbids = split(residuals)
        predicate = combine(permits, forbids)
        self._verify(Principal(agent_id, groups), action, predicate, agent_id)
        ids = tuple(sorted(pid for pid, _ in (*permits, *forbids)))
        return Scope(predicate, ids, self.version, permits=permits, forbids=forbids)

    def _verify(self, principal: Principal, action: str, predicate: Predicate, agent_id: str) -> None:
        """Compare the predicate with real decisions on the namespaces at its boundaries; Unsupported if they differ."""
        probes = sorted(n for n in probe_namespaces(predicate, agent_id) if _is_namespace(n))
        decisions = self.decide_many(principal, action, probes)
        wrong = [n for n, d in zip(probes, decisions, strict=True) if d.allowed != predicate.matches(n)]
        if wrong:
            raise Unsupported(f"the translated scope disagrees with Cedar on {wrong[:3]}")

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
            from memhub.core.namespaces import validate_namespace  # defence in depth; callers validate first

            validate_namespace(namespace)

    def _request(
        self, agent_id: str, groups: tuple[str, ...], action: str, namespaces: Sequence[str | None]
    ) -> tuple[cedarpy.Entities, list[dict]]:
        requests = []
        principal_uid = {"type": AGENT_TYPE, "id": agent_id}
        action_uid = {"type": "Action", "id": action}
        for ns in namespaces:
            if ns is None:
                resource = HUB_UID
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


def _is_namespace(name: str) -> bool:
    from memhub.core.namespaces import validate_namespace  # as in _check_request: the hub's own rules

    try:
        validate_namespace(name)
    except InvalidArgument:
        return False
    return True
