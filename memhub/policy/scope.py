"""Which namespaces a principal may act on, as one predicate over namespace paths (issue 10 item 3).

Deciding a search's readable namespaces one Cedar request per namespace made
its cost grow with every namespace anyone created: an agent that made 3,000
namespaces under its own prefix turned another agent's search into 3,012
decisions and audit rows. Instead, Cedar's partial evaluation is asked once
per (agent, groups, action) with the resource left unknown: what remains of
each policy ("residual") is an expression over the resource alone, e.g.
``resource in Namespace::"teams/support"`` or ``resource.owner == "alice"``.
``translate`` turns the residuals into a ``Predicate`` (permits OR-ed, minus
forbids), which the database evaluates over the namespace table
(memhub/db/namespace_scope.py): the cost depends on the policies, not on how
many namespaces exist.

Supported in residuals: boolean constants and connectives, if-then-else,
``resource in`` / ``==`` / ``is`` with entity literals (or a set of them),
``has``, the string attributes path, root and owner compared with ``==`` /
``!=`` (to literals or to each other) and matched with ``like``. Anything
else raises ``Unsupported``; the engine then falls back to deciding each
namespace (correct, but its cost grows with the namespace count again) and
logs which policy caused it.

A predicate also evaluates in Python (``matches``), with the same entity
model as memhub/policy/entities.py, so the engine can check a translation
against real Cedar decisions before trusting it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from memhub.policy.model import HUB_ID, HUB_TYPE, NAMESPACE_TYPE

ATTRIBUTES = ("path", "root", "owner")
WILDCARD = None
"""In a Like pattern: any run of characters (Cedar's unescaped ``*``)."""


class Unsupported(Exception):
    """A residual uses something the translation does not handle (the message says what)."""


def attributes_of(name: str) -> dict[str, str]:
    """The attributes Cedar sees for namespace ``name`` (memhub/policy/entities.py)."""
    segments = name.split("/")
    owner = segments[1] if len(segments) >= 2 and segments[0] == "agents" else ""
    return {"path": name, "root": segments[0], "owner": owner}


# -- predicates ---------------------------------------------------------------------------------


class Predicate:
    def matches(self, name: str) -> bool:
        return self.evaluate(attributes_of(name))

    def evaluate(self, attrs: Mapping[str, str]) -> bool:
        raise NotImplementedError


@dataclass(frozen=True)
class Const(Predicate):
    value: bool

    def evaluate(self, attrs: Mapping[str, str]) -> bool:
        return self.value


TRUE, FALSE = Const(True), Const(False)


@dataclass(frozen=True)
class Within(Predicate):
    """The namespace is ``root`` or below it (``resource in Namespace::"<root>"``)."""

    root: str

    def evaluate(self, attrs: Mapping[str, str]) -> bool:
        path = attrs["path"]
        return path == self.root or path.startswith(self.root + "/")


@dataclass(frozen=True)
class Equals(Predicate):
    """An attribute equals a string (``value``) or another attribute (``other``)."""

    attr: str
    value: str | None = None
    other: str | None = None

    def evaluate(self, attrs: Mapping[str, str]) -> bool:
        right = attrs[self.other] if self.other is not None else self.value
        return attrs[self.attr] == right


@dataclass(frozen=True)
class Like(Predicate):
    """An attribute matches a Cedar pattern: literal strings and WILDCARD (any run of characters)."""

    attr: str
    pattern: tuple[str | None, ...]

    def evaluate(self, attrs: Mapping[str, str]) -> bool:
        return _like(attrs[self.attr], self.pattern)


@dataclass(frozen=True)
class Not(Predicate):
    arg: Predicate

    def evaluate(self, attrs: Mapping[str, str]) -> bool:
        return not self.arg.evaluate(attrs)


@dataclass(frozen=True)
class AllOf(Predicate):
    parts: tuple[Predicate, ...]

    def evaluate(self, attrs: Mapping[str, str]) -> bool:
        return all(p.evaluate(attrs) for p in self.parts)


@dataclass(frozen=True)
class AnyOf(Predicate):
    parts: tuple[Predicate, ...]

    def evaluate(self, attrs: Mapping[str, str]) -> bool:
        return any(p.evaluate(attrs) for p in self.parts)


def _like(text: str, pattern: tuple[str | None, ...]) -> bool:
    """Cedar's ``like``: the whole string matches; WILDCARD matches any run (greedy with backtracking)."""
    if not pattern:
        return text == ""
    head, rest = pattern[0], pattern[1:]
    if head is WILDCARD:
        return any(_like(text[i:], rest) for i in range(len(text) + 1))
    return text.startswith(head) and _like(text[len(head) :], rest)


def negate(p: Predicate) -> Predicate:
    if isinstance(p, Const):
        return Const(not p.value)
    if isinstance(p, Not):
        return p.arg
    return Not(p)


def all_of(parts: Iterable[Predicate]) -> Predicate:
    kept: list[Predicate] = []
    for p in parts:
        if p == FALSE:
            return FALSE
        if p != TRUE:
            kept.extend(p.parts if isinstance(p, AllOf) else (p,))
    # attr == v makes attr != w (w != v) redundant: `owner != "" && owner == "alice"` is a plain prefix in SQL.
    fixed = {(q.attr, q.value) for q in kept if isinstance(q, Equals) and q.value is not None}
    kept = [
        q
        for q in kept
        if not (
            isinstance(q, Not)
            and isinstance(q.arg, Equals)
            and q.arg.value is not None
            and any(attr == q.arg.attr and value != q.arg.value for attr, value in fixed)
        )
    ]
    return TRUE if not kept else kept[0] if len(kept) == 1 else AllOf(tuple(dict.fromkeys(kept)))


def any_of(parts: Iterable[Predicate]) -> Predicate:
    kept: list[Predicate] = []
    for p in parts:
        if p == TRUE:
            return TRUE
        if p != FALSE:
            kept.extend(p.parts if isinstance(p, AnyOf) else (p,))
    return FALSE if not kept else kept[0] if len(kept) == 1 else AnyOf(tuple(dict.fromkeys(kept)))


# -- translation of Cedar residuals (JSON policy format) -------------------------------------------

# Terms an expression can stand for while it is being translated.
_RESOURCE = ("resource",)


def _term(expr: Any) -> tuple:
    """("resource",) | ("attr", name) | ("str", s) | ("bool", b) | ("entity", type, id) | ("set", [terms]) | ("pred", P)."""
    if not isinstance(expr, Mapping) or len(expr) != 1:
        raise Unsupported(f"an expression of unexpected shape: {str(expr)[:80]}")
    ((op, arg),) = expr.items()
    if op == "Value":
        return _value(arg)
    if op == "unknown" or (op == "Var" and arg == "resource"):
        if op == "unknown" and not (isinstance(arg, list) and arg and _value(arg[0].get("Value")) == ("str", "resource")):
            raise Unsupported(f"an unknown other than the resource: {str(arg)[:80]}")
        return _RESOURCE
    if op == "Set":
        return ("set", [_term(e) for e in arg])
    if op == ".":
        left = _term(arg["left"])
        if left != _RESOURCE or arg["attr"] not in ATTRIBUTES:
            raise Unsupported(f"attribute {arg.get('attr')!r} of something other than a namespace's path, root or owner")
        return ("attr", arg["attr"])
    return ("pred", _predicate_of(op, arg))


def _value(value: Any) -> tuple:
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, Mapping) and "__entity" in value:
        entity = value["__entity"]
        return ("entity", entity["type"], entity["id"])
    if isinstance(value, list):
        return ("set", [_value(v) for v in value])
    raise Unsupported(f"a value of unexpected type: {str(value)[:80]}")


