"""A slow consumer is never silently stuck while topics come and go and configs change.

Slow group consumers (kafka-python with its default timeouts, a few records per poll and
a pause after each, subscribed to the topic or to a pattern the churned topics match too;
confluent-kafka pausing after each record) read a topic a producer keeps writing to,
while other topics are created and deleted and the consumed topic's config is changed
again and again (incremental and legacy AlterConfigs; segment.bytes shrinks so its
segments roll under the readers). Records are always waiting, so each consumer's position
must keep moving: a pause longer than STALL_S fails the test (a request a broker never
answers would hold kafka-python for its 305 s request timeout), and at the end each reads
up to the log end.
"""

from __future__ import annotations

import itertools
import threading
import time

from confluent_kafka import Consumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from kafka import KafkaConsumer

from .checker import Workload, create_topic

PARTITIONS = 3
CHURN_ROUNDS = 8
# Far above a poll's worth of waiting on a loaded machine (fetch.max.wait 500 ms, a
# rebalance, a leader moving), far below the minutes a lost answer costs.
STALL_S = 30
CATCH_UP_S = 60
SET = AlterConfigOpType.SET


class SlowConsumer:
    """A group consumer in a thread: what it read, and when it last read anything."""

    def __init__(self, name: str):
        self.name = name
        self.positions: dict[int, int] = {}  # partition -> next offset
        self.last_progress = time.monotonic()
        self.longest_pause = 0.0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> SlowConsumer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)

    def _record(self, partition: int, offset: int) -> None:
        now = time.monotonic()
        self.longest_pause = max(self.longest_pause, now - self.last_progress)
        self.last_progress = now
        self.positions[partition] = max(self.positions.get(partition, 0), offset + 1)

    def stalled_for(self) -> float:
        return time.monotonic() - self.last_progress

    def _run(self) -> None:
        try:
            self._consume()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc


class KafkaPythonSlowConsumer(SlowConsumer):
    """Subscribed to the topic, or with `pattern` to every topic it matches (the churned
    ones too, so each creation and deletion rebalances its group)."""

    def __init__(self, bootstrap: str, group: str, topic: str, pattern: str | None = None):
        super().__init__("kafka-python" + (f" on /{pattern}/" if pattern else ""))
        self.topic = topic
        # Its defaults otherwise (request_timeout_ms 305 s, metadata_max_age_ms 5 min), so
        # a lost answer shows as the long stall a user would see.
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            max_poll_records=5,
        )
        if pattern is None:
            self.consumer.subscribe([topic])
        else:
            self.consumer.subscribe(pattern=pattern)

    def _consume(self) -> None:
        try:
            while not self._stop.is_set():
                for tp, records in self.consumer.poll(timeout_ms=500).items():
                    if tp.topic == self.topic:
                        for record in records:
                            self._record(tp.partition, record.offset)
                time.sleep(0.1)
        finally:
            self.consumer.close()


class ConfluentSlowConsumer(SlowConsumer):
    def __init__(self, bootstrap: str, group: str, topic: str):
        super().__init__("confluent-kafka")
        self.consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
        )
        self.consumer.subscribe([topic])

    def _consume(self) -> None:
        try:
            while not self._stop.is_set():
                message = self.consumer.poll(0.5)
                if message is not None and not message.error():
                    self._record(message.partition(), message.offset())
                    time.sleep(0.02)
        finally:
            self.consumer.close()


def _churn(admin: AdminClient, topic: str, rounds: int, stop: threading.Event) -> list[str]:
    """Create and delete other topics and change `topic`'s config, round after round; the
    steps taken, for a failure's report."""
    steps = []
    previous = None
    segment_sizes = itertools.cycle(["16384", "1048576"])
    for n in range(rounds):
        if stop.is_set():
            break
        extra = f"{topic}-extra-{n}"
        admin.create_topics([NewTopic(extra, num_partitions=3, replication_factor=3)])[
            extra
        ].result(30)
        steps.append(f"created {extra}")
        segment_bytes = next(segment_sizes)
        change = ConfigResource(
            ConfigResource.Type.TOPIC,
            topic,
            incremental_configs=[
                ConfigEntry("segment.bytes", segment_bytes, incremental_operation=SET),
                ConfigEntry("retention.ms", str(86_400_000 + n), incremental_operation=SET),
            ],
        )
        admin.incremental_alter_configs([change])[change].result(30)
        steps.append(f"{topic}: segment.bytes={segment_bytes}")
        if previous is not None:
            admin.delete_topics([previous])[previous].result(30)
            steps.append(f"deleted {previous}")
        legacy = ConfigResource(
            ConfigResource.Type.TOPIC, extra, set_config={"cleanup.policy": "compact"}
        )
        admin.alter_configs([legacy])[legacy].result(30)
        steps.append(f"{extra}: cleanup.policy=compact")
        previous = extra
        time.sleep(1)
    return steps


def test_slow_consumers_keep_moving_through_topic_and_config_changes(cluster, topic_name):
    create_topic(cluster, topic_name, partitions=PARTITIONS)
    workload = Workload(cluster.bootstrap, topic_name, rate_per_s=20).start()
    workload.wait_for_acks(40)
    consumers = [
        KafkaPythonSlowConsumer(cluster.bootstrap, f"slow-kp-{topic_name}", topic_name).start(),
        KafkaPythonSlowConsumer(
            cluster.bootstrap, f"slow-re-{topic_name}", topic_name, pattern=f"^{topic_name}.*"
        ).start(),
        ConfluentSlowConsumer(cluster.bootstrap, f"slow-ck-{topic_name}", topic_name).start(),
    ]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    stop_churn = threading.Event()
    outcome: dict = {}

    def churn() -> None:
        try:
            outcome["steps"] = _churn(admin, topic_name, CHURN_ROUNDS, stop_churn)
        except BaseException as exc:  # noqa: BLE001 - reported below
            outcome["error"] = exc

    churner = threading.Thread(target=churn, daemon=True)
    churner.start()
    try:
        while churner.is_alive():
            for consumer in consumers:
                assert consumer.error is None, f"{consumer.name} failed: {consumer.error!r}"
                assert consumer.stalled_for() < STALL_S, (
                    f"{consumer.name} read nothing for {consumer.stalled_for():.0f}s while "
                    f"records were waiting (at {consumer.positions}); acked "
                    f"{workload.acked_count()}"
                )
            time.sleep(0.5)
        churner.join()
        assert "error" not in outcome, f"topic and config changes failed: {outcome['error']!r}"
        workload.wait_for_acks(20)
    finally:
        stop_churn.set()
        workload.stop()

    # Everything written is read, by both.
    ends: dict[int, int] = {}
    for partition, offset in workload.acked.values():
        ends[partition] = max(ends.get(partition, 0), offset + 1)
    deadline = time.monotonic() + CATCH_UP_S
    try:
        for consumer in consumers:
            while any(consumer.positions.get(p, 0) < end for p, end in ends.items()):
                assert consumer.error is None, f"{consumer.name} failed: {consumer.error!r}"
                assert time.monotonic() < deadline, (
                    f"{consumer.name} at {consumer.positions}, the log ends at {ends}; "
                    f"it last read something {consumer.stalled_for():.0f}s ago"
                )
                time.sleep(0.2)
    finally:
        for consumer in consumers:
            consumer.stop()
