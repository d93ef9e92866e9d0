"""The metrics reference, generated from what a hub's /metrics serves: the process registry and the state collector.

Names, types, help texts and label names come from the instruments themselves (memhub/metrics/instruments.py)
and from the per-hub state collector (memhub/metrics/state.py) collected once over a full sample, so a metric
added, renamed or re-labelled in the code is the reference changed at the next build. Label values are listed
where the code fixes them up front (children created at import, so that rate() reads 0 instead of no data).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from docs_markdown import code, escape, table

# prometheus_client's own collectors: summarised in one row rather than listed series by series.
_RUNTIME_PREFIXES = ("process_", "python_")


@dataclass
class MetricDoc:
    name: str
    kind: str
    help: str
    labels: list[str] = field(default_factory=list)
    values: dict[str, list[str]] = field(default_factory=dict)
    source: str = ""


def _registry_metrics() -> list[MetricDoc]:
    from memhub.metrics import instruments

    docs: dict[str, MetricDoc] = {}
    collectors = list(instruments.REGISTRY._collector_to_names)  # noqa: SLF001 - the registry lists its collectors nowhere else
    for collector in collectors:
        labelnames = list(getattr(collector, "_labelnames", ()))
        for family in collector.collect():
            if family.name.startswith(_RUNTIME_PREFIXES):
                continue
            name = family.name + ("_total" if family.type == "counter" else "")
            doc = docs.setdefault(name, MetricDoc(name, family.type, family.documentation, labelnames, source="instruments.py"))
            for sample in family.samples:
                for label, value in sample.labels.items():
                    if label in labelnames and value not in doc.values.setdefault(label, []):
                        doc.values[label].append(value)
    return list(docs.values())


def _state_metrics() -> list[MetricDoc]:
    """The per-hub gauges, collected once from a sample with every reading present."""
    from memhub.core.model import Status
    from memhub.metrics.state import HubFacts, HubStateCollector, Sample

    full = Sample(
        outbox_depth=0,
        outbox_retrying=0,
        index_lag_s=0.0,
        memories={status.value: 0 for status in Status},
        outbox_at=1.0,
        memories_at=1.0,
        durations_s={"outbox": 0.0, "statuses": 0.0},
    )

    class _Latest:  # the collector reads only latest(): hand it the full sample without starting a sampler thread
        def latest(self) -> Sample:
            return full

    facts = HubFacts(
        audit_queued=lambda: 0, audit_capacity=0, database_up=lambda: True, index_up=lambda: True, embedding_model=""
    )
    collector = HubStateCollector(facts, _Latest())  # type: ignore[arg-type]
    docs = []
    for family in collector.collect():
        labels = sorted({label for sample in family.samples for label in sample.labels})
        name = family.name + ("_info" if family.type == "info" else "")
        values: dict[str, list[str]] = {}
        if family.type != "info":  # an info metric's label values are this hub's (its version), not a fixed set
            for sample in family.samples:
                for label, value in sample.labels.items():
                    values.setdefault(label, []).append(value)
        docs.append(MetricDoc(name, family.type, family.documentation, labels, values, source="state.py"))
    return docs


def metric_names() -> list[str]:
    """Every metric name the reference lists (counters with their _total suffix), without the runtime collectors."""
    return [doc.name for doc in _registry_metrics() + _state_metrics()]


def render() -> str:
    rows = [_row(doc) for doc in sorted(_registry_metrics() + _state_metrics(), key=lambda d: d.name)]
    rows.append(
        [
            code("process_*") + ", " + code("python_*"),
            "",
            "",
            "prometheus\\_client's process and platform collectors: CPU, memory, open file descriptors, GC, Python version.",
        ]
    )
    return table(["metric", "type", "labels", "what"], rows) + "\n"


def _row(doc: MetricDoc) -> list[str]:
    return [code(doc.name), doc.kind, _labels(doc.labels, doc.values), escape(doc.help)]


def _labels(labels: Iterable[str], values: dict[str, list[str]]) -> str:
    shown = []
    for label in labels:
        known = values.get(label)
        shown.append(code(label) + (" (" + ", ".join(code(v) for v in known) + ")" if known else ""))
    return "<br>".join(shown)
