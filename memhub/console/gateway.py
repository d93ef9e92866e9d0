"""The console's only way to the hub: gRPC calls with the signed-in operator's token (memhub/client.py).

One channel serves every session; each call carries its session's token in
its metadata, so the hub authenticates, authorises and audits it as that
operator's own call. Calls are blocking gRPC, so they run in Starlette's
thread pool, off the event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import grpc
from starlette.concurrency import run_in_threadpool

from memhub.client import MemhubClient

T = TypeVar("T")

MAX_DETAILS_CHARS = 1000


class HubCallError(Exception):
    """A call the hub refused or could not answer: its status code and message."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details[:MAX_DETAILS_CHARS]


class HubGateway:
    def __init__(self, address: str, *, timeout_s: float = 15.0) -> None:
        self.address = address
        self._client = MemhubClient(address, timeout_s=timeout_s)

    def close(self) -> None:
        self._client.close()

    async def call(self, token: str, work: Callable[[MemhubClient], T]) -> T:
        """Run ``work`` with a client acting as ``token``'s agent; HubCallError when the hub refuses."""
        client = self._client.with_token(token)

        def run() -> T:
            try:
                return work(client)
            except grpc.RpcError as exc:
                code = exc.code() if callable(getattr(exc, "code", None)) else grpc.StatusCode.UNKNOWN
                details = exc.details() if callable(getattr(exc, "details", None)) else str(exc)
                raise HubCallError(code, details or code.name) from None

        return await run_in_threadpool(run)

    async def healthy(self, service: str) -> bool:
        return await run_in_threadpool(self._client.healthy, 3.0, service)
