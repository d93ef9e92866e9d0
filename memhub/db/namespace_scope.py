"""The namespaces a policy scope allows, found by Postgres (the predicate from memhub/policy/scope.py as SQL).

Conditions on a namespace's position (``resource in``, the owner of an
agents/<id> subtree, the first segment) become prefix conditions on the
name, which the pattern index on namespaces.name answers without reading
other agents' namespaces; the rest (like patterns, != on attributes) is
evaluated on the rows the prefix conditions leave.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from sqlalchemy import Connection, Select, and_, case, false, func, not_, or_, select, true
from sqlalchemy.sql.elements import ColumnElement

from memhub.db.memory_rows import subtree_condition
from memhub.db.schema import namespaces
from memhub.policy.scope import WILDCARD, AllOf, AnyOf, Const, Equals, Like, Not, Predicate, Within

_NAME = namespaces.c.name


def _attribute(attr: str) -> ColumnElement[str]:
    if attr == "path":
        return _NAME
    root = func.split_part(_NAME, "/", 1)
    if attr == "root":
        return root
    # owner: the second segment under agents/, else "" (memhub/policy/entities.py)
    return case((and_(root == "agents", func.strpos(_NAME, "/") > 0), func.split_part(_NAME, "/", 2)), else_="")


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def condition(p: Predicate) -> ColumnElement[bool]:
    """SQL for ``p`` over namespaces.name; never NULL (every attribute is a non-null string)."""
    if isinstance(p, Const):
        return true() if p.value else false()
    if isinstance(p, Within):
        return subtree_condition(_NAME, [p.root])
    if isinstance(p, Equals):
        if p.other is not None:
            return _attribute(p.attr) == _attribute(p.other)
        value = p.value or ""
        if p.attr == "owner" and value and "/" not in value:
            return subtree_condition(_NAME, [f"agents/{value}"])  # an index-friendly prefix
        if p.attr == "root" and value and "/" not in value:
            return subtree_condition(_NAME, [value])
        if p.attr in ("owner", "root") and "/" in value:
            return false()  # a segment never holds "/"
        return _attribute(p.attr) == value
    if isinstance(p, Like):
        pattern = "".join("%" if part is WILDCARD else _escape(part) for part in p.pattern)
        return _attribute(p.attr).like(pattern, escape="\\")
    if isinstance(p, Not):
        return not_(condition(p.arg))
    if isinstance(p, AllOf):
        return and_(*(condition(q) for q in p.parts))
    if isinstance(p, AnyOf):
        return or_(*(condition(q) for q in p.parts))
    raise TypeError(f"not a scope predicate: {p!r}")


def namespaces_in_scope(conn: Connection, roots: Sequence[str], scope: Predicate | None) -> list[str]:
    """Existing namespaces at or below ``roots`` (all, when empty) that ``scope`` allows (all, when None), by name."""
    return list(conn.execute(_statement(tuple(roots), scope)).scalars())


@functools.lru_cache(maxsize=1024)
def _statement(roots: tuple[str, ...], scope: Predicate | None) -> Select[tuple[str]]:
    # Every search asks this of its caller's scope: building the statement took half of the step's Python time
    # (py-spy, 16 clients). Scopes are frozen values, and a fleet has a few per agent and policy version; the
    # statement holds its values as bound parameters, so a cached one runs as a fresh one would.
    query = select(_NAME).order_by(_NAME)
    if roots:
        query = query.where(subtree_condition(_NAME, list(roots)))
    if scope is not None:
        query = query.where(condition(scope))
    return query
