"""AssembleContext: search with the caller's rights, then build the block (memhub/core/context_assembly.py)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from memhub.core.context_assembly import AssembledContext, assemble
from memhub.core.context_limits import (  # noqa: F401 - the bounds live apart so the bridge reads them cheaply
    DEFAULT_CANDIDATES,
    DEFAULT_PER_GROUP,
    DEFAULT_TOKEN_BUDGET,
    MAX_PER_GROUP,
    MAX_TOKEN_BUDGET,
    MIN_TOKEN_BUDGET,
)
from memhub.core.model import Caller, SearchQuery
from memhub.embedding.token_count import TOKENIZER_NAME, token_counter
from memhub.service import MemoryService


@dataclass(frozen=True)
class ContextRequest:
    query: SearchQuery
    token_budget: int = DEFAULT_TOKEN_BUDGET
    per_group: int = DEFAULT_PER_GROUP
    include_flagged: bool = False


@dataclass(frozen=True)
class ContextResult:
    context: AssembledContext
    tokenizer: str
    degraded: str
    search_id: str = ""
    """The search behind the block in the retrieval log (for MarkUsed)."""


def assemble_context(service: MemoryService, caller: Caller, request: ContextRequest) -> ContextResult:
    """The caller's search (its rights, audit and filters), assembled into one block within the budget."""
    query = request.query
    if not request.include_flagged and not query.filter.flags_any:
        # The block goes into a prompt as it is: memories that address the model stay out unless asked for.
        query = dataclasses.replace(query, filter=dataclasses.replace(query.filter, unflagged=True))
    # The block has its own budget and one line per memory: the search's size cap and session turns do not apply.
    query = dataclasses.replace(query, max_tokens=0, context_window=0)
    result = service.search(caller, query)
    assembled = assemble(
        query.text,
        [hit.memory for hit in result.hits],
        token_counter(),
        token_budget=request.token_budget,
        per_group=request.per_group,
    )
    return ContextResult(assembled, TOKENIZER_NAME, result.degraded, result.search_id)
