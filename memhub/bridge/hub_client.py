"""The bridge's gRPC client: memhub/client.py's MemhubClient plus the three things a bridge needs.

- TLS to the hub. MemhubClient only opens plaintext channels; a bridge may
  run on another machine than the hub, so it can swap in a TLS channel
  (system roots, or a CA file for a private CA).
- A per-attempt deadline. MemhubClient has one fixed timeout per client;
  the bridge retries within an overall deadline, so every attempt gets the
  time that is left (hub_calls.py sets it through a context variable, which
  asyncio.to_thread carries into the worker thread).
- Listing preferences by subject key, which ListMemories supports but
  MemhubClient.list does not expose.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import grpc

from memhub.bridge.hub_options import HubTls as HubTls  # re-exported: defined there, for the settings
from memhub.bridge.hub_options import attempt_timeout as attempt_timeout  # re-exported, as HubTls
from memhub.bridge.hub_options import open_channel
from memhub.client import MemhubClient, kind_value, type_value
from memhub.v1 import memory_pb2 as pb

_Request = TypeVar("_Request")
_Response = TypeVar("_Response")


class BridgeHubClient(MemhubClient):
    """MemhubClient acting as one agent, over plaintext or TLS, with per-attempt deadlines."""

    def __init__(
        self,
        address: str,
        *,
        token: str,
        tls: HubTls | None = None,
        timeout_s: float = 30.0,
        channel: grpc.Channel | None = None,
    ) -> None:
        """`channel`: a raw channel to `address` to adopt (hub_options.open_channel, which the start-up check
        already connected), instead of opening one; it must match `tls`."""
        super().__init__(address, token=token, timeout_s=timeout_s)
        self.tls = tls is not None
        if tls is not None or channel is not None:
            # MemhubClient opened a plaintext channel (it connects lazily, so nothing was sent on it). Bind every
            # stub to the given or a TLS channel instead, wrapped the same way (client spans and W3C trace context
            # in the metadata, so the hub's spans still join the trace), with the same options.
            self._channel.close()
            self._bind(channel if channel is not None else open_channel(address, tls))

    def _call(self, method: grpc.UnaryUnaryMultiCallable[_Request, _Response], request: _Request) -> _Response:
        timeout = attempt_timeout.get()
        return method(request, timeout=self._timeout if timeout is None else timeout, metadata=self.metadata)

    def list_preferences(self, namespaces: Sequence[str], *, subject_key: str, limit: int) -> pb.ListMemoriesResponse:
        """Active semantic preference memories with exactly this subject key, newest first."""
        return self._call(
            self._stub.ListMemories,
            pb.ListMemoriesRequest(
                namespaces=list(namespaces),
                kinds=[kind_value("semantic")],
                types=[type_value("preference")],
                subject_key=subject_key,
                page_size=limit,
            ),
        )
