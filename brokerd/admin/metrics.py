"""The broker's Prometheus metrics: request counters and latencies, network bytes, and
gauges read from live broker state at scrape time.

prometheus_client (pinned in requirements.txt) writes the exposition format and keeps its
own registry per broker, so two brokers in one process never share series. Counters that
events drive (requests, bytes, ISR changes) are updated where the events happen; gauges
that mirror state (partition offsets and sizes, purgatory, cleaner) are computed when
/metrics is read, so the hot paths keep no per-partition bookkeeping.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from brokerd.protocol.framing import Request

from . import state

if TYPE_CHECKING:
    from brokerd.server.broker import Broker

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
    """Event counters, plus a collector of state gauges once a broker is attached."""

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

        # Labelled children per API, looked up once: these hooks run on every request.
        self._per_api: dict[int, _ApiSeries] = {}

    def attach(self, broker: Broker) -> None:
        self.registry.register(BrokerStateCollector(broker))

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


class BrokerStateCollector:
    """Gauges computed from the broker at scrape time."""

    def __init__(self, broker: Broker):
        self.broker = broker

    def describe(self) -> list[Metric]:
        return []  # series depend on live state; nothing to check at registration

    def collect(self) -> Iterator[Metric]:
        broker = self.broker
        views = state.partition_views(broker)
        labels = ["topic", "partition"]
        families = {
            "log_end_offset": GaugeMetricFamily(
                "brokerd_partition_log_end_offset",
                "Log end offset (LEO) of a local log",
                labels=labels,
            ),
            "high_watermark": GaugeMetricFamily(
                "brokerd_partition_high_watermark", "High watermark of a local log", labels=labels
            ),
            "log_start_offset": GaugeMetricFamily(
                "brokerd_partition_log_start_offset",
                "Log start offset of a local log",
                labels=labels,
            ),
            "size_bytes": GaugeMetricFamily(
                "brokerd_partition_size_bytes", "Bytes in a local log's segments", labels=labels
            ),
            "segment_count": GaugeMetricFamily(
                "brokerd_partition_segments", "Segments of a local log", labels=labels
            ),
        }
        under_replicated = 0
        leaders = 0
        for view in views:
            if view["status"] != "online":
                continue
            key = [view["topic"], str(view["partition"])]
            for field, family in families.items():
                family.add_metric(key, view[field])
            if view["is_leader"]:
                leaders += 1
                if view["under_replicated"]:
                    under_replicated += 1
        yield from families.values()
        yield _gauge(
            "brokerd_under_replicated_partitions",
            "Led partitions whose ISR is smaller than their replica set",
            under_replicated,
        )
        yield _gauge(
            "brokerd_offline_partitions",
            "Local partitions whose log could not be loaded (storage errors)",
            state.offline_count(broker),
        )
        yield _gauge("brokerd_leader_partitions", "Partitions this broker leads", leaders)
        yield _gauge(
            "brokerd_fetch_purgatory_size",
            "Fetch requests parked waiting for data (long polls)",
            state.fetch_purgatory_size(broker),
        )
        yield _gauge(
            "brokerd_controller_active",
            "1 when this broker is the active controller",
            1 if broker.controller.is_active else 0,
        )
        yield CounterMetricFamily(
            "brokerd_zookeeper_reads",
            "ZooKeeper reads (get, children, exists) this broker has sent",
            value=broker.zk.reads,
        )
        yield from _cleaner_metrics(broker)


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _cleaner_metrics(broker: Broker) -> Iterator[Metric]:
    cleaner = broker.cleaner
    thread = state.cleaner_thread(broker)
    passes = CounterMetricFamily(
        "brokerd_log_cleaner_passes", "Iterations of the log cleaner thread"
    )
    passes.add_metric([], thread.passes if thread is not None else 0)
    yield passes
    errors = CounterMetricFamily(
        "brokerd_log_cleaner_errors", "Log cleaner passes that failed with an error"
    )
    errors.add_metric([], thread.errors if thread is not None else 0)
    yield errors
    last_run = cleaner.last_run_ms if cleaner is not None else None
    yield _gauge(
        "brokerd_log_cleaner_last_run_timestamp_seconds",
        "When the log cleaner last compacted a log (0: never)",
        (last_run or 0) / 1000,
    )
    ratios = [s.dirty_ratio for s in dict(cleaner.dirty_stats).values()] if cleaner else []
    yield _gauge(
        "brokerd_log_cleaner_max_dirty_ratio",
        "Highest dirty ratio among compacted logs at the cleaner's last look",
        max(ratios, default=0.0),
    )