def predicate(expr: Any) -> Predicate:
    """The predicate a boolean residual expression stands for."""
    term = _term(expr)
    if term[0] == "bool":
        return Const(term[1])
    if term[0] == "pred":
        return term[1]
    raise Unsupported(f"a non-boolean condition: {str(expr)[:80]}")


def _resource_in(target: tuple) -> Predicate:
    if target[0] == "set":
        return any_of(_resource_in(t) for t in target[1])
    if target[0] != "entity":
        raise Unsupported("`resource in` something that is not an entity")
    _, kind, ident = target
    if kind == NAMESPACE_TYPE:
        return Within(ident)
    if kind == HUB_TYPE:
        return TRUE if ident == HUB_ID else FALSE  # every namespace is in the one hub
    return FALSE  # namespaces are in namespaces and the hub only


def _equals(left: tuple, right: tuple) -> Predicate:
    if right == _RESOURCE or (right[0] == "attr" and left[0] == "str"):
        left, right = right, left
    if left == _RESOURCE:
        if right[0] == "entity":
            return Equals("path", right[2]) if right[1] == NAMESPACE_TYPE else FALSE
        if right == _RESOURCE:
            return TRUE
        return FALSE  # an entity never equals a string, a boolean or a set in Cedar
    if left[0] == "attr":
        if right[0] == "str":
            return Equals(left[1], value=right[1])
        if right[0] == "attr":
            return Equals(left[1], other=right[1])
        return FALSE
    if left[0] in ("str", "bool", "entity") and right[0] in ("str", "bool", "entity"):
        return Const(left == right)
    raise Unsupported("a comparison of values the translation does not know")


