"""The broker's Prometheus metrics: request counters and latencies, network bytes, and
gauges read from live broker state at scrape time.

prometheus_client (pinned in requirements.txt) writes the exposition format and keeps its
own registry per broker, so two brokers in one process never share series. Counters that
events drive (requests, bytes, ISR changes) are updated where the events happen; gauges
that mirror state (partition offsets and sizes, purgatory, cleaner) are computed when
/metrics is read, so the hot paths keep no per-partition bookkeeping.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from brokerd.protocol.framing import Request

from .topic_metrics import BrokerTopicStats, TopicStatsCollector

CONTENT_TYPE = CONTENT_TYPE_LATEST  # text/plain; version=0.0.4

# Kafka requests take from well under a millisecond (ApiVersions) to max.wait.ms (a
# long-polling Fetch): buckets span both.
LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)


class BrokerMetrics:
    """Event counters, plus the collectors of state gauges added by the broker."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "brokerd_requests",
            "Kafka requests handled, by API and outcome (error: the handler raised)",
            ["api", "outcome"],
            registry=self.registry,
        )
        self.request_latency = Histogram(
            "brokerd_request_duration_seconds",
            "Time from a request being read to its response being ready, by API",
            ["api"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.bytes_in = Counter(
            "brokerd_network_request_bytes",
            "Bytes of Kafka request frames received (size prefix included), by API",
            ["api"],
            registry=self.registry,
        )
        self.bytes_out = Counter(
            "brokerd_network_response_bytes",
            "Bytes of Kafka responses sent (size prefix included), by API",
            ["api"],
            registry=self.registry,
        )
        # Replication increments these; they exist from the start so dashboards and
        # alerts can rely on the names (Kafka's IsrShrinksPerSec / IsrExpandsPerSec).
        self.isr_shrinks = Counter(
            "brokerd_isr_shrinks", "Times an ISR of a led partition shrank", registry=self.registry
        )
        self.isr_expands = Counter(
            "brokerd_isr_expands", "Times an ISR of a led partition grew", registry=self.registry
        )
        self.admin_requests = Counter(
            "brokerd_admin_http_requests",
            "Admin API HTTP requests, by route and status code",
            ["route", "status"],
            registry=self.registry,
        )
        self.maintenance_runs = Counter(
            "brokerd_admin_maintenance_runs",
            "On-demand maintenance runs through the admin API, by kind (retention, compaction)",
            ["kind"],
            registry=self.registry,
        )

        # Kafka's BrokerTopicMetrics: the produce and fetch handlers count into it (through
        # HandlerContext.topic_stats), /metrics and the admin API read it.
        self.topic_stats = BrokerTopicStats()
        self.registry.register(TopicStatsCollector(self.topic_stats))

        # Labelled children per API, looked up once: these hooks run on every request.
        self._per_api: dict[int, _ApiSeries] = {}

    def add_collector(self, collector: Collector) -> None:
        """Series computed at scrape time (admin/state_metrics.py: the broker's state)."""
        self.registry.register(collector)

    def _series(self, request: Request) -> _ApiSeries:
        found = self._per_api.get(request.api_key)
        if found is None:
            name = request.name
            found = self._per_api[request.api_key] = _ApiSeries(
                ok=self.requests.labels(name, "ok"),
                error=self.requests.labels(name, "error"),
                latency=self.request_latency.labels(name),
                bytes_in=self.bytes_in.labels(name),
                bytes_out=self.bytes_out.labels(name),
            )
        return found

    # Hooks for the dispatcher and connections ---------------------------------------
    def observe_request(self, request: Request, seconds: float, failed: bool) -> None:
        series = self._series(request)
        (series.error if failed else series.ok).inc()
        series.latency.observe(seconds)

    def request_received(self, request: Request) -> None:
        self._series(request).bytes_in.inc(request.size + 4)

    def response_sent(self, request: Request, size: int) -> None:
        self._series(request).bytes_out.inc(size)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


@dataclass(slots=True)
class _ApiSeries:
    ok: Any
    error: Any
    latency: Any
    bytes_in: Any
    bytes_out: Any
