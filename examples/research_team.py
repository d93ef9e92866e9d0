"""Two agents on one hub: a researcher records findings, a writer follows them as they arrive and drafts from them.

Start a hub with the team's policy (policies/examples/research_team.cedar) next to the default one:

    MEMHUB_POLICY_FILES=default.cedar,examples/research_team.cedar memhub serve

then, in another terminal (the hub's address and secret are found as `memhub` commands find them):

    python examples/research_team.py

Each agent has its own token (issued here with `memhub token issue` unless RESEARCHER_TOKEN and
WRITER_TOKEN are set) and its own rights: the researcher may write findings, the writer may only read
and subscribe to them, and keeps the draft. The writer never polls: it holds a SubscribeChanges stream
(memhub/client_feed.py follows it across disconnects) and redrafts whenever a finding lands, storing each
draft under one subject key so the previous one becomes history.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import grpc  # noqa: E402

from memhub import client_config  # noqa: E402
from memhub.client import MemhubClient, memory_input  # noqa: E402
from memhub.client_feed import FeedFollower  # noqa: E402
from memhub.v1 import memory_pb2 as pb  # noqa: E402

FINDINGS = [
    "The checkout latency regression started with release 2.7 on 28 November.",
    "Release 2.7 switched the session store from Redis to Postgres.",
    "Session reads in Postgres take 14 ms at p50 against 0.8 ms in Redis.",
    "Rolling the session store back to Redis on staging restored checkout latency.",
]
DRAFT_SUBJECT = "report/checkout-latency"


def issue(agent: str, group: str) -> str:
    """A token for ``agent`` in ``group``, as `memhub token issue` makes one (1 hour)."""
    proc = subprocess.run(
        [sys.executable, "-m", "memhub.cli.main", "token", "issue", "--agent", agent, "--groups", group, "--ttl", "1h"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    if proc.returncode != 0:
        raise SystemExit(f"cannot issue a token for {agent}: {proc.stderr.strip()}")
    return proc.stdout.strip()


def draft_from(findings: list[str]) -> str:
    """The writer's draft: a plain summary of every finding so far (an LLM would write prose here)."""
    lines = [f"Checkout latency: what we know so far ({len(findings)} finding{'s' if len(findings) != 1 else ''})."]
    lines += [f"{i}. {text}" for i, text in enumerate(findings, 1)]
    return "\n".join(lines)


def writer(client: MemhubClient, findings_ns: str, drafts_ns: str, expected: int, ready: threading.Event) -> str:
    """Follow the findings; after each one, store a new draft. Returns the last draft."""
    follower = FeedFollower(client, [findings_ns], changes=["written"])
    seen: list[str] = []
    draft = ""
    for message in follower:
        if message.WhichOneof("message") == "heartbeat":
            ready.set()  # subscribed: from here on nothing the researcher writes is missed
            continue
        finding = message.change.memory
        print(f"[writer]     heard from {finding.source.agent_id}: {finding.content}", flush=True)
        seen.append(finding.content)
        draft = draft_from(seen)
        client.write([memory_input(drafts_ns, draft, type="note", kind="semantic", subject_key=DRAFT_SUBJECT)])
        print(f"[writer]     stored draft {len(seen)} (cursor {follower.cursor[:12]}...)", flush=True)
        if len(seen) == expected:
            follower.close()
    return draft


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hub", default=None, help="hub address (default: MEMHUB_ADDRESS, else the one `memhub serve` recorded)")
    parser.add_argument("--pause", type=float, default=0.5, help="seconds between two findings")
    args = parser.parse_args()
    recorded = client_config.read()
    address = args.hub or os.environ.get("MEMHUB_ADDRESS") or (recorded.address if recorded else client_config.DEFAULT_ADDRESS)
    run = uuid.uuid4().hex[:8]  # each run its own namespaces: a rerun's findings are new memories, not duplicates
    findings_ns, drafts_ns = f"teams/research/findings/run-{run}", f"teams/research/drafts/run-{run}"
    researcher_token = os.environ.get("RESEARCHER_TOKEN") or issue("ada", "researchers")
    writer_token = os.environ.get("WRITER_TOKEN") or issue("wes", "writers")

    with MemhubClient(address, token=researcher_token) as ada, MemhubClient(address, token=writer_token) as wes:
        ready = threading.Event()
        result: dict[str, object] = {}

        def run_writer() -> None:
            try:
                result["draft"] = writer(wes, findings_ns, drafts_ns, len(FINDINGS), ready)
            except grpc.RpcError as exc:
                result["error"] = exc
                ready.set()

        thread = threading.Thread(target=run_writer, name="writer")
        thread.start()
        if not ready.wait(30):
            raise SystemExit(f"the writer could not subscribe to {findings_ns} at {address}")
        if "error" in result:
            raise SystemExit(_explain(result["error"]))  # type: ignore[arg-type]
        for text in FINDINGS:
            try:
                ada.write([memory_input(findings_ns, text, type="fact")])
            except grpc.RpcError as exc:
                raise SystemExit(_explain(exc)) from None
            print(f"[researcher] recorded: {text}", flush=True)
            time.sleep(args.pause)
        thread.join(120)
        if "error" in result:
            raise SystemExit(_explain(result["error"]))  # type: ignore[arg-type]
        history = wes.list([drafts_ns], statuses=["active", "superseded"], page_size=50).memories
        current = [m for m in history if m.status == pb.MEMORY_STATUS_ACTIVE]
        print(f"\nfinal draft ({len(history)} versions in {drafts_ns}, {len(history) - len(current)} superseded):")
        print(current[0].content if current else "(none)")
    return 0


def _explain(exc: grpc.RpcError) -> str:
    hint = ""
    if exc.code() == grpc.StatusCode.PERMISSION_DENIED:
        hint = " (start the hub with MEMHUB_POLICY_FILES=default.cedar,examples/research_team.cedar)"
    elif exc.code() == grpc.StatusCode.UNAVAILABLE:
        hint = " (is `memhub serve` running?)"
    return f"research_team: {exc.code().name}: {exc.details()}{hint}"


if __name__ == "__main__":
    sys.exit(main())
