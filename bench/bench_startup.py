"""How long memhub's commands take to start, answer and stop, as a user meets them (issue 24).

    .venv/bin/python bench/bench_startup.py                          # this checkout's .venv
    .venv/bin/python bench/bench_startup.py --venv /other/.venv      # another installation, same measurements
    .venv/bin/python bench/bench_startup.py --only bridge            # only the bridge's figures (a hub is started)

Each figure is the median of --runs (5) runs, wall time seen from outside, with the runs' CPU time (user +
system of the process, which a quiet machine's wall time comes close to for a command that only computes):

- `memhub --help`, `memhub --version`;
- the client commands search, write, list and context, each with its call, against a hub this script starts;
- `memhub bridge` over stdio, from its start to `initialize` answered, through the real MCP SDK client (and
  `tools/list` after it: what the MCP Inspector CLI asks first; the bridge builds its tools while it answers
  `initialize`, so this includes whatever of that build is left);
- `memhub serve`, from its start to "listening" on a data directory used before, and on a new one; SIGTERM
  to exit;
- a second `memhub serve` on a data directory in use: start to refusal.

The load average is printed at the start and the end: the machine is shared, and a figure means little
without it. Compare two installations with back-to-back runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from mcp import ClientSession, StdioServerParameters, stdio_client

from memhub.auth import issue_token, load_secret

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Figure:
    name: str
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    failed: str = ""

    def line(self) -> str:
        if self.failed:
            return f"{self.name:<44} failed: {self.failed}"
        wall = f"{statistics.median(self.walls):6.3f} s"
        runs = " ".join(f"{w:.2f}" for w in self.walls)
        cpu = f"  cpu {statistics.median(self.cpus):.3f} s" if self.cpus else ""
        return f"{self.name:<44} {wall}{cpu}   (runs: {runs})"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def children_now() -> dict[int, float] | None:
    """This process's running children and the CPU seconds (user + system) each has used so far, from /proc (None
    without it). The bridge's CPU up to the moment it answered `initialize` is read this way: on a loaded machine its
    wall time says more about the other processes than about the bridge, its CPU much less so."""
    proc, me, found = Path("/proc"), os.getpid(), {}
    if not proc.is_dir():
        return None
    tick = os.sysconf("SC_CLK_TCK")
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == me:  # fields from the state on: ppid is the 2nd, utime and stime the 12th and 13th
            found[int(entry.name)] = (int(fields[11]) + int(fields[12])) / tick
    return found


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Bench:
    def __init__(self, venv: Path, runs: int, root: Path) -> None:
        self.memhub = str(venv / "bin" / "memhub")
        self.runs = runs
        self.root = root
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHUB_", "OTEL_"))}
        self.env["XDG_CONFIG_HOME"] = str(root / "config")  # serve records its address here, nowhere else
        self.figures: list[Figure] = []

    def command(self, name: str, argv: Callable[[int], list[str]], env: dict[str, str] | None = None, expect: int = 0) -> Figure:
        """Run ``memhub *argv(i)`` runs times; wall and CPU of each (another exit status than ``expect`` fails it)."""
        figure = Figure(name)
        for i in range(self.runs):
            cpu, started = children_cpu(), time.perf_counter()
            done = subprocess.run([self.memhub, *argv(i)], capture_output=True, text=True, env=env or self.env, timeout=300)
            figure.walls.append(time.perf_counter() - started)
            figure.cpus.append(children_cpu() - cpu)
            if done.returncode != expect:
                figure.failed = f"exit {done.returncode}: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
                break
        return self.add(figure)

    def add(self, figure: Figure) -> Figure:
        self.figures.append(figure)
        print(figure.line(), flush=True)
        return figure

    # -- the hub -----------------------------------------------------------------------

    def start_hub(self, data_dir: Path, port: int) -> tuple[subprocess.Popen[str], float]:
        """`memhub serve`; the process and the seconds until it printed that it listens."""
        started = time.perf_counter()
        proc = subprocess.Popen(
            [self.memhub, "serve", "--data-dir", str(data_dir), "--port", str(port), "--log-level", "warning"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=self.env,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            if "listening on" in line:
                return proc, time.perf_counter() - started
        raise RuntimeError(f"memhub serve exited with {proc.wait()} before listening (data directory {data_dir})")

    def stop_hub(self, proc: subprocess.Popen[str]) -> float:
        started = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=300)
        return time.perf_counter() - started

    def serve_figures(self) -> None:
        used = self.root / "used"
        proc, _ = self.start_hub(used, free_port())  # creates it (initdb): not timed
        self.stop_hub(proc)
        start, stop = Figure("serve: start to listening (used data dir)"), Figure("serve: SIGTERM to exit")
        for _ in range(self.runs):
            proc, took = self.start_hub(used, free_port())
            start.walls.append(took)
            time.sleep(1.0)  # let its background start-up work (index check) run, as a hub that has served does
            stop.walls.append(self.stop_hub(proc))
        self.add(start)
        self.add(stop)
        fresh = Figure("serve: start to listening (new data dir)")
        for i in range(self.runs):
            proc, took = self.start_hub(self.root / f"fresh-{i}", free_port())
            fresh.walls.append(took)
            self.stop_hub(proc)
        self.add(fresh)

    # -- with a running hub ------------------------------------------------------------

    def with_hub_figures(self, only_bridge: bool = False) -> None:
        data_dir, port = self.root / "served", free_port()
        proc, _ = self.start_hub(data_dir, port)
        try:
            address = f"127.0.0.1:{port}"
            token = issue_token(load_secret(data_dir / "jwt-secret"), agent_id="bench", groups=[], ttl=timedelta(hours=2)).token
            env = self.env | {"MEMHUB_TOKEN": token, "MEMHUB_ADDRESS": address}
            if only_bridge:
                self.bridge_figures(address, token)
                return
            self.command(
                "write (with its call)", lambda i: ["write", "agents/bench/notes", f"Deploys freeze on Fridays, note {i}"], env
            )
            self.command("search (with its call)", lambda i: ["search", "can I deploy on Friday?"], env)
            self.command("list (with its call)", lambda i: ["list", "--ns", "agents/bench"], env)
            self.command("context (with its call)", lambda i: ["context", "deploy on Friday"], env)
            self.bridge_figures(address, token)
            self.command("serve on a data dir in use: start to refusal", lambda i: self._second_serve(data_dir), expect=1)
        finally:
            self.stop_hub(proc)

    def _second_serve(self, data_dir: Path) -> list[str]:
        return ["serve", "--data-dir", str(data_dir), "--port", str(free_port()), "--log-level", "warning"]

    def bridge_figures(self, address: str, token: str) -> None:
        initialize, listing = Figure("bridge (stdio): start to initialize answered"), Figure("bridge: then tools/list")
        cpu_at_init = Figure("bridge: its CPU until initialize answered")
        for _ in range(self.runs):
            cpu = children_cpu()
            try:
                to_init, to_list, used = asyncio.run(self._bridge_once(address, token))
            except Exception as exc:  # noqa: BLE001 - reported as the figure's failure
                initialize.failed = f"{type(exc).__name__}: {exc}"
                break
            initialize.cpus.append(children_cpu() - cpu)  # the bridge's whole run: start, both calls, exit
            initialize.walls.append(to_init)
            listing.walls.append(to_list)
            if used is not None:
                cpu_at_init.walls.append(used)
        self.add(initialize)
        if listing.walls:
            self.add(listing)
        if cpu_at_init.walls:
            self.add(cpu_at_init)

    async def _bridge_once(self, address: str, token: str) -> tuple[float, float, float | None]:
        params = StdioServerParameters(
            command=self.memhub, args=["bridge", "--hub", address], env=self.env | {"MEMHUB_TOKEN": token}
        )
        before = children_now() or {}  # the hub
        with open(os.devnull, "w") as errlog:
            started = time.perf_counter()
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                initialized = time.perf_counter()
                now = children_now()
                used = None if now is None else sum(cpu for pid, cpu in now.items() if pid not in before)
                await session.list_tools()
                return initialized - started, time.perf_counter() - initialized, used


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, default=REPO / ".venv", help="the installation to measure (default: .venv)")
    parser.add_argument("--runs", type=int, default=5, help="runs per figure; the median is printed (5)")
    parser.add_argument("--only", choices=("all", "bridge"), default="all", help="all figures (default), or the bridge's")
    args = parser.parse_args()
    if not (args.venv / "bin" / "memhub").exists():
        parser.error(f"{args.venv}/bin/memhub does not exist")
    print(f"memhub startup bench: {args.venv} (median of {args.runs}; {os.cpu_count()} CPUs)")
    print(f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}")
    print(f"load average at start: {load()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="memhub-bench-startup-") as tmp:
        root = Path(tmp)
        bench = Bench(args.venv, args.runs, root)
        if args.only == "bridge":
            bench.with_hub_figures(only_bridge=True)
        else:
            bench.command("memhub --help", lambda i: ["--help"])
            bench.command("memhub --version", lambda i: ["--version"])
            bench.command("memhub bridge --help", lambda i: ["bridge", "--help"])
            bench.with_hub_figures()
            bench.serve_figures()
    print(f"load average at end: {load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
