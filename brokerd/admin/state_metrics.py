"""Gauges mirroring the broker's state (partition offsets and sizes, purgatory, controller,
cleaner), computed when /metrics is read so the hot paths keep no bookkeeping for them."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from . import state
from .context import AdminContext


class BrokerStateCollector:
    """Gauges computed from the broker at scrape time."""

    def __init__(self, ctx: AdminContext):
        self.ctx = ctx

    def describe(self) -> list[Metric]:
        return []  # series depend on live state; nothing to check at registration

    def collect(self) -> Iterator[Metric]:
        ctx = self.ctx
        views = state.partition_views(ctx)
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
            "last_stable_offset": GaugeMetricFamily(
                "brokerd_partition_last_stable_offset",
                "Last stable offset (LSO) of a local log: read_committed consumers stop there",
                labels=labels,
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
            state.offline_count(ctx),
        )
        yield _gauge("brokerd_leader_partitions", "Partitions this broker leads", leaders)
        yield _gauge(
            "brokerd_fetch_purgatory_size",
            "Fetch requests parked waiting for data (long polls)",
            len(ctx.replicas.purgatory),
        )
        yield _gauge(
            "brokerd_controller_active",
            "1 when this broker is the active controller",
            1 if ctx.controller.is_active else 0,
        )
        yield CounterMetricFamily(
            "brokerd_zookeeper_reads",
            "ZooKeeper reads (get, children, exists) this broker has sent",
            value=ctx.zk.reads,
        )
        yield from _cleaner_metrics(ctx)


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _cleaner_metrics(ctx: AdminContext) -> Iterator[Metric]:
    cleaner = ctx.cleaner()
    thread = ctx.cleaner_thread()
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
