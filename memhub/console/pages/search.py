"""Search with the explain view: each hit's rank and contribution in every channel, its priors, its relevance
(SearchMemories with explain), over the namespaces the operator's token may read."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from memhub.console import policy_note
from memhub.console.pages.memories import KINDS, TYPES
from memhub.console.view import View, page
from memhub.core import validation

CHANNELS = ("dense", "keyword", "entity", "time", "graph", "preference")
EXPLAINED = ("dense", "keyword", "entity", "time", "graph", "preference", "expansion", "multilingual")


def routes() -> list[Route]:
    return [Route("/search", search, methods=["GET"])]


@page(
    "search", accepted=("q", "ns", "top_k", "kind", "type", "tag", "channel", "explain"), repeatable=("kind", "type", "channel")
)
async def search(view: View) -> Response:
    p = view.params
    query = p.text("q", validation.MAX_QUERY_CHARS, one_line=False)
    namespaces = p.namespaces("ns")
    top_k = p.integer("top_k", 1, validation.MAX_TOP_K, 10)
    kinds, types, channels = p.choices("kind", KINDS), p.choices("type", TYPES), p.choices("channel", CHANNELS)
    tags = p.tags("tag")
    explain = p.flag("explain") or not query  # the form opens with explain ticked
    form = {"q": query, "ns": ",".join(namespaces), "top_k": top_k, "kind": kinds, "type": types, "tag": ",".join(tags)}
    form |= {"channel": channels, "explain": explain}
    if not query:
        return view.render("search.html", form=form, result=None, kinds=KINDS, types=TYPES, channels=CHANNELS)
    result = await view.call(
        lambda c: c.search(
            query, namespaces, top_k=top_k, kinds=kinds, types=types, tags=tags, channels=channels, explain=explain
        )
    )
    rows = []
    for rank, hit in enumerate(result.hits, start=1):
        by_channel = {}
        for cr in hit.channel_ranks:
            name = _channel_name(cr.channel)
            by_channel[name] = cr
        placed = hit.placement if hit.HasField("placement") else None
        rows.append(
            {
                "rank": rank,
                "hit": hit,
                "channels": by_channel,
                "has_priors": hit.HasField("priors"),
                "placement": placed,
                "stage": _stage_name(placed.ordered_by) if placed is not None else "",
            }
        )
    return view.render(
        "search.html",
        form=form,
        result=result,
        rows=rows,
        why_empty=await policy_note.why_empty(view, namespaces) if not rows else "",
        order=order_summary([row["stage"] for row in rows]),
        explained=EXPLAINED,
        kinds=KINDS,
        types=TYPES,
        channels=CHANNELS,
    )


def _channel_name(value: int) -> str:
    from memhub.v1 import memory_pb2 as pb

    return pb.RetrievalChannel.Name(value).removeprefix("RETRIEVAL_CHANNEL_").lower()


def _stage_name(value: int) -> str:
    from memhub.v1 import memory_pb2 as pb

    return pb.RankingStage.Name(value).removeprefix("RANKING_STAGE_").lower()


STAGE_SENTENCES = {
    "rerank": "the reranker's order (its score and rank are in the rerank column)",
    "priors": "the fused score with the priors (the Score column)",
    "fusion": "the fused score of the channels (the Score column; priors off)",
    "speaker": "the speaker stage, which moved down turns of someone other than the question's subject",
}


def order_summary(stages: list[str]) -> str:
    """One sentence on what decided the order of the hits: e.g. the reranker placed hits 1-10, the priors the rest."""
    runs: list[tuple[str, int, int]] = []
    for position, stage in enumerate(stages, start=1):
        if not stage:
            return ""
        if runs and runs[-1][0] == stage:
            runs[-1] = (stage, runs[-1][1], position)
        else:
            runs.append((stage, position, position))
    parts = []
    for stage, first, last in runs:
        where = f"hit {first}" if first == last else f"hits {first}-{last}"
        parts.append(f"{where} by {STAGE_SENTENCES.get(stage, stage)}")
    return "Order: " + "; ".join(parts) + "."
