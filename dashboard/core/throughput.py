"""Throughput from the brokers' own counters (Kafka's BrokerTopicMetrics, read on each
broker's admin API at /v1/topic-metrics): bytes in, bytes out and records in per second,
per broker and per topic, as the difference of two reads over the time between them.

A broker's figures are its all-topics counters; a topic's are the sum over the brokers
(each counts only the partitions it leads, or the fetches it answered). A broker that did
not answer both reads is left out of that rate; one whose counters went down restarted
(they start at zero), so what it counted since is the difference.
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Any
from urllib.parse import urlencode

from django.db.models import Sum
from django.utils import timezone

from .admin_api import AdminApi, AdminApiError
from .models import Cluster, HistorySample

# Counter -> the rate's name, in the order the pages show them.
RATES = {"bytes_in": "bytes_in_per_s", "bytes_out": "bytes_out_per_s",
         "messages_in": "records_in_per_s"}  # fmt: skip
# A broker's replication traffic (all topics only, as Kafka's ReplicationBytesIn/OutPerSec).
REPLICATION_RATES = {"replication_bytes_in": "replication_bytes_in_per_s",
                     "replication_bytes_out": "replication_bytes_out_per_s"}  # fmt: skip
# Topics a live page asks each broker about per round (the admin API takes up to 1,000).
MAX_TOPICS_PER_READ = 100

Counters = dict[int, dict[str, Any]]  # broker id -> its /v1/topic-metrics answer


async def read_counters(
    admin: AdminApi | None, broker_ids, topics: list[str] | None = None, totals_only=False
) -> Counters:
    """Every broker's counters (those that answer); `topics` narrows the per-topic part,
    `totals_only` leaves it out. {} without an admin API."""
    if admin is None or not await asyncio.to_thread(lambda: admin.available):
        return {}
    ids = sorted(set(broker_ids) | set(admin.endpoints()))
    complete = topics is None and not totals_only
    if complete:
        query = ""
    elif totals_only or not topics:
        query = "?totals_only=true"
    else:
        query = "?" + urlencode([("topic", t) for t in topics[:MAX_TOPICS_PER_READ]])

    async def ask(broker_id: int):
        try:
            answer = await admin.aget(broker_id, f"/v1/topic-metrics{query}")
        except AdminApiError:
            return broker_id, None
        # A complete read lists every topic with traffic: one missing had none. A narrowed
        # read lists what it asked for only: a topic missing from it was not asked.
        return broker_id, {**answer, "complete": complete}

    answers = await asyncio.gather(*(ask(b) for b in ids))
    return {b: answer for b, answer in answers if answer is not None}


def _delta(now: int, before: int) -> int:
    return now - before if now >= before else now  # went down: restarted, counted from 0


def _per_second(
    now: dict, before: dict, seconds: float, names: dict[str, str] = RATES
) -> dict[str, float]:
    return {
        rate: _delta(now.get(name, 0), before.get(name, 0)) / seconds
        for name, rate in names.items()
    }


def rates(previous: Counters | None, current: Counters) -> dict[str, Any]:
    """{"brokers": {id: rates}, "topics": {name: rates}, "total": rates or None}, each
    rates {"bytes_in_per_s", "bytes_out_per_s", "records_in_per_s"}, a broker's also
    "replication_bytes_in_per_s" and "replication_bytes_out_per_s"; empty before two
    reads."""
    brokers: dict[int, dict[str, float]] = {}
    topics: dict[str, dict[str, float]] = {}
    for broker_id, now in current.items():
        before = (previous or {}).get(broker_id)
        if before is None:
            continue
        seconds = (now["taken_at_ms"] - before["taken_at_ms"]) / 1000
        if seconds <= 0:
            continue
        brokers[broker_id] = _per_second(
            now["all_topics"], before["all_topics"], seconds, {**RATES, **REPLICATION_RATES}
        )
        earlier = before.get("topics", {})
        for name, counters in now.get("topics", {}).items():
            if name not in earlier and not before.get("complete"):
                continue  # not asked about last time: no rate until the next read
            found = _per_second(counters, earlier.get(name, {}), seconds)
            summed = topics.setdefault(name, dict.fromkeys(RATES.values(), 0.0))
            for rate, value in found.items():
                summed[rate] += value
    total = None
    if brokers:
        total = {rate: sum(b[rate] for b in brokers.values()) for rate in RATES.values()}
    return {"brokers": brokers, "topics": topics, "total": total}


# History: the samples tasks/history.py records, as the pages' charts take them ------------
HISTORY_WINDOW = datetime.timedelta(hours=6)
HISTORY_POINTS = 2000
BYTES_SERIES = {"bytes in/s": "bytes_in", "bytes out/s": "bytes_out"}


def history_chart(
    cluster: Cluster,
    series: dict[str, str],
    unit: str,
    topic: str | None = None,
    broker: int | None = None,
) -> dict[str, Any]:
    """{"unit", "series": [{"label", "points": [[unix seconds, value], ...]}]} of the recorded
    samples of each kind in `series` (label -> HistorySample kind), oldest first: a topic's,
    a broker's, or (neither given) the cluster's, summed over its brokers."""
    since = timezone.now() - HISTORY_WINDOW
    out = []
    for label, kind in series.items():
        samples = HistorySample.objects.filter(cluster=cluster, kind=kind, timestamp__gte=since)
        if topic is not None:
            samples = samples.filter(topic=topic)
        elif broker is not None:
            samples = samples.filter(broker=broker)
        else:
            samples = samples.filter(broker__isnull=False)
        points = (samples.values("timestamp").annotate(total=Sum("value")).order_by("-timestamp"))[
            :HISTORY_POINTS
        ]
        out.append(
            {"label": label,
             "points": [[p["timestamp"].timestamp(), p["total"]] for p in reversed(points)]}
        )  # fmt: skip
    return {"unit": unit, "series": out, "points": max((len(s["points"]) for s in out), default=0)}