def _predicate_of(op: str, arg: Any) -> Predicate:
    if op == "!":
        return negate(predicate(arg["arg"]))
    if op == "&&":
        return all_of((predicate(arg["left"]), predicate(arg["right"])))
    if op == "||":
        return any_of((predicate(arg["left"]), predicate(arg["right"])))
    if op == "if-then-else":
        cond = predicate(arg["if"])
        return any_of((all_of((cond, predicate(arg["then"]))), all_of((negate(cond), predicate(arg["else"])))))
    if op in ("==", "!="):
        eq = _equals(_term(arg["left"]), _term(arg["right"]))
        return eq if op == "==" else negate(eq)
    if op == "in":
        if _term(arg["left"]) != _RESOURCE:
            raise Unsupported("`in` with something other than the resource on its left")
        return _resource_in(_term(arg["right"]))
    if op == "is":
        if _term(arg["left"]) != _RESOURCE:
            raise Unsupported("`is` with something other than the resource on its left")
        typed = TRUE if arg["entity_type"] == NAMESPACE_TYPE else FALSE
        return all_of((typed, _resource_in(_term(arg["in"])))) if "in" in arg else typed
    if op == "has":
        if _term(arg["left"]) != _RESOURCE:
            raise Unsupported("`has` on something other than the resource")
        return TRUE if arg["attr"] in ATTRIBUTES else FALSE
    if op == "like":
        left = _term(arg["left"])
        if left[0] != "attr":
            raise Unsupported("`like` on something other than a namespace attribute")
        return Like(left[1], _pattern(arg["pattern"]))
    raise Unsupported(f"the operator {op!r}")


def _pattern(parts: Any) -> tuple[str | None, ...]:
    out: list[str | None] = []
    for part in parts:
        if part == "Wildcard":
            if not out or out[-1] is not WILDCARD:
                out.append(WILDCARD)
        elif isinstance(part, Mapping) and isinstance(part.get("Literal"), str):
            if out and isinstance(out[-1], str):
                out[-1] += part["Literal"]
            else:
                out.append(part["Literal"])
        else:
            raise Unsupported(f"a like pattern element {str(part)[:40]}")
    return tuple(out)


def _scope_condition(scope: Mapping[str, Any], where: str) -> Predicate:
    """The resource part of a residual's scope (normally "All": partial evaluation moves it into the conditions)."""
    op = scope.get("op")
    if op == "All":
        return TRUE
    if where != "resource":
        raise Unsupported(f"a residual that still constrains the {where}")
    if op == "==":
        return _equals(_RESOURCE, _value(scope["entity"] if "__entity" in scope["entity"] else {"__entity": scope["entity"]}))
    if op == "in":
        entity = scope["entity"]
        return _resource_in(_value(entity if "__entity" in entity else {"__entity": entity}))
    if op == "is":
        typed = TRUE if scope.get("entity_type") == NAMESPACE_TYPE else FALSE
        if "in" in scope:
            entity = scope["in"]["entity"]
            return all_of((typed, _resource_in(_value(entity if "__entity" in entity else {"__entity": entity}))))
        return typed
    raise Unsupported(f"a resource scope {op!r}")


def policy_predicate(residual: Mapping[str, Any]) -> Predicate:
    """When a residual policy applies: its scope and every when (and no unless) condition."""
    parts = [_scope_condition(residual.get(w, {"op": "All"}), w) for w in ("principal", "action", "resource")]
    for condition in residual.get("conditions", ()):
        body = predicate(condition["body"])
        parts.append(body if condition["kind"] == "when" else negate(body))
    return all_of(parts)


PolicyPredicates = tuple[tuple[str, Predicate], ...]
"""(policy id, where it applies) for each policy of one effect whose residual is not plain false, by id."""


def split(residuals: Mapping[str, Mapping[str, Any]]) -> tuple[PolicyPredicates, PolicyPredicates]:
    """(permits, forbids): where each policy that can decide applies. What ``translate`` combines, kept per policy
    so a decision over many namespaces can name the policies that actually made it (memhub/policy/attribution.py)."""
    permits: list[tuple[str, Predicate]] = []
    forbids: list[tuple[str, Predicate]] = []
    for policy_id, residual in sorted(residuals.items()):
        applies = policy_predicate(residual)
        if applies == FALSE:
            continue
        (permits if residual.get("effect") == "permit" else forbids).append((policy_id, applies))
    return tuple(permits), tuple(forbids)


def combine(permits: PolicyPredicates, forbids: PolicyPredicates) -> Predicate:
    """Default deny; forbid beats permit: (any permit) and not (any forbid)."""
    return all_of((any_of(p for _, p in permits), negate(any_of(p for _, p in forbids))))


def translate(residuals: Mapping[str, Mapping[str, Any]]) -> tuple[Predicate, tuple[str, ...]]:
    """(allowed-namespace predicate, ids of the policies that can decide) for a set of residuals."""
    permits, forbids = split(residuals)
    return combine(permits, forbids), tuple(sorted(pid for pid, _ in (*permits, *forbids)))
