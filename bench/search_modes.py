"""Query modes of the retrieval benchmarks: one row of an ablation each, as keyword arguments of
MemhubClient.search beyond the query, namespaces and top_k.

Shared by bench_locomo.py and bench_longmemeval.py so both tables mean the same rows.
"""

from __future__ import annotations

from typing import Any

OFF = {"neighbour_smoothing": False, "expansion": False, "rerank": False, "priors": False}
MODES: dict[str, dict[str, Any]] = {
    "dense": {"channels": ["dense"], "ranking": OFF},
    "bm25": {"channels": ["keyword"], "ranking": OFF},
    "dense+bm25": {"channels": ["dense", "keyword"], "ranking": OFF},
    "+entity": {"channels": ["dense", "keyword", "entity"], "ranking": OFF},
    "+time": {"ranking": OFF},
    "+smoothing": {"ranking": OFF | {"neighbour_smoothing": True}},
    "+expansion": {"ranking": OFF | {"expansion": True}},
    "+rerank": {"ranking": OFF | {"rerank": True}},
    "all stages": {"ranking": {"neighbour_smoothing": True, "expansion": True, "rerank": True}},
    "+priors": {"ranking": OFF | {"priors": True}},
    "hub defaults": {},
    "defaults without priors": {"ranking": {"priors": False}},
    "defaults without rerank": {"ranking": {"rerank": False}},
    "defaults without smoothing": {"ranking": {"neighbour_smoothing": False}},
    # Naming channels leaves the others out (the entity and graph channels, weighted 0 by default, are not named
    # in a "defaults without" row: a named channel counts even when the hub weighs it 0, so naming graph there
    # measured "with graph", as the round-3 LongMemEval run found).
    "defaults without graph": {"channels": ["dense", "keyword", "time", "preference"]},
    "defaults without preference": {"channels": ["dense", "keyword", "time"]},
    "defaults without time": {"channels": ["dense", "keyword", "preference"]},
    "dense+bm25+graph": {"channels": ["dense", "keyword", "graph"], "ranking": OFF},
    "defaults with graph": {"channels": ["dense", "keyword", "time", "preference", "graph"]},
    "defaults without preference or graph": {"channels": ["dense", "keyword", "time"]},
}


def choose(names: str, parser_error: Any) -> dict[str, dict[str, Any]]:  # noqa: ANN401 - argparse's error
    """The modes named (comma-separated), or a parser error naming the unknown ones."""
    wanted = [m for m in names.split(",") if m]
    unknown = [m for m in wanted if m not in MODES]
    if unknown:
        parser_error(f"unknown modes {unknown}; choose among {', '.join(MODES)}")
    return {m: MODES[m] for m in wanted}
