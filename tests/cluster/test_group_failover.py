"""Group coordination fails over with its `__consumer_offsets` partition.

A group of confluent-kafka consumers commits every record it processes (synchronously) on a
three-broker cluster whose offsets topic has three replicas. The coordinator's broker is
killed with SIGKILL mid-stream: the group finds the new coordinator (the new leader of its
offsets partition), every commit acknowledged before the kill is still there, and the
group consumes the rest with no gap (at least once: a record may repeat across the
rebalance, none is skipped).
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from brokerd.groups.offsets_topic import TOPIC as OFFSETS_TOPIC
from brokerd.groups.offsets_topic import partition_for
from tests.integration.test_admin_api import admin_for

from .checker import create_topic
from .conftest import Cluster

PARTITIONS = 3
RECORDS_PER_PARTITION = 200


@pytest.fixture(scope="module")
def shared_cluster(zookeeper, tmp_path_factory):
    made = Cluster(zookeeper, tmp_path_factory).start()
    yield made
    made.kill_all()


@pytest.fixture
def module_cluster(shared_cluster):
    """The shared cluster, with every broker running again after each test."""
    yield shared_cluster
    for broker in shared_cluster.brokers.values():
        if not broker.alive():
            broker.start()


def _produce(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for partition in range(PARTITIONS):
        for n in range(RECORDS_PER_PARTITION):
            producer.produce(topic, f"{partition}-{n}".encode(), partition=partition)
    assert producer.flush(30) == 0


class CommittingConsumer:
    """One group member in a thread: processes a record, then commits it synchronously."""

    def __init__(self, bootstrap: str, group: str, topic: str):
        self.consumed: list[tuple[int, int]] = []  # (partition, offset)
        self.acked: dict[int, int] = {}  # partition -> highest acknowledged commit
        self.commit_errors: list[str] = []
        self._stop = threading.Event()
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 500,
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        self.consumer.subscribe([topic])
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            msg = self.consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            self.consumed.append((msg.partition(), msg.offset()))
            time.sleep(0.01)  # slow enough that the kill lands mid-stream
            try:
                for tp in self.consumer.commit(message=msg, asynchronous=False) or ():
                    if tp.error is None:
                        self.acked[tp.partition] = max(self.acked.get(tp.partition, 0), tp.offset)
            except KafkaException as exc:
                self.commit_errors.append(str(exc))

    def close(self) -> None:
        self._stop.set()
        self.thread.join(30)
        self.consumer.close()


def _committed(
    bootstrap: str, group: str, topic: str, partitions: int = PARTITIONS
) -> dict[int, int]:
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = reader.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=20)
        return {tp.partition: tp.offset for tp in found}
    finally:
        reader.close()


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.1)


def test_group_moves_to_the_new_coordinator_with_its_offsets(module_cluster, topic_name):
    cluster = module_cluster
    create_topic(cluster, topic_name, partitions=PARTITIONS)
    _produce(cluster.bootstrap, topic_name)
    group = f"g-{topic_name}"
    members = [CommittingConsumer(cluster.bootstrap, group, topic_name) for _ in range(2)]
    try:
        acked_total = lambda: sum(len(m.consumed) for m in members)  # noqa: E731
        _wait(lambda: acked_total() >= 150, 60, "the group to start consuming")
        cluster.wait_full_isr(OFFSETS_TOPIC, partitions=3)
        offsets_partition = partition_for(group, 3)
        coordinator = cluster.leader_of(OFFSETS_TOPIC, offsets_partition)
        before = {}
        for member in members:
            for partition, offset in dict(member.acked).items():
                before[partition] = max(before.get(partition, 0), offset)
        cluster.brokers[coordinator].kill()

        # The offsets partition (and with it the group) gets a new leader from its ISR.
        cluster.wait_for(
            lambda m: (
                m["topics"][OFFSETS_TOPIC][offsets_partition]["leader"]
                in m["brokers"] - {coordinator}
            ),
            what="a new leader of the group's offsets partition",
        )
        survivors = ",".join(b.bootstrap for b in cluster.alive())
        committed = _committed(survivors, group, topic_name)
        for partition, offset in before.items():
            assert committed[partition] >= offset, (
                f"commit of {topic_name}-{partition} at {offset} acknowledged before the "
                f"coordinator died, but the new coordinator has {committed[partition]}"
            )

        # The group goes on from its commits to the end with no gap.
        def finished() -> bool:
            found = _committed(survivors, group, topic_name)
            return all(found.get(p) == RECORDS_PER_PARTITION for p in range(PARTITIONS))

        _wait(finished, 90, "the group to commit every partition to its end")
    finally:
        for member in members:
            member.close()
    seen: dict[int, set[int]] = {}
    for member in members:
        for partition, offset in member.consumed:
            seen.setdefault(partition, set()).add(offset)
    for partition in range(PARTITIONS):
        missing = set(range(RECORDS_PER_PARTITION)) - seen.get(partition, set())
        assert not missing, f"{topic_name}-{partition}: never consumed {sorted(missing)[:10]}"
    cluster.brokers[coordinator].start()
    cluster.wait_full_isr(OFFSETS_TOPIC, partitions=3)


def test_commit_is_acknowledged_only_once_the_isr_has_it(module_cluster, topic_name):
    """Both followers of the offsets partition paused: a commit must wait for them (or for
    the ISR to shrink), so killing the coordinator meanwhile loses nothing acknowledged."""
    cluster = module_cluster
    create_topic(cluster, topic_name, partitions=1)
    group = f"g-{topic_name}"
    committer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
    committer.commit(offsets=[TopicPartition(topic_name, 0, 10)], asynchronous=False)
    cluster.wait_full_isr(OFFSETS_TOPIC, partitions=3)
    offsets_partition = partition_for(group, 3)
    coordinator = cluster.leader_of(OFFSETS_TOPIC, offsets_partition)
    followers = [b for b in cluster.brokers.values() if b.broker_id != coordinator]

    outcome: list = []

    def commit_later() -> None:
        try:
            outcome.append(
                committer.commit(offsets=[TopicPartition(topic_name, 0, 20)], asynchronous=False)
            )
        except KafkaException as exc:
            outcome.append(exc)

    # The kill must land well inside replica.lag.time.max.ms (3 s) and the followers'
    # ZooKeeper sessions (4 s): past the former the coordinator shrinks the ISR to itself,
    # and its death then leaves the partition without an eligible leader. So it comes as
    # soon as the commit is in the coordinator's log (appended, not yet replicated), not
    # after a fixed sleep that a loaded machine stretches.
    coordinator_admin = admin_for(cluster.brokers[coordinator])
    offsets_view = f"/v1/partitions/{OFFSETS_TOPIC}/{offsets_partition}"
    log_end = coordinator_admin.ok("GET", offsets_view)["log_end_offset"]
    for follower in followers:
        os.killpg(follower.process.pid, signal.SIGSTOP)
    try:
        thread = threading.Thread(target=commit_later, daemon=True)
        thread.start()
        deadline = time.monotonic() + 1
        while (
            coordinator_admin.ok("GET", offsets_view)["log_end_offset"] == log_end
            and time.monotonic() < deadline
        ):
            time.sleep(0.01)
        cluster.brokers[coordinator].kill()
    finally:
        for follower in followers:
            os.killpg(follower.process.pid, signal.SIGCONT)
    thread.join(60)
    committer.close()
    survivors = ",".join(b.bootstrap for b in cluster.alive())
    cluster.wait_for(
        lambda m: (
            m["topics"][OFFSETS_TOPIC][offsets_partition]["leader"] in m["brokers"] - {coordinator}
        ),
        what="a new leader of the group's offsets partition",
    )
    committed = _committed(survivors, group, topic_name, partitions=1)[0]
    acknowledged = outcome and not isinstance(outcome[0], Exception)
    if acknowledged and outcome[0][0].error is None:
        assert committed == 20, (
            f"commit at 20 was acknowledged but the new coordinator has {committed}"
        )
    else:
        assert committed in (10, 20)
    cluster.brokers[coordinator].start()
    cluster.wait_full_isr(OFFSETS_TOPIC, partitions=3)
