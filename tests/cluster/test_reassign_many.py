"""Many partitions reassigned by one request on three brokers (issue 15): the controller
moves them together (a topic znode written once, the states in pipelined batches, one
request per broker per step); every partition ends on its target replicas, fully in sync,
with a leader among them, the removed replicas' directories deleted, and no acknowledged
record lost."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition

from brokerd.client import NewTopic

from .test_reassignment import client_for

PARTITIONS = 120
TOPIC = "moved-together"


def _before(p: int) -> list[int]:
    return [p % 3 + 1, (p + 1) % 3 + 1]


def _after(p: int) -> list[int]:
    return [(p + 1) % 3 + 1, (p + 2) % 3 + 1]  # [a, b] -> [b, c]: b leads, c added, a removed


def _placed(meta, placement) -> bool:
    parts = meta["topics"].get(TOPIC, {})
    return len(parts) == PARTITIONS and all(
        parts[p]["replicas"] == placement(p)
        and sorted(parts[p]["isr"]) == sorted(placement(p))
        and parts[p]["leader"] in placement(p)
        for p in range(PARTITIONS)
    )


def test_a_hundred_partitions_move_in_one_request(cluster):
    with client_for(cluster) as client:
        client.admin.create_topics(
            [
                NewTopic(
                    TOPIC,
                    assignments={p: _before(p) for p in range(PARTITIONS)},
                    configs={"min.insync.replicas": "2"},
                )
            ]
        )
        cluster.wait_for(lambda m: _placed(m, _before), 120, "the topic placed")
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        acked: list[int] = []
        for p in range(PARTITIONS):
            producer.produce(
                TOPIC,
                value=str(p).encode(),
                partition=p,
                on_delivery=lambda err, msg: err is None and acked.append(msg.partition()),
            )
        producer.flush(60)
        assert sorted(acked) == list(range(PARTITIONS))

        plan = {(TOPIC, p): _after(p) for p in range(PARTITIONS)}
        assert client.admin.alter_partition_reassignments(plan) == dict.fromkeys(plan)
        deadline = time.monotonic() + 180
        while client.admin.list_partition_reassignments(list(plan)):
            assert time.monotonic() < deadline, "the reassignments did not complete"
            time.sleep(0.5)

    cluster.wait_for(lambda m: _placed(m, _after), 120, "every partition on its targets")
    # StopReplica(delete) reached every removed replica.
    deadline = time.monotonic() + 60
    for p in range(PARTITIONS):
        removed = _before(p)[0]
        directory = cluster.brokers[removed].dir / "logs" / f"{TOPIC}-{p}"
        while directory.exists():
            assert time.monotonic() < deadline, f"{directory} is still there"
            time.sleep(0.2)
    # Every acknowledged record is read back from the new leaders.
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            "group.id": "reassign-many-check",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        seen: dict[int, bytes] = {}
        deadline = time.monotonic() + 120
        while len(seen) < PARTITIONS:
            assert time.monotonic() < deadline, f"read {len(seen)} of {PARTITIONS}"
            msg = consumer.poll(1)
            if msg is not None and not msg.error():
                seen[msg.partition()] = msg.value()
    finally:
        consumer.close()
    assert seen == {p: str(p).encode() for p in range(PARTITIONS)}
