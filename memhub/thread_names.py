"""The hub's threads carry their Python names into the operating system.

Python 3.11 names its threads for itself only: to ``top -H``, ``ps -L``, ``/proc/PID/task/*/comm`` and perf, every
thread of a hub is "python", so an operator cannot tell whether the embedder, the RPC workers or the event loop
spends the CPU (issue 27 asked exactly that of a hub under load, and the answer needed py-spy attached to it).
``name_threads_from_now`` makes every thread started afterwards set its kernel name from its Python name, once,
as it starts (Linux only; elsewhere nothing happens).
"""

from __future__ import annotations

import sys
import threading
from types import FrameType

from memhub import linux_prctl

KERNEL_LIMIT = 15
"""Bytes of a thread's name the kernel keeps (TASK_COMM_LEN is 16, with the terminating NUL)."""
_PREFIX = "memhub-"  # every hub thread's: dropped, since the kernel keeps so few bytes


def kernel_name(name: str) -> str:
    """``name`` as the kernel can keep it: without the hub's common prefix, and when still too long, its head and its
    last three characters around a "~" (a worker's number stays: "embed-batcher-...-dynamic-1" -> "embed-batch~c-1")."""
    short = name.removeprefix(_PREFIX) or name
    if len(short.encode()) <= KERNEL_LIMIT:
        return short
    tail = short[-3:]
    head = short.encode()[: KERNEL_LIMIT - 1 - len(tail.encode())].decode(errors="ignore")
    return f"{head}~{tail}"


def name_current_thread(name: str) -> bool:
    """Give the calling thread ``kernel_name(name)`` as its kernel name; False where that cannot be done."""
    return linux_prctl.prctl(linux_prctl.PR_SET_NAME, kernel_name(name).encode())


def _on_thread_start(frame: FrameType, event: str, arg: object) -> None:
    # Called by the first profiling event of a new thread (its run()): name it, then stop profiling it, so the
    # thread runs exactly as it would without this.
    sys.setprofile(None)
    name_current_thread(threading.current_thread().name)


def name_threads_from_now() -> None:
    """Every thread started from now on names itself in the kernel after its Python name, as it starts.

    For a process that serves (``memhub serve``): it takes ``threading.setprofile``'s hook, which a profiler
    started later in the process would replace for the threads that start after it.
    """
    if linux_prctl.available():
        threading.setprofile(_on_thread_start)
