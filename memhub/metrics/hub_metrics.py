"""One hub's metrics: the store sampler and the /metrics endpoint, opened, started and stopped together."""

from __future__ import annotations

from sqlalchemy import Engine

from memhub.metrics.config import MetricsConfig
from memhub.metrics.endpoint import MetricsEndpoint
from memhub.metrics.state import HubFacts, HubStateCollector, StoreSampler


class HubMetrics:
    def __init__(self, config: MetricsConfig, engine: Engine, facts: HubFacts) -> None:
        """Bind the endpoint (StartupError when the port is taken); nothing runs until ``start()``."""
        assert config.port is not None, "metrics are off: build no HubMetrics"
        self.sampler = StoreSampler(engine, config.sample_interval_s, config.status_interval_s)
        self.endpoint = MetricsEndpoint(config.host, config.port, HubStateCollector(facts, self.sampler))

    @property
    def url(self) -> str:
        """Where Prometheus scrapes, e.g. http://127.0.0.1:9464/metrics."""
        return self.endpoint.url

    def start(self) -> None:
        self.sampler.start()
        self.endpoint.start()

    def stop(self) -> None:
        self.endpoint.stop()
        self.sampler.stop()
