"""What an index failure says to do: a call that ran past its deadline is not a missing or locked data file.

Real failures against real Milvus Lite engines: a search sent to an engine frozen with SIGSTOP (alive,
answering nothing: a real DEADLINE_EXCEEDED from gRPC), and a server address where nothing listens; and a real
gRPC call cancelled by its channel closing, as pymilvus's reconnect does.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc
import numpy as np
import pytest

from memhub.index import IndexFilter, IndexUnavailable, MilvusIndex
from memhub.index.failures import translated


def test_a_search_past_its_deadline_says_the_index_is_slow_not_missing(tmp_path: Path) -> None:
    # A frozen engine, not a deadline too short to meet: a 1 us deadline raced a fast machine's unix socket and
    # lost (a CI run got its answer in time).
    index = MilvusIndex(str(tmp_path / "slow.db"), model_id="advice-test", dimension=8, search_timeout_s=0.5)
    server = index._server  # noqa: SLF001 - the embedded engine's process, to freeze it
    assert server is not None and server._proc is not None  # noqa: SLF001
    pid = server._proc.pid  # noqa: SLF001
    try:
        index.ensure_collection()
        os.kill(pid, signal.SIGSTOP)  # alive (no restart heals it), answering nothing
        try:
            with pytest.raises(IndexUnavailable) as failure:
                index.search_dense(np.ones(8) / np.sqrt(8), IndexFilter(namespaces=("a",)), 5)
        finally:
            os.kill(pid, signal.SIGCONT)
        assert server.restarts == 0
    finally:
        index.close()
    message = str(failure.value)
    assert "did not answer in time during dense search" in message
    assert "overloaded, stuck or no longer reachable" in message and "milvus process beside the hub" in message
    assert "writable" not in message and "_InactiveRpcError" not in message


def test_a_server_where_nothing_listens_gets_the_reachability_advice() -> None:
    with socket.socket() as s:  # a port nothing listens on once it is closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(IndexUnavailable) as failure:
        MilvusIndex(f"http://127.0.0.1:{port}", model_id="advice-test", dimension=8, timeout_s=2.0).close()
    message = str(failure.value)
    assert "is running and reachable at this address" in message
    assert "did not answer in time" not in message


def test_a_call_cancelled_by_its_channel_closing_is_an_outage() -> None:
    """pymilvus reconnects after a failure by closing the old channel: a call still on it ends CANCELLED.

    A real gRPC call, cancelled by closing its channel while the server holds it, must read as the index being
    unavailable (retried, healed, reported with the reachability advice), not as a failed request.
    """
    held = threading.Event()

    def slow(request: bytes, context: grpc.ServicerContext) -> bytes:
        held.set()
        time.sleep(5)
        return request

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    handler = grpc.method_handlers_generic_handler("t.Slow", {"Call": grpc.unary_unary_rpc_method_handler(slow)})
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        call = channel.unary_unary("/t.Slow/Call")
        closer = threading.Thread(target=lambda: (held.wait(10), channel.close()))
        closer.start()
        with pytest.raises(IndexUnavailable) as failure, translated(f"http://127.0.0.1:{port}", "dense search"):
            call(b"x", timeout=10)
        closer.join()
    finally:
        server.stop(0)
    assert isinstance(failure.value.__cause__, grpc.RpcError)
    assert failure.value.__cause__.code() == grpc.StatusCode.CANCELLED
    assert "is running and reachable at this address" in str(failure.value)
