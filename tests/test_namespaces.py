"""Namespace path rules (pure functions; the gRPC-level cases are in test_bad_input.py)."""

from __future__ import annotations

import pytest

from memhub.core.namespaces import is_within, minimal_roots, validate_namespace
from memhub.errors import InvalidArgument


@pytest.mark.parametrize("good", ["a", "acme/support/tickets", "agents/planner-1", "x_y.z/0", "a/" * 7 + "b", "a" * 64])
def test_valid_namespaces_pass_unchanged(good: str) -> None:
    assert validate_namespace(good) == good


@pytest.mark.parametrize(
    "bad",
    ["", "A", "a/../b", "..", ".", "a//b", "/a", "a/", "a b", "a%2Fb", "ａ", "tеam", "a\\b", "a/.hidden", "_a", "a" * 65],
)
def test_invalid_namespaces_raise_naming_the_field(bad: str) -> None:
    with pytest.raises(InvalidArgument) as exc:
        validate_namespace(bad, "memories[3].namespace")
    assert exc.value.field == "memories[3].namespace"


def test_within_is_segment_wise() -> None:
    assert is_within("a/b", "a") and is_within("a", "a")
    assert not is_within("ab", "a") and not is_within("a", "a/b")


def test_minimal_roots_drop_covered_paths() -> None:
    assert minimal_roots(["a/b", "a", "c", "a/b/c", "c"]) == ["a", "c"]
