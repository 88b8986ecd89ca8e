"""History samples the brokers do not keep: consumer lag per group and partition, and
throughput per topic (records per second from high-watermark growth), recorded by beat
every HISTORY_INTERVAL_S into HistorySample; the group page charts the lag. With brokerd's
admin API, also bytes in/out per second per topic and bytes in/out and records in per
second per broker, from the brokers' own counters (Kafka's BrokerTopicMetrics,
dashboard/core/throughput.py); the overview, topic and broker pages chart them.

One round per cluster: Metadata, one ListOffsets per leader for every partition, then one
OffsetFetch per group (a few at a time), and each broker's counters (one admin API request
each). Samples older than HISTORY_RETENTION_DAYS go.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import logging
from typing import Any

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from brokerd.client.errors import KafkaClientError
from dashboard.core import throughput
from dashboard.core.admin_api import AdminApi
from dashboard.core.kafka import KafkaOps, latest_offsets, with_cluster
from dashboard.core.models import Cluster, HistorySample

log = logging.getLogger(__name__)

RECORD_TASK = "tasks.history.record_history"
CONCURRENT_GROUPS = 16


def _previous_totals(cluster: Cluster, now: float, totals: dict[str, int]):
    """The last round's per-topic high-watermark totals, swapped for this round's. Kept in
    Redis: beat's rounds land on any worker process."""
    import redis

    key = f"brokerd:history:hw:{cluster.pk}"
    with redis.Redis.from_url(settings.REDIS_URL) as store:
        previous = store.getset(key, json.dumps([now, totals]))
        store.expire(key, int(settings.HISTORY_INTERVAL_S * 10) + 60)
    return json.loads(previous) if previous else None


def _previous_counters(cluster: Cluster, counters: throughput.Counters):
    """The last round's broker counters, swapped for this round's (in Redis, as above)."""
    import redis

    key = f"brokerd:history:counters:{cluster.pk}"
    with redis.Redis.from_url(settings.REDIS_URL) as store:
        previous = store.getset(key, json.dumps(counters))
        store.expire(key, int(settings.HISTORY_INTERVAL_S * 10) + 60)
    return {int(b): answer for b, answer in json.loads(previous).items()} if previous else None


async def collect(ops: KafkaOps, admin_api: AdminApi | None = None) -> dict[str, Any]:
    """High watermarks of every partition, the committed offsets of every group, and the
    brokers' throughput counters (with an admin API)."""
    admin = ops.admin
    metadata = await ops.refresh()
    partitions = [
        (name, p) for name, info in metadata.topics.items() if not info.is_internal for p in info.partitions
    ]  # fmt: skip
    high = await latest_offsets(admin, partitions)  # without a leader: not sampled
    gate = asyncio.Semaphore(CONCURRENT_GROUPS)

    async def committed(group_id: str):
        async with gate:
            try:
                return group_id, await admin.list_consumer_group_offsets(group_id)
            except KafkaClientError:
                return group_id, {}

    listings = await admin.list_groups()
    offsets, counters = await asyncio.gather(
        asyncio.gather(*(committed(g.group_id) for g in listings)),
        throughput.read_counters(admin_api, metadata.brokers),
    )
    return {"high": high, "offsets": dict(offsets), "counters": counters}


def samples_for(cluster: Cluster, data: dict[str, Any], now: datetime.datetime) -> list:
    rows = []
    for group_id, committed in data["offsets"].items():
        for (topic, partition), offset in committed.items():
            end = data["high"].get((topic, partition))
            if end is None or offset.offset < 0:
                continue
            rows.append(
                HistorySample(
                    cluster=cluster,
                    kind=HistorySample.Kind.LAG,
                    group=group_id,
                    topic=topic,
                    partition=partition,
                    value=max(end - offset.offset, 0),
                    timestamp=now,
                )
            )
    per_topic: dict[str, int] = {}
    for (topic, _p), end in data["high"].items():
        per_topic[topic] = per_topic.get(topic, 0) + end
    previous = _previous_totals(cluster, now.timestamp(), per_topic)
    if previous is not None:
        elapsed = now.timestamp() - previous[0]
        for topic, total in per_topic.items():
            if elapsed > 0 and topic in previous[1]:
                rate = max(total - previous[1][topic], 0) / elapsed
                rows.append(
                    HistorySample(
                        cluster=cluster,
                        kind=HistorySample.Kind.THROUGHPUT,
                        topic=topic,
                        value=rate,
                        timestamp=now,
                    )
                )
    if data.get("counters"):
        rows.extend(_throughput_samples(cluster, data["counters"], now))
    return rows


# Kinds per rate (dashboard/core/throughput.py's names); topics get no records_in: their
# records/s is THROUGHPUT (high-watermark growth), which any Kafka cluster gives.
BROKER_KINDS = {
    "bytes_in_per_s": HistorySample.Kind.BYTES_IN,
    "bytes_out_per_s": HistorySample.Kind.BYTES_OUT,
    "records_in_per_s": HistorySample.Kind.RECORDS_IN,
}
TOPIC_KINDS = {k: v for k, v in BROKER_KINDS.items() if k != "records_in_per_s"}


def _throughput_samples(cluster: Cluster, counters, now: datetime.datetime) -> list:
    rates = throughput.rates(_previous_counters(cluster, counters), counters)
    rows = [
        HistorySample(
            cluster=cluster, kind=kind, broker=broker_id, value=values[rate], timestamp=now
        )  # fmt: skip
        for broker_id, values in rates["brokers"].items()
        for rate, kind in BROKER_KINDS.items()
    ]
    rows.extend(
        HistorySample(cluster=cluster, kind=kind, topic=topic, value=values[rate], timestamp=now)
        for topic, values in rates["topics"].items()
        for rate, kind in TOPIC_KINDS.items()
    )
    return rows


def record_cluster(cluster: Cluster) -> int:
    admin = AdminApi(cluster)
    data = with_cluster(cluster, lambda ops: collect(ops, admin))
    now = timezone.now()
    rows = samples_for(cluster, data, now)
    HistorySample.objects.bulk_create(rows, batch_size=1000)
    return len(rows)


@shared_task(name=RECORD_TASK)
def record_history() -> dict[str, int]:
    """One sample round for every cluster; old samples are pruned."""
    recorded = {}
    for cluster in Cluster.objects.all():
        try:
            recorded[cluster.name] = record_cluster(cluster)
        except KafkaClientError as exc:
            log.warning("history: cluster %s unreachable: %s", cluster.name, exc)
            recorded[cluster.name] = -1
    horizon = timezone.now() - datetime.timedelta(days=settings.HISTORY_RETENTION_DAYS)
    HistorySample.objects.filter(timestamp__lt=horizon).delete()
    return recorded
