"""Unclean leader election: an out-of-sync replica leads only when the operator allows it.

Replicas [1, 2] with min.insync.replicas 1. Broker 2 dies, broker 1 acknowledges more
records alone, then broker 1 dies too and broker 2 comes back out of sync. With
unclean.leader.election.enable=false (the default) the partition stays offline; an UNCLEAN
ElectLeaders (confluent-kafka's AdminClient) makes broker 2 the leader and the records only
broker 1 had are lost, which is what unclean means. When broker 1 returns it truncates its
diverged tail (leader epochs), and the two replicas end up identical.
"""

from __future__ import annotations

import time

from confluent_kafka import ElectionType, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .checker import consume_all, replica_batches


def _produce(bootstrap: str, topic: str, values: list[str]) -> list[int]:
    offsets: list[int] = []
    errors: list[str] = []

    def delivered(err, msg) -> None:
        if err is None:
            offsets.append(msg.offset())
        else:
            errors.append(str(err))

    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 30000}
    )
    for value in values:
        producer.produce(topic, value.encode(), on_delivery=delivered)
    producer.flush(40)
    assert not errors and len(offsets) == len(values), errors
    return offsets


def _partition(cluster, topic: str) -> dict:
    return cluster.metadata(topic)["topics"][topic][0]


def test_unclean_election_only_on_request_then_replicas_converge(cluster, topic_name):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    new_topic = NewTopic(
        topic_name,
        num_partitions=1,
        replica_assignment=[[1, 2]],
        config={"min.insync.replicas": "1"},
    )
    admin.create_topics([new_topic])[topic_name].result(30)
    cluster.wait_for(
        lambda m: m["topics"].get(topic_name, {}).get(0, {}).get("isr") == [1, 2],
        what="ISR [1, 2]",
    )
    _produce(cluster.bootstrap, topic_name, [f"both-{i}" for i in range(10)])

    cluster.brokers[2].kill()
    cluster.wait_for(lambda m: m["topics"][topic_name][0]["isr"] == [1], what="ISR [1]")
    only_on_1 = _produce(cluster.bootstrap, topic_name, [f"only-1-{i}" for i in range(10)])
    assert only_on_1 == list(range(10, 20))

    cluster.brokers[1].kill()
    offline = cluster.wait_for(lambda m: m["topics"][topic_name][0]["leader"] == -1, what="offline")
    controller = cluster.brokers[offline["controller"]]
    log_start = (controller.dir / "broker.log").stat().st_size
    cluster.brokers[2].start()
    cluster.wait_for(lambda m: 2 in m["brokers"], what="broker 2 back")
    # Metadata lists a broker as soon as it registers; the controller counts it live (for
    # its elections, ElectLeaders' included) only once it has handled the registration.
    deadline = time.monotonic() + 60
    while "controller: brokers [2] joined" not in controller.output_bytes(log_start):
        assert time.monotonic() < deadline, "the controller never handled broker 2's return"
        time.sleep(0.1)
    # Broker 2 is live but not in the ISR: without unclean election nobody may lead.
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        assert _partition(cluster, topic_name)["leader"] == -1
        time.sleep(0.3)

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})  # fresh controller lookup
    result = admin.elect_leaders(ElectionType.UNCLEAN, [TopicPartition(topic_name, 0)])
    assert {tp.partition: err for tp, err in result.result(30).items()} == {0: None}
    cluster.wait_for(
        lambda m: (
            m["topics"][topic_name][0]["leader"] == 2 and m["topics"][topic_name][0]["isr"] == [2]
        ),
        what="broker 2 leading alone",
    )
    after = _produce(cluster.bootstrap, topic_name, [f"after-{i}" for i in range(5)])
    assert after == list(range(10, 15))  # broker 2's log ended at 10: offsets are reused

    cluster.brokers[1].start()
    cluster.wait_for(
        lambda m: sorted(m["topics"][topic_name][0]["isr"]) == [1, 2], what="broker 1 in sync"
    )
    consumed = [value for _, _, value in consume_all(cluster.bootstrap, topic_name)]
    assert consumed == [f"both-{i}" for i in range(10)] + [f"after-{i}" for i in range(5)]

    cluster.stop_all()
    first, second = (
        replica_batches(cluster.brokers[b].dir / "logs", topic_name, 0) for b in (1, 2)
    )
    assert first == second  # broker 1 truncated its unacknowledged-by-2 tail
    assert first[-1][1] == 14
