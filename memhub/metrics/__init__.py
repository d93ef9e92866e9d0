"""Prometheus metrics of the hub: the instruments (instruments.py), what the code calls to record (record.py),
the change-feed gauge (change_feed.py), the samples of the stores (state.py) and the /metrics endpoint
(endpoint.py). docs/reference/metrics.md lists every metric with its labels, generated from this registry."""

from memhub.metrics.config import MetricsConfig

__all__ = ["MetricsConfig"]
