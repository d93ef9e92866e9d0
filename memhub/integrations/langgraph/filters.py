"""LangGraph's search filters and namespace match conditions, evaluated on items read from memhub.

Same semantics as LangGraph's InMemoryStore: a filter maps value fields to an exact value, a nested filter, or
operators ($eq, $ne, $gt, $gte, $lt, $lte); a match condition is a prefix or suffix of labels where "*" matches
any one label.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langgraph.store.base import MatchCondition

_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})


def check_filter(value_filter: Mapping[str, Any] | None) -> None:
    """Refuse an unknown operator before anything is read (a typo would otherwise match nothing)."""
    for field, wanted in (value_filter or {}).items():
        if isinstance(wanted, Mapping):
            unknown = [op for op in wanted if op.startswith("$") and op not in _OPERATORS]
            if unknown:
                raise ValueError(
                    f"filter on {field!r}: unknown operator {unknown[0]!r}; use one of {', '.join(sorted(_OPERATORS))}"
                )
            check_filter({k: v for k, v in wanted.items() if not k.startswith("$")})


def matches(value: Mapping[str, Any], value_filter: Mapping[str, Any] | None) -> bool:
    return all(_compare(value.get(field), wanted) for field, wanted in (value_filter or {}).items())


def _compare(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(key.startswith("$") for key in wanted):
            return all(_apply(actual, op, operand) for op, operand in wanted.items())
        return isinstance(actual, Mapping) and all(_compare(actual.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(wanted)
            and all(_compare(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


def _apply(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(actual == operand)
    if op == "$ne":
        return bool(actual != operand)
    try:
        left, right = float(actual), float(operand)
    except (TypeError, ValueError):
        return False  # a missing or non-numeric field is outside any range
    return {"$gt": left > right, "$gte": left >= right, "$lt": left < right, "$lte": left <= right}[op]


def namespace_matches(namespace: tuple[str, ...], conditions: Iterable[MatchCondition]) -> bool:
    for condition in conditions:
        path = tuple(condition.path)
        if len(namespace) < len(path):
            return False
        pairs = (
            zip(namespace, path, strict=False)
            if condition.match_type == "prefix"
            else zip(reversed(namespace), reversed(path), strict=False)
        )
        if any(p != "*" and n != p for n, p in pairs):
            return False
    return True
