"""A consumer group of the new protocol (KIP-848) survives its coordinator's death.

Two confluent-kafka members (`group.protocol=consumer`, committing each record) share a
topic on three brokers. The broker leading the group's `__consumer_offsets` partition is
killed with SIGKILL. The new leader loads the group from Kafka's consumer group records
(members, epochs, target and current assignments), so the members go on heartbeating with
the same member ids and epochs: no partition is lost or moved (their assignment history does
not change), and every record is consumed, the group committing to the end.
"""

from __future__ import annotations

import time

from brokerd.groups.offsets_topic import TOPIC as OFFSETS_TOPIC
from brokerd.groups.offsets_topic import partition_for
from tests.compat.group_support import Member, balanced, group_story, wait_for
from tests.integration.wire import WireClient, request

from .checker import create_topic
from .conftest import Cluster

PARTITIONS = 4


def _produce(bootstrap: str, topic: str, values: range) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in values:
        producer.produce(topic, str(i).encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0


def _describe(broker, group: str):
    """ConsumerGroupDescribe at `broker` (the coordinator): the group, or None if refused."""
    with WireClient(broker.bootstrap) as wire:
        described = wire.call(
            request(69, 0, group_ids=(group,), include_authorized_operations=False)
        ).groups[0]
    return None if described.error_code else described


def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = reader.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 20)
        return {tp.partition: tp.offset for tp in found}
    finally:
        reader.close()


def test_members_keep_their_ids_epochs_and_partitions_across_a_coordinator_kill(
    zookeeper, tmp_path_factory, topic_name
):
    cluster = Cluster(
        zookeeper,
        tmp_path_factory,
        group_consumer_heartbeat_interval_ms="500",
        group_consumer_session_timeout_ms="20000",
    ).start()
    members: list[Member] = []
    try:
        create_topic(cluster, topic_name, partitions=PARTITIONS)
        _produce(cluster.bootstrap, topic_name, range(0, 40))
        group = f"cg-{topic_name}"
        members = [
            Member(
                "confluent",
                cluster.bootstrap,
                group,
                topic_name,
                module="tests.compat.consumer_protocol_member",
                commit=True,
                client_id=f"m{i}",
            )
            for i in range(2)
        ]

        def story() -> str:
            outputs = "\n".join(b.output for b in cluster.brokers.values())
            return group_story(members, outputs)

        def values() -> set[int]:
            return {int(v) for m in members for _, _, v in m.records}

        wait_for(
            lambda: balanced(members, PARTITIONS) and len(values()) == 40,
            90,
            "two members sharing the partitions and the first 40 records consumed",
            story,
        )
        cluster.wait_full_isr(OFFSETS_TOPIC, partitions=3)
        coordinator_id = cluster.leader_of(OFFSETS_TOPIC, partition_for(group, 3))
        coordinator = cluster.brokers[coordinator_id]
        # The members own their partitions before the coordinator hears them say so: the
        # group is Reconciling until each member's next heartbeat acknowledges its assignment.
        wait_for(
            lambda: getattr(_describe(coordinator, group), "group_state", None) == "Stable",
            30,
            "the group Stable at its coordinator",
            story,
        )
        before = _describe(coordinator, group)
        assert before is not None and before.group_state == "Stable", before
        epochs = {m.member_id: m.member_epoch for m in before.members}
        histories = [len(m.assignments) for m in members]

        coordinator.kill()
        cluster.wait_for(
            lambda meta: (
                meta["topics"][OFFSETS_TOPIC][partition_for(group, 3)]["leader"]
                in meta["brokers"] - {coordinator_id}
            ),
            what="a new leader of the group's offsets partition",
        )
        new_coordinator = cluster.brokers[cluster.leader_of(OFFSETS_TOPIC, partition_for(group, 3))]
        survivors = ",".join(b.bootstrap for b in cluster.alive())
        _produce(survivors, topic_name, range(40, 80))

        def described_again():
            try:
                return _describe(new_coordinator, group)
            except OSError:
                return None

        wait_for(lambda: described_again() is not None, 60, "the group on the new coordinator")
        after = described_again()
        assert after is not None
        # The same members at the same epochs: the group was rebuilt, nobody rejoined.
        assert {m.member_id: m.member_epoch for m in after.members} == epochs, (after, story())
        wait_for(lambda: len(values()) == 80, 90, "the next 40 records consumed", story)
        deadline = time.monotonic() + 60
        while _committed(survivors, group, topic_name) != {p: 20 for p in range(PARTITIONS)}:
            assert time.monotonic() < deadline, f"commits did not reach the end: {story()}"
            time.sleep(0.2)
        # No member lost, gave up or was given a partition across the failover.
        assert [len(m.assignments) for m in members] == histories, story()
        assert all(m.alive() for m in members)
    finally:
        for m in members:
            if m.alive():
                m.kill()
        cluster.kill_all()
