"""The hub's CPU by thread, from /proc: which of its threads (the embedder's, the RPC workers', the event loop's, the
search pool's) spends a phase's CPU.

A hub started by ``memhub serve`` names its threads in the kernel (memhub/thread_names.py); a pool's workers
("rpc_0", "rpc_1", ...) are summed under one name ("rpc"). Threads that ended during the phase are not counted,
so the groups can sum to a little less than the process's own CPU (``StackCPU``'s "hub").
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from loadgen import cpu_per

_TICKS = os.sysconf("SC_CLK_TCK")
_NUMBERED = re.compile(r"[-_]\d+$")


def group_of(kernel_name: str) -> str:
    """The thread group a kernel thread name belongs to: the name without a worker number at its end."""
    return _NUMBERED.sub("", kernel_name.strip()) or kernel_name.strip()


class HubThreadCPU:
    """CPU seconds (user + system) of each thread group of the hub processes ``pids``, summed over them (``memhub
    serve --processes N`` runs N alike)."""

    def __init__(self, pids: list[int]) -> None:
        self._task_dirs = [Path(f"/proc/{pid}/task") for pid in pids]

    def seconds(self) -> dict[str, float]:
        out: dict[str, float] = {}
        tasks = []
        for task_dir in self._task_dirs:
            try:
                tasks += list(task_dir.iterdir())
            except OSError:  # not Linux, or the hub has stopped
                continue
        for task in tasks:
            try:
                stat = (task / "stat").read_text()
            except OSError:  # the thread ended meanwhile
                continue
            # "tid (comm) state ...": comm may hold spaces and parentheses, so split at the last ")".
            comm = stat[stat.index("(") + 1 : stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2 :].split()
            group = group_of(comm)
            out[group] = out.get(group, 0.0) + (int(fields[11]) + int(fields[12])) / _TICKS
        return out


def by_thread(before: dict[str, float], after: dict[str, float], count: int, top: int = 6) -> str:
    """Milliseconds of CPU per item (search, memory) of the ``top`` busiest thread groups, the rest summed."""
    per = sorted(cpu_per(before, after, count).items(), key=lambda kv: -kv[1])
    shown = [f"{name} {ms:.2f}" for name, ms in per[:top] if ms >= 0.005]
    rest = sum(ms for _, ms in per[top:])
    return ", ".join(shown + ([f"others {rest:.2f}"] if rest >= 0.005 else []))
