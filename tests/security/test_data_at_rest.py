"""Data at rest: what a crash may not lose (the audit of acknowledged changes), who may read the files.

Real processes: a `memhub serve` killed with SIGKILL while writers run, its
audit log read back from the real Postgres; file modes checked on the files
the real embedded stores create.
"""

from __future__ import annotations

import signal
import threading
import uuid
from pathlib import Path

import grpc
import psycopg
from conftest import create_scratch_database, drop_database, eventually

from hub.client import MemhubClient, memory_input
from security.spawned_hub import spawn_hub

WRITERS = 8
KILL_AFTER = 150


def test_every_answered_write_and_forget_has_its_audit_row_after_kill_9(tmp_path: Path, external_pg_admin_url: str) -> None:
    url = create_scratch_database(external_pg_admin_url)
    data_dir = tmp_path / "data"
    try:
        hub = spawn_hub(tmp_path, data_dir, database_url=url)
        acked: list[tuple[str, str]] = []  # (action, request_id) the hub acknowledged
        refused: list[str] = []  # request_ids the hub answered PERMISSION_DENIED
        lock = threading.Lock()
        stop = threading.Event()

        def writer(n: int) -> None:
            with MemhubClient(hub.address, token=hub.token(f"writer{n}"), timeout_s=30) as client:
                while not stop.is_set():
                    request_id = uuid.uuid4().hex
                    try:
                        reply = client.write([memory_input(f"crash/w{n}", f"note {request_id}")], request_id=request_id)
                        count = acknowledge("write", request_id)
                        if count % 5 == 0:  # some forgets too: their decisions are held the same way
                            forget_id = uuid.uuid4().hex
                            client.forget(ids=[reply.results[0].memory.id], reason="crash test", request_id=forget_id)
                            acknowledge("forget", forget_id)
                    except grpc.RpcError:
                        return  # the hub is gone

        def outsider() -> None:
            """Refused writes (no group, so the open test policy grants nothing): their denials are held too."""
            with MemhubClient(hub.address, token=hub.token("outsider", groups=()), timeout_s=30) as client:
                while not stop.is_set():
                    request_id = uuid.uuid4().hex
                    try:
                        client.write([memory_input("crash/outsider", "let me in")], request_id=request_id)
                    except grpc.RpcError as exc:
                        if exc.code() != grpc.StatusCode.PERMISSION_DENIED:
                            return  # the hub is gone
                        with lock:
                            refused.append(request_id)

        def acknowledge(action: str, request_id: str) -> int:
            with lock:
                acked.append((action, request_id))
                count = len(acked)
            if count == KILL_AFTER:
                # Killed the moment a call is acknowledged, by the thread that saw it, while the other
                # writers are mid-call: the batch writer flushes every half second, so without the fix
                # every call acknowledged since its last flush would have no audit row.
                hub.proc.send_signal(signal.SIGKILL)
            return count

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
        threads.append(threading.Thread(target=outsider))
        for t in threads:
            t.start()
        try:
            eventually(lambda: hub.proc.poll() is not None, "the hub was killed", timeout_s=600)
        finally:
            stop.set()
            for t in threads:
                t.join(60)
            hub.kill()
        with lock:
            acknowledged, denied = list(acked), list(refused)

        with psycopg.connect(url) as conn:
            rows = conn.execute(
                "SELECT action, request_id, decision FROM audit_log WHERE action IN ('write', 'forget')"
            ).fetchall()
        allowed = {(action, request_id) for action, request_id, decision in rows if decision == "allow"}
        missing = [entry for entry in acknowledged if entry not in allowed]
        assert missing == [], f"{len(missing)} of {len(acknowledged)} acknowledged calls have no audit row"
        denials = {request_id for action, request_id, decision in rows if decision == "deny" and action == "write"}
        assert denied and [r for r in denied if r not in denials] == [], "every refusal sent is in the audit log"
    finally:
        drop_database(external_pg_admin_url, url)
