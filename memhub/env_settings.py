"""Numbers and flags read from MEMHUB_* environment variables, by one rule for every setting.

Unset or blank keeps the default; anything else must parse and lie within its range, or the hub refuses to start
with a message naming the variable, the value and what is accepted: a typo never silently becomes the default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from memhub.errors import StartupError

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

N = TypeVar("N", int, float)


def env_int(env: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    """A whole number from low to high (inclusive)."""
    raw = _raw(env, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise StartupError(f"{name}={raw!r} is not a whole number") from None
    return _in_range(name, raw, value, low, high, "")


def env_float(env: Mapping[str, str], name: str, default: float, low: float, high: float, unit: str = "") -> float:
    """A number from low to high (inclusive); unit (e.g. "seconds") is named in the messages."""
    raw = _raw(env, name)
    if raw is None:
        return default
    what = f"a number of {unit}" if unit else "a number"
    try:
        value = float(raw)
    except ValueError:
        raise StartupError(f"{name}={raw!r} is not {what}") from None
    return _in_range(name, raw, value, low, high, f" {unit}" if unit else "")


def env_flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    """On or off: 1/true/yes/on or 0/false/no/off, any case."""
    raw = _raw(env, name)
    if raw is None:
        return default
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise StartupError(f"{name}={raw!r} is not a flag; use 1 or 0")


def _raw(env: Mapping[str, str], name: str) -> str | None:
    raw = (env.get(name) or "").strip()
    return raw or None


def _in_range(name: str, raw: str, value: N, low: N, high: N, unit: str) -> N:
    if not low <= value <= high:  # also refuses NaN; the value is shown as it was written
        raise StartupError(f"{name}={raw} is out of range ({_show(low)} to {_show(high)}{unit})")
    return value


def _show(value: float) -> str:
    # Whole numbers as written (1000000, not 1e+06); fractions without trailing zeros.
    return str(value) if isinstance(value, int) else f"{value:g}"
