"""Searches run at most MEMHUB_SEARCH_SLOTS at a time; the others wait their turn and are answered.

A real hub on loopback (the external Postgres, Milvus Lite) with one search slot, searched by several clients at
once (SearchMemories and AssembleContext), each search in its own trace: the Milvus calls of one search (its two
channels run side by side) never overlap another search's. An in-memory span exporter on this process's provider
sees the hub's spans (memhub.telemetry.add_span_processor, as tests/test_tracing_hub.py does).
"""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from conftest import eventually, samples_of, value
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from security.hubs import SpecialStack, special_hub

from memhub.api.search_slots import slots_for
from memhub.client import memory_input
from memhub.config import HubConfig, ServerConfig
from memhub.errors import StartupError
from memhub.metrics import MetricsConfig

SEARCHES = 6
NS = "ops"
QUESTION = "which port does the staging database listen on"
tracer = trace.get_tracer("tests.search_slots")


def _hub(folder: Path, admin_url: str, slots: int, **overrides: object) -> Iterator[SpecialStack]:
    return special_hub(folder, admin_url, server=ServerConfig(port=0, search_slots=slots), **overrides)


def _milvus_intervals(exporter: InMemorySpanExporter, trace_ids: list[int]) -> dict[int, tuple[int, int]]:
    """Each search's first Milvus call's start and last one's end (ns), once every search has both channels'."""
    deadline = time.monotonic() + 10
    while True:
        by_trace: dict[int, list] = {t: [] for t in trace_ids}
        for s in exporter.get_finished_spans():
            if s.context.trace_id in by_trace and s.name.startswith("milvus.search"):
                by_trace[s.context.trace_id].append(s)
        if all(len(v) >= 2 for v in by_trace.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert all(by_trace.values()), f"a search left no Milvus span: {[len(v) for v in by_trace.values()]}"
    return {t: (min(s.start_time for s in v), max(s.end_time for s in v)) for t, v in by_trace.items()}


def _search_at_once(stack: SpecialStack, searches: int, start_wait_s: float = 30) -> tuple[list[int], list[int]]:
    """``searches`` clients search (or ask for a context block) at the same moment, each in a trace of its own; their
    trace ids and how many memories each got."""
    start = threading.Barrier(searches)
    trace_ids: list[int] = [0] * searches
    hits: list[int] = [-1] * searches
    clients = [stack.client_as(f"searcher-{i}") for i in range(searches)]

    def run(i: int) -> None:
        start.wait(start_wait_s)
        with tracer.start_as_current_span(f"search {i}") as span:
            trace_ids[i] = span.get_span_context().trace_id
            if i % 2:  # a context block runs a search too, and takes a slot like one
                hits[i] = len(clients[i].assemble_context(QUESTION, [NS], top_k=5).memory_ids)
            else:
                hits[i] = len(clients[i].search(QUESTION, [NS], top_k=5).hits)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(searches)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        for c in clients:
            c.close()
    return trace_ids, hits


def _overlaps(intervals: dict[int, tuple[int, int]]) -> int:
    """Searches that began before the one begun just before them had ended (sorted by start: any overlap shows
    between neighbours)."""
    ordered = sorted(intervals.values())
    return sum(1 for a, b in zip(ordered, ordered[1:], strict=False) if b[0] < a[1])


def _fill(stack: SpecialStack) -> None:
    texts = [f"Note {i}: staging database listens on port {5400 + i}; deploys go out on day {i % 7}." for i in range(40)]
    stack.client.write([memory_input(NS, t) for t in texts], wait_indexed=True)


def test_one_search_slot_runs_concurrent_searches_one_after_another_and_answers_each(
    tmp_path: Path, external_pg_admin_url: str, spans: InMemorySpanExporter
) -> None:
    with _hub(tmp_path, external_pg_admin_url, slots=1) as stack:
        _fill(stack)
        trace_ids, hits = _search_at_once(stack, SEARCHES)
        # Every waiting call is answered: five hits a search, a block with memories (near-duplicates collapse there).
        assert hits[::2] == [5] * (SEARCHES // 2) and all(n > 0 for n in hits[1::2]), hits
        intervals = _milvus_intervals(spans, trace_ids)
    assert _overlaps(intervals) == 0, "with one slot no two searches ran at once"


def test_without_a_bound_the_same_searches_do_run_at_once(
    tmp_path: Path, external_pg_admin_url: str, spans: InMemorySpanExporter
) -> None:
    """The check above can fail: the same searches with slots for all of them overlap."""
    with _hub(tmp_path, external_pg_admin_url, slots=1000) as stack:
        _fill(stack)
        for _ in range(5):  # a loaded machine may serialise one round by chance; five in a row it does not
            trace_ids, hits = _search_at_once(stack, SEARCHES)
            assert hits[::2] == [5] * (SEARCHES // 2) and all(n > 0 for n in hits[1::2]), hits
            if _overlaps(_milvus_intervals(spans, trace_ids)):
                return
    pytest.fail("searches with a slot each never ran at once in five rounds")


def test_the_setting_is_read_checked_and_defaults_to_the_cpus() -> None:
    assert HubConfig.from_env({"MEMHUB_SEARCH_SLOTS": "3"}).server.search_slots == 3
    assert slots_for(3) == 3
    assert slots_for(0) >= 4  # 0: two per CPU, at least 4
    assert slots_for(0, processes=1) == slots_for(0)
    assert slots_for(0, processes=2) == max(2, slots_for(0) // 2)  # shared out among a group's processes
    assert slots_for(0, processes=64) == 2 and slots_for(3, processes=2) == 3
    for bad in ("-1", "1001", "two"):
        with pytest.raises(StartupError, match="MEMHUB_SEARCH_SLOTS"):
            HubConfig.from_env({"MEMHUB_SEARCH_SLOTS": bad})


def _waiting(stack: SpecialStack) -> float:
    assert stack.hub.metrics is not None
    with urllib.request.urlopen(stack.hub.metrics.url, timeout=10) as reply:
        samples = samples_of(reply.read().decode())
    assert ("memhub_searches_waiting", ()) in samples, "the hub serves no memhub_searches_waiting"
    return value(samples, "memhub_searches_waiting")


def test_the_searches_waiting_for_a_slot_are_counted_and_then_answered(tmp_path: Path, external_pg_admin_url: str) -> None:
    with _hub(tmp_path, external_pg_admin_url, slots=1, metrics=MetricsConfig(port=0)) as stack:
        _fill(stack)
        assert _waiting(stack) == 0
        url = stack.hub.config.store.database_url
        assert url is not None
        # The test holds the memories table: the search in the slot stops where it reads its hits, the others wait.
        with psycopg.connect(url) as conn:
            conn.execute("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE")
            done: list[tuple[list[int], list[int]]] = []
            runner = threading.Thread(target=lambda: done.append(_search_at_once(stack, 3)))
            runner.start()
            try:
                eventually(lambda: _waiting(stack) == 2, "two searches wait behind the one in the slot", timeout_s=60)
            finally:
                conn.rollback()
            runner.join(120)
        assert done, "the searches did not end"
        hits = done[0][1]
        assert hits[::2] == [5, 5] and hits[1] > 0, hits
        eventually(lambda: _waiting(stack) == 0, "no search waits once all are answered", timeout_s=30)
