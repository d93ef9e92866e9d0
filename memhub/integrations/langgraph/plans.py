"""The store's operations, written once for the synchronous and the asyncio client.

Each operation is a generator that yields the client calls it needs (a `Call`: a method name and its
arguments) and receives their replies; `drive` runs one with a MemhubClient, `adrive` with an
AsyncMemhubClient. The two clients have the same methods with the same arguments (memhub/client_rpcs.py), so
one plan serves LangGraph's `batch` and `abatch` alike. An error a call raises is thrown into the plan at the
yield, where it may handle it.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import grpc
from langgraph.store.base import GetOp, Item, ListNamespacesOp, PutOp, SearchItem, SearchOp

from memhub.aio import AsyncMemhubClient
from memhub.client import MemhubClient, memory_input, version_conflict
from memhub.integrations.langgraph.filters import check_filter, matches, namespace_matches
from memhub.integrations.langgraph.naming import STORE_TAG, item_content, memhub_namespace, read_item, subject_key
from memhub.v1 import memory_pb2 as pb

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    """One client call: ``getattr(client, method)(*args, **kwargs)``."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)


Plan = Generator[Call, Any, T]


def drive(plan: Plan[T], client: MemhubClient) -> T:
    """Run ``plan`` with the synchronous client."""
    reply: Any = None
    error: BaseException | None = None
    while True:
        try:
            call = plan.throw(error) if error is not None else plan.send(reply)
        except StopIteration as done:
            result: T = done.value
            return result
        reply, error = None, None
        try:
            reply = getattr(client, call.method)(*call.args, **call.kwargs)
        except grpc.RpcError as exc:
            error = exc


async def adrive(plan: Plan[T], client: AsyncMemhubClient) -> T:
    """Run ``plan`` with the asyncio client."""
    reply: Any = None
    error: BaseException | None = None
    while True:
        try:
            call = plan.throw(error) if error is not None else plan.send(reply)
        except StopIteration as done:
            result: T = done.value
            return result
        reply, error = None, None
        try:
            reply = await getattr(client, call.method)(*call.args, **call.kwargs)
        except grpc.RpcError as exc:
            error = exc


def _time(stamp: Any) -> datetime:
    moment: datetime = stamp.ToDatetime(tzinfo=UTC)
    return moment


