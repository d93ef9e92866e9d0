"""Search throughput of one hub process against several on the same stores: what a second hub process buys.

    .venv/bin/python bench/bench_hubs.py [--memories 10000] [--hubs 2] [--rounds 2]

A hub serves searches from one Python process, and at 16 concurrent clients
the search pipeline's Python holds the GIL almost all the time (py-spy --gil
on bench_throughput's hub), so one hub uses about one core for its own work
whatever the machine has. Several hub processes on the same stores are the
deployment the compose stack and the Helm chart scale out to; this bench runs
that on one machine: one Postgres (a scratch database on the external server,
``--admin-url``), one Milvus Lite data file served over TCP as ``memhub index-server`` serves it,
N ``memhub serve`` processes sharing a JWT secret and a policy folder.

The corpus (LoCoMo turns, as bench_throughput's) is written through the first
hub. Then, alternating for ``--rounds`` rounds so that drift in the machine's
load falls on both: 16 clients all on hub 1, and 16 clients spread over the N
hubs (client i on hub i mod N, as a client-side balancer or a Kubernetes
Service spreads connections). Each phase prints searches/s, p50/p99 and the CPU
per search of the hubs, the index server and Postgres, with the load average at
the start and the end: compare the rates within one run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import sys
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import psutil
import psycopg
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_throughput import corpus  # noqa: E402
from hubproc import RunningHub, bench_policy_dir, running_hub  # noqa: E402
from loadgen import StackCPU, Timed, batched_writes, load_average, searches  # noqa: E402
from locomo import DEFAULT_PATH  # noqa: E402

from memhub.data_dir_lock import LITE_FILE_NAME  # noqa: E402
from memhub.index.lite_server import LiteServer  # noqa: E402

ADMIN_URL = os.environ.get("MEMHUB_BENCH_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
CLIENTS = 16


@contextlib.contextmanager
def scratch_database(admin_url: str) -> Iterator[str]:
    """A fresh database on the server of ``admin_url``, dropped afterwards; its URL."""
    name = f"memhub_bench_{uuid.uuid4().hex[:10]}"
    try:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        raise SystemExit(f"bench_hubs: cannot reach the Postgres at {admin_url} ({exc}); start it or pass --admin-url") from None
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def index_server(folder: Path) -> Iterator[str]:
    """One Milvus Lite engine serving a data file on a free TCP port, as `memhub index-server` runs it; its URI."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    server = LiteServer(folder / LITE_FILE_NAME, address=f"127.0.0.1:{_free_port()}")
    server.start()  # waits until the engine answers
    try:
        yield server.uri
    finally:
        server.stop()


class FleetCPU(StackCPU):
    """CPU seconds of the hub processes, the index server's Milvus Lite engine (a child of this process) and the
    Postgres server's processes (those run by the ``postgres`` user: the external server, not a hub's embedded
    one); summed as ``StackCPU`` sums its parts."""

    def __init__(self, hubs: Sequence[RunningHub]) -> None:  # several hubs, not StackCPU's one
        self._hubs = list(hubs)

    def processes(self) -> dict[str, list[psutil.Process]]:
        index = [p for p in psutil.Process().children(recursive=True) if "milvus" in p.name()]
        postgres = [p for p in psutil.process_iter(["name", "username"]) if p.info["username"] == "postgres"]
        return {"hubs": [psutil.Process(h.pid) for h in self._hubs], "index": index, "postgres": postgres}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--hubs", type=int, default=2, help="hub processes in the spread phase (2-8)")
    parser.add_argument("--rounds", type=int, default=2, help="alternations of the one-hub and the spread phase")
    parser.add_argument("--per-client", type=int, default=80, help="searches per client in each phase")
    parser.add_argument("--admin-url", default=ADMIN_URL, help="a Postgres URL allowed to create and drop a database")
    parser.add_argument("--data", type=Path, default=DEFAULT_PATH, help="LoCoMo json (texts and queries)")
    args = parser.parse_args()
    if not 2 <= args.hubs <= 8:
        parser.error("--hubs takes 2 to 8")
    if not 1 <= args.rounds <= 10 or not 1 <= args.per_client <= 10_000 or not 100 <= args.memories <= 1_000_000:
        parser.error("--rounds takes 1-10, --per-client 1-10000, --memories 100-1000000")
    started_load = load_average()
    items, questions = corpus(args.memories, args.data)
    root = Path(tempfile.mkdtemp(prefix="memhub-bench-hubs-"))
    root.chmod(0o700)
    results: list[tuple[str, Timed]] = []
    try:
        secret = root / "jwt-secret"
        secret.write_text(os.urandom(32).hex() + "\n")
        secret.chmod(0o600)
        policy = bench_policy_dir(root)
        with contextlib.ExitStack() as stack:
            database = stack.enter_context(scratch_database(args.admin_url))
            uri = stack.enter_context(index_server(root / "index"))
            env = {
                "MEMHUB_DATABASE_URL": database,
                "MEMHUB_MILVUS_URI": uri,
                "MEMHUB_JWT_SECRET_FILE": str(secret),
                "MEMHUB_POLICY_DIR": str(policy),
            }
            hubs = [stack.enter_context(running_hub(_hub_dir(root, 0), env))]
            print(f"writing {len(items)} memories through hub 1...", file=sys.stderr)
            ingest = batched_writes(hubs[0], items)
            print(f"  {ingest.searchable_per_s:.1f} memories/s searchable", file=sys.stderr)
            hubs += [stack.enter_context(running_hub(_hub_dir(root, i), env)) for i in range(1, args.hubs)]
            cpu = FleetCPU(hubs)
            searches(hubs, questions, ["bench"], CLIENTS, 5, cpu)  # warm every hub's caches and connections
            for r in range(args.rounds):
                print(f"round {r + 1} of {args.rounds}...", file=sys.stderr)
                results.append(("1 hub", searches(hubs[:1], questions, ["bench"], CLIENTS, args.per_client, cpu)))
                results.append((f"{args.hubs} hubs", searches(hubs, questions, ["bench"], CLIENTS, args.per_client, cpu)))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\nmemhub search, {CLIENTS} clients, {args.memories} memories; one Postgres (external), one Milvus Lite index server")
    print(f"at the start: {started_load}; at the end: {load_average()}")
    for name, timed in results:
        print(f"{name:8s} {timed.summary()}")
    # results alternate: (1 hub, N hubs) per round.
    ratios = [many.rate / one.rate for (_, one), (_, many) in zip(results[::2], results[1::2], strict=True)]
    print(f"{args.hubs} hubs / 1 hub, round by round: " + ", ".join(f"{r:.2f}x" for r in ratios))


def _hub_dir(root: Path, i: int) -> Path:
    path = root / f"hub{i + 1}"
    path.mkdir(mode=0o700)
    return path


if __name__ == "__main__":
    main()
