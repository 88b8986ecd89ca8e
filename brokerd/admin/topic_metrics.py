"""Kafka's BrokerTopicMetrics: bytes and records in, bytes out, per topic and for all topics.

Kafka keeps one set of meters per topic and one for all topics (kafka.server:
type=BrokerTopicMetrics,name=BytesInPerSec[,topic=T], BytesOutPerSec, MessagesInPerSec,
ReplicationBytesInPerSec, ReplicationBytesOutPerSec). As there:
- BytesIn and MessagesIn count what was appended to a log this broker leads (the batches'
  size as sent, and their records), per topic and for all topics: a client's produce, and
  as in Kafka's appendToLocalLog also a coordinator's writes to the internal topics
  (__consumer_offsets, __transaction_state) and transaction markers;
- BytesOut counts the record bytes a consumer's fetch got, per topic and for all topics;
  a follower's fetch counts only in ReplicationBytesOut (all topics), not in BytesOut;
- ReplicationBytesIn counts the batches this broker appended as a follower (all topics).

The hot paths add to plain integers (one dict lookup and a few additions per partition of a
request, no per-record work); rates are the reader's business: the admin API gives the
running totals with the moment they were read, and the platform divides the difference of
two reads by the time between them (as a Prometheus `rate()` does with the same series on
/metrics). Counts start at zero when the broker starts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from prometheus_client.core import CounterMetricFamily, Metric

# The admin API's names for the counters (docs/admin-api.md), in Kafka's order.
FIELDS = ("bytes_in", "bytes_out", "messages_in")


class FetchedPartition(Protocol):
    """A partition of a fetch's answer (the fetch handler's PartitionResult)."""

    @property
    def topic(self) -> str: ...

    @property
    def size(self) -> int: ...


class TopicCounters:
    __slots__ = ("bytes_in", "bytes_out", "messages_in")

    def __init__(self) -> None:
        self.bytes_in = 0
        self.bytes_out = 0
        self.messages_in = 0

    def as_dict(self) -> dict[str, int]:
        return {"bytes_in": self.bytes_in, "bytes_out": self.bytes_out,
                "messages_in": self.messages_in}  # fmt: skip


class BrokerTopicStats:
    """The counters of one broker (Kafka's BrokerTopicStats)."""

    def __init__(self) -> None:
        self.topics: dict[str, TopicCounters] = {}
        self.all_topics = TopicCounters()
        self.replication_bytes_out = 0
        self.replication_bytes_in = 0

    def _topic(self, topic: str) -> TopicCounters:
        counters = self.topics.get(topic)
        if counters is None:
            counters = self.topics[topic] = TopicCounters()
        return counters

    # The hot paths ------------------------------------------------------------------------
    def appended(self, topic: str, size: int, records: int) -> None:
        """A produce appended `records` records in `size` bytes of batches to `topic`."""
        counters = self._topic(topic)
        counters.bytes_in += size
        counters.messages_in += records
        total = self.all_topics
        total.bytes_in += size
        total.messages_in += records

    def replicated_in(self, size: int) -> None:
        """This broker, as a follower, appended `size` bytes fetched from leaders."""
        self.replication_bytes_in += size

    def fetched(self, partitions: Iterable[FetchedPartition], from_follower: bool) -> None:
        """A fetch answered these partitions (their topic and record bytes)."""
        total = 0
        if from_follower:
            for partition in partitions:
                total += partition.size
            self.replication_bytes_out += total
            return
        topic, counters = None, None
        for partition in partitions:
            size = partition.size
            if size:
                if partition.topic != topic:  # a fetch lists a topic's partitions together
                    topic = partition.topic
                    counters = self._topic(topic)
                counters.bytes_out += size  # type: ignore[union-attr]
                total += size
        self.all_topics.bytes_out += total

    # Readers ------------------------------------------------------------------------------
    def forget_topics(self, keep: Callable[[str], bool]) -> None:
        """Drop the counters of topics `keep` refuses (deleted ones; Kafka removes a deleted
        topic's metrics too), so the map holds only topics that exist."""
        for topic in [t for t in self.topics if not keep(t)]:
            del self.topics[topic]

    def snapshot(self, wanted: Iterable[str] | None = None) -> dict[str, Any]:
        """The totals and every topic's counters, or only the `wanted` topics' (zeros for
        one without traffic here)."""
        if wanted is None:
            topics = self.topics
        else:
            topics = {t: self.topics.get(t) or TopicCounters() for t in wanted}
        return {
            "taken_at_ms": int(time.time() * 1000),
            "all_topics": {
                **self.all_topics.as_dict(),
                "replication_bytes_out": self.replication_bytes_out,
                "replication_bytes_in": self.replication_bytes_in,
            },
            "topics": {name: c.as_dict() for name, c in sorted(topics.items())},
        }

    def collect(self) -> Iterator[Metric]:
        """Prometheus series (counters; `rate()` gives Kafka's per-second figures)."""
        docs = {
            "bytes_in": "Bytes of batches produced to a topic led here (Kafka's BytesInPerSec)",
            "bytes_out": "Record bytes fetched by consumers (Kafka's BytesOutPerSec)",
            "messages_in": "Records produced to a topic led here (Kafka's MessagesInPerSec)",
        }
        for field in FIELDS:
            family = CounterMetricFamily(f"brokerd_topic_{field}", docs[field], labels=["topic"])
            for name, counters in self.topics.items():
                family.add_metric([name], getattr(counters, field))
            yield family
            yield CounterMetricFamily(
                f"brokerd_{field}",
                docs[field] + ", all topics",
                value=getattr(self.all_topics, field),
            )
        yield CounterMetricFamily(
            "brokerd_replication_bytes_out",
            "Record bytes fetched by followers (Kafka's ReplicationBytesOutPerSec)",
            value=self.replication_bytes_out,
        )
        yield CounterMetricFamily(
            "brokerd_replication_bytes_in",
            "Bytes appended as a follower (Kafka's ReplicationBytesInPerSec)",
            value=self.replication_bytes_in,
        )


class TopicStatsCollector:
    """/metrics' view of the counters (registered with BrokerMetrics.add_collector)."""

    def __init__(self, stats: BrokerTopicStats):
        self.stats = stats

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        return self.stats.collect()
