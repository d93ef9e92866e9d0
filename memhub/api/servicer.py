"""MemoryService over gRPC: thin methods that convert, delegate and convert back."""

from __future__ import annotations

import asyncio
import dataclasses
from concurrent.futures import Executor

from memhub.api import convert, convert_consolidate, convert_context, convert_lineage, convert_retrieval_log, convert_search
from memhub.api.identity import current_caller
from memhub.api.search_slots import one_of_the_searches
from memhub.api.status import blocking_rpc
from memhub.core import history_paging
from memhub.core import validation as v
from memhub.core.consolidation import Consolidator
from memhub.core.context_recall import assemble_context
from memhub.errors import FailedPrecondition, InvalidArgument
from memhub.service import MemoryService
from memhub.v1 import memory_pb2 as pb
from memhub.v1 import memory_pb2_grpc as pb_grpc


class MemoryServicer(pb_grpc.MemoryServiceServicer):
    def __init__(
        self, service: MemoryService, pool: Executor, search_slots: int, consolidator: Consolidator | None = None
    ) -> None:
        self._service = service
        self._consolidator = consolidator
        self.pool = pool  # where the method bodies run (memhub/api/status.py)
        self.search_slots = asyncio.Semaphore(search_slots)  # searches running at once (memhub/api/search_slots.py)

    @blocking_rpc
    def WriteMemories(self, request: pb.WriteMemoriesRequest, context: None) -> pb.WriteMemoriesResponse:
        request_id = v.request_id(request.request_id, "request_id")
        caller = dataclasses.replace(current_caller(), request_id=request_id or "")
        items = convert.write_request(request)
        result = self._service.write(
            caller,
            items,
            session_id=v.session_id(request.session_id, "session_id"),
            request_id=request_id,
            request_hash=convert.request_hash(request),
            wait_indexed=request.wait_indexed,
            force=request.force,
        )
        # A write deduplicated into an existing memory shows that memory: its citations too are the writer's view.
        shown = self._service.readable_links(caller, [o.memory for o in result.results if o.memory is not None])
        by_id = {m.id: m for m in shown}
        outcomes = [dataclasses.replace(o, memory=by_id[o.memory.id]) if o.memory is not None else o for o in result.results]
        return pb.WriteMemoriesResponse(
            results=[convert.write_result(o) for o in outcomes],
            indexed=result.indexed,
            replayed=result.replayed,
        )

    @one_of_the_searches
    @blocking_rpc
    def SearchMemories(self, request: pb.SearchMemoriesRequest, context: None) -> pb.SearchMemoriesResponse:
        caller = current_caller()
        result = self._service.search(caller, convert.search_query(request))
        shown = self._service.readable_links(caller, [m for h in result.hits for m in (h.memory, *h.before, *h.after)])
        by_id = {m.id: m for m in shown}
        hits = [
            dataclasses.replace(
                h,
                memory=by_id[h.memory.id],
                before=tuple(by_id[m.id] for m in h.before),
                after=tuple(by_id[m.id] for m in h.after),
            )
            for h in result.hits
        ]
        return pb.SearchMemoriesResponse(
            hits=[convert_search.search_hit(h) for h in hits],
            degraded=bool(result.degraded),
            degraded_reason=result.degraded,
            truncated=result.truncated,
            search_id=result.search_id,
        )

    @blocking_rpc
    def GetMemory(self, request: pb.GetMemoryRequest, context: None) -> pb.Memory:
        caller = current_caller()
        record = self._service.get(caller, v.memory_id(request.id, "id"))
        return convert.memory(self._service.readable_links(caller, [record])[0])

    @blocking_rpc
    def ListMemories(self, request: pb.ListMemoriesRequest, context: None) -> pb.ListMemoriesResponse:
        caller = current_caller()
        page = self._service.list(caller, convert.list_query(request))
        memories = tuple(self._service.readable_links(caller, page.memories))
        return convert.list_page(dataclasses.replace(page, memories=memories))

    @blocking_rpc
    def ForgetMemories(self, request: pb.ForgetMemoriesRequest, context: None) -> pb.ForgetMemoriesResponse:
        request_id = v.request_id(request.request_id, "request_id")
        caller = dataclasses.replace(current_caller(), request_id=request_id or "")
        result = self._service.forget(
            caller,
            convert.forget_request(request),
            request_id=request_id,
            request_hash=convert.request_hash(request),
        )
        return pb.ForgetMemoriesResponse(forgotten_ids=result.ids, replayed=result.replayed, versions=result.versions)

    @one_of_the_searches
    @blocking_rpc
    def AssembleContext(self, request: pb.AssembleContextRequest, context: None) -> pb.AssembleContextResponse:
        caller = current_caller()
        result = assemble_context(self._service, caller, convert_context.context_request(request))
        return convert_context.context_response(result)

    @blocking_rpc
    def GetMemoryHistory(self, request: pb.GetMemoryHistoryRequest, context: None) -> pb.GetMemoryHistoryResponse:
        want = history_paging.paging_of(request.limit, request.page_size, request.page_token)
        if want is not None:  # the whole chain, a page at a time (memhub/core/history_paging.py)
            caller = current_caller()
            subject, versions, token = self._service.history_page(caller, v.memory_id(request.id, "id"), want)
            versions = self._service.readable_links(caller, versions)
            return pb.GetMemoryHistoryResponse(
                subject_key=subject, versions=[convert.memory(m) for m in versions], next_page_token=token
            )
        limit = request.limit or 50
        if not 1 <= limit <= 200:
            raise InvalidArgument("limit", f"is {request.limit}; use 1 to 200 (0 means 50)")
        caller = current_caller()
        subject, versions, truncated = self._service.history(caller, v.memory_id(request.id, "id"), limit)
        versions = self._service.readable_links(caller, versions)
        return pb.GetMemoryHistoryResponse(
            subject_key=subject, versions=[convert.memory(m) for m in versions], truncated=truncated
        )

    @blocking_rpc
    def GetMemoryLineage(self, request: pb.GetMemoryLineageRequest, context: None) -> pb.GetMemoryLineageResponse:
        query = convert_lineage.lineage_query(request)
        found = self._service.lineage(
            current_caller(), query.id, roots=query.roots, max_depth=query.max_depth, max_entries=query.max_entries
        )
        return convert_lineage.lineage_response(found)

    @blocking_rpc
    def RestoreMemories(self, request: pb.RestoreMemoriesRequest, context: None) -> pb.RestoreMemoriesResponse:
        if not request.ids:
            raise InvalidArgument("ids", "name 1 to 1000 archived memories to restore")
        v.bounded(len(request.ids), "ids", v.MAX_FORGET_IDS, "ids")
        ids = list(dict.fromkeys(v.memory_id(mid, f"ids[{i}]") for i, mid in enumerate(request.ids)))
        return pb.RestoreMemoriesResponse(restored_ids=self._service.restore(current_caller(), ids))

    @blocking_rpc
    def ConsolidateMemories(self, request: pb.ConsolidateMemoriesRequest, context: None) -> pb.ConsolidateMemoriesResponse:
        caller = current_caller()
        if self._consolidator is None:
            raise FailedPrecondition("this hub was started without consolidation")
        result = self._consolidator.consolidate(caller, convert_consolidate.consolidation_request(request))
        return convert_consolidate.consolidation_response(result)

    @blocking_rpc
    def MarkUsed(self, request: pb.MarkUsedRequest, context: None) -> pb.MarkUsedResponse:
        marked = self._service.mark_used(current_caller(), convert_retrieval_log.use_marks(request))
        return pb.MarkUsedResponse(counted=marked.counted, already_marked=marked.already_marked)

    @blocking_rpc
    def ListRetrievalLog(self, request: pb.ListRetrievalLogRequest, context: None) -> pb.ListRetrievalLogResponse:
        page = self._service.retrieval_log(current_caller(), convert_retrieval_log.log_query(request))
        return convert_retrieval_log.log_page(page)
