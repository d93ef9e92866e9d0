"""Item 2 of issue 10: huge repeated fields in one request, and what they do to later readers.

    PYTHONPATH=. .venv/bin/python bench/attack_oversized_requests.py [--ids 200000] [--enums 2000000]

Starts a hub (default policy). Agent "mallory" writes two memories whose
derived_from repeat one of its own memory ids --ids times each, then lists
and searches that namespace; a search of another of its namespaces carries
--enums kinds, another --enums channels. Prints each call's time and status, and the audit rows the
writes left. The attacker's channel accepts replies up to 64 MiB, so what is
measured is the hub's limit, not the client's.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import grpc  # noqa: E402
from attack_common import audit_rows, client_for, fleet_policy_env, settle_audit, token_for  # noqa: E402
from hubproc import running_hub  # noqa: E402

from memhub.client import MemhubClient, memory_input  # noqa: E402
from memhub.v1 import memory_pb2 as pb  # noqa: E402
from memhub.v1 import memory_pb2_grpc as pb_grpc  # noqa: E402


def timed(label: str, call) -> object:  # noqa: ANN001
    t0 = time.perf_counter()
    try:
        reply = call()
        status = "OK"
    except grpc.RpcError as exc:
        reply, status = None, f"{exc.code().name}: {exc.details()[:110]}"
    print(f"{label:<44} {time.perf_counter() - t0:8.2f} s  {status}")
    return reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", type=int, default=200_000, help="derived_from entries per memory")
    parser.add_argument("--enums", type=int, default=2_000_000, help="kinds (or channels) in one search")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memhub-attack-"))
    with running_hub(extra_env=fleet_policy_env(root)) as hub:
        ns, clean = "agents/mallory/big", "agents/mallory/seed"
        mallory = client_for(hub, "mallory", timeout_s=600)
        seed = mallory.write([memory_input(clean, "an ordinary memory")], wait_indexed=True).results[0].memory.id
        channel = grpc.insecure_channel(hub.address, options=[("grpc.max_receive_message_length", 64 * 2**20)])
        stub = pb_grpc.MemoryServiceStub(channel)
        md = (("authorization", f"Bearer {token_for(hub, 'mallory')}"),)
        for n in (1, 2):
            item = memory_input(ns, f"derived memory {n}")
            item.derived_from.extend([seed] * args.ids)
            timed(
                f"write with {args.ids:,} derived_from (#{n})",
                lambda item=item: stub.WriteMemories(pb.WriteMemoriesRequest(memories=[item]), metadata=md, timeout=600),
            )
        timed(
            "list the namespace (page size 50)",
            lambda: stub.ListMemories(pb.ListMemoriesRequest(namespaces=[ns]), metadata=md, timeout=600),
        )
        timed(
            "search the namespace",
            lambda: stub.SearchMemories(
                pb.SearchMemoriesRequest(query="derived memory", namespaces=[ns]), metadata=md, timeout=600
            ),
        )
        timed(
            f"search with {args.enums:,} kinds",
            lambda: stub.SearchMemories(
                pb.SearchMemoriesRequest(query="x", namespaces=[clean], kinds=[pb.MEMORY_KIND_EPISODIC] * args.enums),
                metadata=md,
                timeout=600,
            ),
        )
        timed(
            f"search with {args.enums:,} channels",
            lambda: stub.SearchMemories(
                pb.SearchMemoriesRequest(query="x", namespaces=[clean], channels=[pb.RETRIEVAL_CHANNEL_DENSE] * args.enums),
                metadata=md,
                timeout=600,
            ),
        )
        settle_audit()
        with MemhubClient(hub.address, token=hub.token, timeout_s=120) as admin:
            print(f"audit rows naming mallory: {audit_rows(admin, 'mallory'):,}")
        channel.close()
        mallory.close()


if __name__ == "__main__":
    main()
