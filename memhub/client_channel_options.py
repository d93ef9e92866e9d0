"""The options every gRPC channel to a hub gets, plaintext or TLS, sync or asyncio.

Apart from memhub/client_channel.py, which loads the OpenTelemetry gRPC
instrumentation, so a process can open a channel without it: the MCP
bridge's start-up check connects to the hub before the bridge answers its
client, and traces nothing. client_channel.py re-exports `channel_options`.
"""

from __future__ import annotations

from memhub import grpc_keepalive


def channel_options() -> list[tuple[str, int]]:
    """Options for every channel to a hub, plaintext or TLS."""
    return [
        # The hub keeps list and search replies under 4 MiB (gRPC's default receive limit), but a write's
        # reply echoes its memories and a batch of 100 long ones can pass that: accept what the hub may send.
        ("grpc.max_receive_message_length", 16 * 2**20),
        # Pings the hub accepts (it is started with the same contract), so it never answers too_many_pings.
        *grpc_keepalive.DEFAULT.client_options(),
        # A connection of its own per client: gRPC otherwise shares one between all channels of a process to
        # the same address, and a hub of several processes (`memhub serve --processes N`, which spreads
        # connections, not calls) would serve every client of that process from one of them.
        ("grpc.use_local_subchannel_pool", 1),
    ]