@dataclass(frozen=True)
class StorePlans:
    """The operations of a MemhubStore rooted at ``root`` (see MemhubStore for the options)."""

    root: str
    wait_indexed: bool = True
    force: bool = False
    scan_limit: int = 10_000
    page_size: int = 200

    def find(self, namespace: tuple[str, ...], key: str) -> Plan[pb.Memory | None]:
        """The active memory holding ``key`` in exactly ``namespace`` (a descendant may hold the same key)."""
        where, subject = memhub_namespace(self.root, namespace), subject_key(key)
        token, seen = "", 0
        while True:
            options = {"subject_key": subject, "tags": [STORE_TAG], "page_size": self.page_size, "page_token": token}
            page: pb.ListMemoriesResponse = yield Call("list", ([where],), options)
            for memory in page.memories:
                if memory.namespace == where:
                    return memory
            seen += len(page.memories)
            token = page.next_page_token
            if not token:
                return None
            self._within_scan_limit(seen, f"key {key!r}")

    def get(self, op: GetOp) -> Plan[Item | None]:
        memory = yield from self.find(tuple(op.namespace), op.key)
        return self._item(memory) if memory is not None else None

    def put(self, op: PutOp) -> Plan[None]:
        namespace = tuple(op.namespace)
        if op.value is None:
            yield from self.delete(namespace, op.key)
            return None
        current = yield from self.find(namespace, op.key)
        known = read_item(current) if current is not None else None
        created_at = known[3] if known is not None else datetime.now(UTC)
        content = item_content(namespace, op.key, dict(op.value), created_at)
        ttl = timedelta(minutes=op.ttl) if op.ttl else None
        memory = memory_input(
            memhub_namespace(self.root, namespace),
            content,
            type="fact",
            tags=[STORE_TAG],
            subject_key=subject_key(op.key),
            ttl=ttl,
        )
        reply: pb.WriteMemoriesResponse = yield Call(
            "write", ([memory],), {"wait_indexed": self.wait_indexed, "force": self.force}
        )
        result = reply.results[0]
        if result.filtered:
            raise ValueError(
                f"the hub's write filter dropped item {op.key!r} ({result.filter_rule}); create the store with force=True "
                "(the agent then needs the write_unfiltered right on the namespace)"
            )
        if result.redacted:
            # The hub never stores secrets as written (DESIGN.md, the write gate): the item now reads back redacted.
            log.warning("the hub redacted %s in item %r before storing it", ", ".join(result.redacted), op.key)
        return None

    def delete(self, namespace: tuple[str, ...], key: str) -> Plan[None]:
        for _ in range(5):
            current = yield from self.find(namespace, key)
            if current is None:
                return None
            try:
                yield Call(
                    "forget",
                    (),
                    {
                        "ids": [current.id],
                        "reason": "deleted through the LangGraph store",
                        "expected_versions": {current.id: current.version},
                    },
                )
                return None
            except grpc.RpcError as exc:
                if version_conflict(exc) is None:
                    raise  # only a concurrent update is worth reading again
        raise RuntimeError(f"item {key!r} kept changing while it was being deleted; try again")

    def search(self, op: SearchOp) -> Plan[list[SearchItem]]:
        check_filter(op.filter)
        prefix = tuple(op.namespace_prefix)
        where = memhub_namespace(self.root, prefix)
        wanted = op.offset + op.limit
        found: list[SearchItem] = []
        if op.query:
            # Recall ranks; the value filter applies after it, so ask for the most a search returns when filtering.
            top_k = 100 if op.filter else min(100, max(wanted, 1))
            reply: pb.SearchMemoriesResponse = yield Call("search", (op.query, [where]), {"top_k": top_k, "tags": [STORE_TAG]})
            for hit in reply.hits:
                item = self._item(hit.memory, score=hit.score)
                if item is not None and item.namespace[: len(prefix)] == prefix and matches(item.value, op.filter):
                    found.append(item)
            return found[op.offset : wanted]
        token, seen = "", 0
        while len(found) < wanted:
            page: pb.ListMemoriesResponse = yield Call(
                "list", ([where],), {"tags": [STORE_TAG], "page_size": self.page_size, "page_token": token}
            )
            for memory in page.memories:
                item = self._item(memory)
                if item is not None and matches(item.value, op.filter):
                    found.append(item)
            seen += len(page.memories)
            token = page.next_page_token
            if not token:
                break
            if len(found) < wanted:
                self._within_scan_limit(seen, "a search without a query")
        return found[op.offset : wanted]

    def list_namespaces(self, op: ListNamespacesOp) -> Plan[list[tuple[str, ...]]]:
        conditions = op.match_conditions or ()
        literal: list[str] = []  # the prefix's labels before any wildcard: only that subtree need be read
        for condition in conditions:
            if condition.match_type == "prefix":
                for label in condition.path:
                    if label == "*":
                        break
                    literal.append(label)
                break
        where = memhub_namespace(self.root, tuple(literal))
        namespaces: set[tuple[str, ...]] = set()
        token, seen = "", 0
        while True:
            page: pb.ListMemoriesResponse = yield Call(
                "list", ([where],), {"tags": [STORE_TAG], "page_size": 500, "page_token": token}
            )
            for memory in page.memories:
                known = read_item(memory)
                if known is not None and namespace_matches(known[0], conditions):
                    namespaces.add(known[0][: op.max_depth] if op.max_depth is not None else known[0])
            seen += len(page.memories)
            token = page.next_page_token
            if not token:
                break
            self._within_scan_limit(seen, "listing namespaces")
        return sorted(namespaces)[op.offset : op.offset + op.limit]

    def _item(self, memory: pb.Memory, score: float | None = None) -> SearchItem | None:
        known = read_item(memory)
        if known is None:
            return None
        namespace, key, value, created_at = known
        return SearchItem(namespace, key, value, created_at, _time(memory.created_at), score=score)

    def _within_scan_limit(self, seen: int, what: str) -> None:
        if seen >= self.scan_limit:
            raise ValueError(
                f"{what} read {seen:,} items without finishing (scan_limit={self.scan_limit:,}); narrow the namespace, "
                "give a query, or raise the store's scan_limit"
            )
