"""MemhubStore: LangGraph's long-term memory store (``langgraph.store.base.BaseStore``) on a memhub hub.

    store = MemhubStore("127.0.0.1:50051", token=agent_token, root="apps/support")
    graph = builder.compile(store=store)          # nodes get it as `store` / runtime.store

Each store acts as one agent: its token decides what it may read and write, every call is checked against the
hub's policies and audited, and two agents' stores over the same root see what each may see. Items are semantic
memories (memhub/integrations/langgraph/naming.py); ``search(query=...)`` is memhub recall (hybrid dense + BM25,
re-checked against the policies), filtered by value afterwards.

Where memhub's semantics differ from LangGraph's (docs/integrations/langgraph.md, "Semantics"): a put keeps the
previous value as history (superseded, not erased) and a delete leaves a tombstone; a TTL runs from the put and is
not refreshed by reads; the hub redacts secrets in values before storing them; ``index`` on a put is ignored
(memhub indexes every item's whole JSON).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Iterable
from typing import Any

from langgraph.store.base import BaseStore, GetOp, ListNamespacesOp, Op, PutOp, Result, SearchOp

from memhub.aio import AsyncMemhubClient
from memhub.client import MemhubClient
from memhub.client_env import address_from_env, token_from_env
from memhub.core.namespaces import validate_namespace
from memhub.errors import InvalidArgument
from memhub.integrations.langgraph.plans import Plan, StorePlans, adrive, drive


class MemhubStore(BaseStore):
    """A LangGraph store whose items are one agent's memories on a memhub hub.

    ``root``: the memhub namespace the store's namespace tuples live under (the agent needs read and write there).
    ``wait_indexed``: a put answers once the item is searchable (LangGraph's stores are read-your-writes).
    ``force``: store items the hub's write filter would drop (needs the write_unfiltered right).
    ``scan_limit``: the most items one query-less search, key look-up or list_namespaces reads before failing.
    """

    supports_ttl = True

    def __init__(
        self,
        address: str,
        *,
        token: str,
        root: str,
        wait_indexed: bool = True,
        force: bool = False,
        scan_limit: int = 10_000,
        timeout_s: float = 30.0,
    ) -> None:
        try:
            validate_namespace(root, "root")
        except InvalidArgument as exc:
            raise ValueError(str(exc)) from None
        if scan_limit < 1:
            raise ValueError(f"scan_limit is {scan_limit}; it must be at least 1")
        self._address, self._token, self._timeout = address, token, timeout_s
        self._plans = StorePlans(root, wait_indexed=wait_indexed, force=force, scan_limit=scan_limit)
        self._client = MemhubClient(address, token=token, timeout_s=timeout_s)
        # grpc.aio binds a channel to the event loop it was made on: one async client per loop that uses the store.
        self._async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncMemhubClient] = weakref.WeakKeyDictionary()

    @classmethod
    def from_env(cls, root: str, **options: Any) -> MemhubStore:
        """A store acting as the agent whose token MEMHUB_TOKEN_FILE / MEMHUB_TOKEN hold, on MEMHUB_ADDRESS's hub."""
        return cls(address_from_env(), token=token_from_env(), root=root, **options)

    @property
    def root(self) -> str:
        return self._plans.root

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [drive(self._plan(op), self._client) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        client = self._async_client()
        # In order: a put followed by a get of the same key in one batch reads the put.
        return [await adrive(self._plan(op), client) for op in ops]

    def close(self) -> None:
        """Close the synchronous channel (the async ones close with `aclose`)."""
        self._client.close()

    async def aclose(self) -> None:
        self._client.close()
        for client in list(self._async_clients.values()):
            await client.close()
        self._async_clients.clear()

    def _async_client(self) -> AsyncMemhubClient:
        loop = asyncio.get_running_loop()
        client = self._async_clients.get(loop)
        if client is None:
            client = self._async_clients[loop] = AsyncMemhubClient(self._address, token=self._token, timeout_s=self._timeout)
        return client

    def _plan(self, op: Op) -> Plan[Result]:
        if isinstance(op, GetOp):
            return self._plans.get(op)
        if isinstance(op, PutOp):
            return self._plans.put(op)
        if isinstance(op, SearchOp):
            return self._plans.search(op)
        if isinstance(op, ListNamespacesOp):
            return self._plans.list_namespaces(op)
        raise TypeError(f"unknown store operation {op!r}")
