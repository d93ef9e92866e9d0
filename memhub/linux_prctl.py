"""prctl(2) from Python, for what memhub asks of Linux about its own process (a thread's name, a signal when the
parent dies). Looked up in the symbols the process already has (``CDLL(None)``): no library search, which runs
``ldconfig``. Elsewhere than Linux there is none."""

from __future__ import annotations

import ctypes
import functools
import sys

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15


@functools.cache
def _prctl() -> ctypes._CFuncPtr | None:
    if not sys.platform.startswith("linux"):
        return None
    return ctypes.CDLL(None, use_errno=True).prctl


def available() -> bool:
    """Whether this platform has prctl."""
    return _prctl() is not None


def prctl(option: int, arg: int | bytes) -> bool:
    """``prctl(option, arg, 0, 0, 0)``; True when it succeeded, False when it failed or there is no prctl."""
    call = _prctl()
    if call is None:
        return False
    value = ctypes.c_char_p(arg) if isinstance(arg, bytes) else arg
    return bool(call(option, value, 0, 0, 0) == 0)
