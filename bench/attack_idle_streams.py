"""Item 1 of issue 10: do idle server-reflection streams from one agent freeze everyone else's calls?

    PYTHONPATH=. .venv/bin/python bench/attack_idle_streams.py [--streams 64] [--calls 40]

Starts a hub (default policy), lets agent "victim" write and search alone,
then has agent "mallory" (an ordinary token, no groups) open --streams
server-reflection streams that never send a message, each on its own
connection, and repeats the victim's calls with a 5 s deadline while they
stay open. Prints the victim's latencies and outcomes in both phases and
what became of mallory's streams (still open, refused, closed by the hub),
also --hold seconds later.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import grpc  # noqa: E402
from attack_common import client_for, describe, fleet_policy_env, timed_calls, token_for  # noqa: E402
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc  # noqa: E402
from hubproc import running_hub  # noqa: E402

from memhub.client import memory_input  # noqa: E402


class IdleStream:
    """One reflection stream on its own connection that sends nothing until closed."""

    def __init__(self, address: str, token: str) -> None:
        self.channel = grpc.insecure_channel(address, options=[("grpc.use_local_subchannel_pool", 1)])
        self._release = threading.Event()
        stub = reflection_pb2_grpc.ServerReflectionStub(self.channel)
        self.call = stub.ServerReflectionInfo(self._requests(), metadata=(("authorization", f"Bearer {token}"),))
        self.outcome = "open"
        threading.Thread(target=self._watch, daemon=True).start()

    def _requests(self):  # noqa: ANN202 - a request iterator that never yields
        self._release.wait()
        return
        yield reflection_pb2.ServerReflectionRequest()  # pragma: no cover

    def _watch(self) -> None:
        try:
            for _ in self.call:
                pass
            self.outcome = "ended"
        except grpc.RpcError as exc:
            self.outcome = exc.code().name

    def close(self) -> None:
        self._release.set()
        self.call.cancel()
        self.channel.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=64, help="idle streams mallory opens (the old pool had 32 threads)")
    parser.add_argument("--calls", type=int, default=40, help="victim calls per phase (half writes, half searches)")
    parser.add_argument("--hold", type=float, default=0.0, help="then keep the streams this many seconds more and report")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memhub-attack-"))
    with running_hub(extra_env=fleet_policy_env(root)) as hub:
        victim = client_for(hub, "victim", timeout_s=5.0)
        ns = "agents/victim/notes"
        victim.write([memory_input(ns, f"victim note {i} about deploy windows") for i in range(20)], wait_indexed=True)
        counter = iter(range(10**6))

        def victim_call() -> None:
            i = next(counter)
            if i % 2:
                victim.search("when are deploy windows?", [ns], top_k=5)
            else:
                victim.write([memory_input(ns, f"victim call {i} at {time.time()}")])

        lat, out = timed_calls(victim_call, count=args.calls)
        print(describe("victim alone          ", lat, out))
        token = token_for(hub, "mallory")
        streams = [IdleStream(hub.address, token) for _ in range(args.streams)]
        time.sleep(2.0)  # refusals arrive at once; open streams stay open
        opened = Counter(s.outcome for s in streams)
        print(f"mallory's {args.streams} idle streams after 2 s: {dict(opened)}")
        lat, out = timed_calls(victim_call, count=args.calls)
        print(describe("victim during streams ", lat, out))
        print(f"mallory's streams after the victim's calls: {dict(Counter(s.outcome for s in streams))}")
        if args.hold:
            time.sleep(args.hold)
            print(f"mallory's streams {args.hold:g} s later: {dict(Counter(s.outcome for s in streams))}")
        for s in streams:
            s.close()
        victim.close()


if __name__ == "__main__":
    main()
