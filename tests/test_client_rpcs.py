"""memhub/client_rpcs.py declares each unary call once for both clients: every entry names a real RPC with the
request its builder makes and the reply it answers, and the synchronous and asyncio clients expose exactly the
same calls with the same parameters."""

from __future__ import annotations

import asyncio
import inspect
import typing

import pytest

from memhub import client_rpcs
from memhub.aio import AsyncMemhubClient
from memhub.client import MemhubClient
from memhub.v1 import memory_pb2, session_pb2

SERVICES = {
    client_rpcs.MEMORY_SERVICE: memory_pb2.DESCRIPTOR.services_by_name["MemoryService"],
    client_rpcs.SESSION_STATE_SERVICE: session_pb2.DESCRIPTOR.services_by_name["SessionStateService"],
}


@pytest.mark.parametrize("name", sorted(client_rpcs.UNARY_RPCS))
def test_each_call_builds_the_request_its_rpc_takes_and_answers_its_reply(name: str) -> None:
    rpc = client_rpcs.UNARY_RPCS[name]
    method = SERVICES[rpc.service].methods_by_name[rpc.method]
    assert not method.client_streaming and not method.server_streaming
    built = typing.get_type_hints(rpc.build)["return"]
    assert built.DESCRIPTOR.full_name == method.input_type.full_name
    assert rpc.response.DESCRIPTOR.full_name == method.output_type.full_name


def test_every_unary_rpc_of_the_two_services_has_a_call() -> None:
    declared = {(rpc.service, rpc.method) for rpc in client_rpcs.UNARY_RPCS.values()}
    assert declared == {(full, m.name) for full, service in SERVICES.items() for m in service.methods}


def test_both_clients_expose_the_same_calls_with_the_builders_parameters() -> None:
    sync = MemhubClient("127.0.0.1:1")  # channels connect lazily: nothing is sent

    async def inspect_async() -> None:
        aio = AsyncMemhubClient("127.0.0.1:1")
        try:
            for name, rpc in client_rpcs.UNARY_RPCS.items():
                blocking, awaiting = getattr(sync, name), getattr(aio, name)
                assert inspect.signature(blocking) == inspect.signature(awaiting) == rpc.signature, name
                assert blocking.__doc__ == awaiting.__doc__ == rpc.build.__doc__, name
                assert inspect.iscoroutinefunction(awaiting) and not inspect.iscoroutinefunction(blocking), name
                assert inspect.signature(blocking).return_annotation == rpc.response.__name__
        finally:
            await aio.close()

    try:
        asyncio.run(inspect_async())
    finally:
        sync.close()
    public = {n for n in dir(MemhubClient) if not n.startswith("_")}
    assert public == {n for n in dir(AsyncMemhubClient) if not n.startswith("_")}


def test_a_bad_argument_raises_before_anything_is_sent() -> None:
    async def scenario() -> None:
        async with AsyncMemhubClient("127.0.0.1:1") as aio:  # nothing listens there: a send would fail otherwise
            with pytest.raises(ValueError, match="unknown kind 'episodc'; choose one of episodic"):
                await aio.list(["team"], kinds=["episodc"])

    asyncio.run(scenario())
