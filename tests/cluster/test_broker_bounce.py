"""A broker that comes back before the controller noticed it was gone.

A broker killed with SIGKILL and started again at once (the launcher's supervisor does
that) registers anew as soon as its old ZooKeeper session expires; a busy controller may
only look at /brokers/ids after that, and then sees the same id with a new registration
(a new czxid). Kafka treats that as the broker failing and starting: its partitions get
new leaders from the rest of the ISR, it leaves the ISRs, and it returns as a follower with
a new leader epoch. It must not simply lead again at the old epoch: whatever the restarted
broker lost (an unflushed tail, a replaced disk) would then be the leader's log, and the
acknowledged records its followers hold would be truncated away or left diverging.

The controller is paused (SIGSTOP, with a ZooKeeper session long enough to outlive the
pause) while the partition's leader is killed, loses its copy of the partition, restarts
and registers again; then the controller resumes.
"""

from __future__ import annotations

import os
import signal
import threading
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from brokerd.groups.offsets_topic import TOPIC as OFFSETS_TOPIC
from brokerd.groups.offsets_topic import partition_for

from .checker import check_replicas_identical, cluster_metadata, create_topic
from .conftest import Cluster

RECORDS = 200


def _czxid(broker) -> int | None:
    client = KazooClient(hosts=broker.props["zookeeper.connect"])
    client.start(timeout=15)
    try:
        stat = client.exists(f"/brokers/ids/{broker.broker_id}")
        return stat.czxid if stat is not None else None
    finally:
        client.stop()
        client.close()


def _produce(bootstrap: str, topic: str, values: range) -> dict[str, int]:
    """value -> offset of each acknowledged record."""
    acked: dict[str, int] = {}

    def delivered(err, msg) -> None:
        if err is None:
            acked[msg.value().decode()] = msg.offset()

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for n in values:
        producer.produce(topic, f"v-{n:05d}".encode(), partition=0, on_delivery=delivered)
    assert producer.flush(60) == 0
    return acked


def _read_back(bootstrap: str, topic: str) -> dict[int, str]:
    from .checker import consume_all

    return {offset: value for _, offset, value in consume_all(bootstrap, topic)}


def _committed_once(consumer, topic: str) -> bool:
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    except KafkaException:  # COORDINATOR_NOT_AVAILABLE while the offsets topic is made
        return False
    return True


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout}s waiting for {what}"
        time.sleep(0.2)


def test_a_leader_back_before_the_controller_noticed_is_not_leader_at_its_old_epoch(
    zookeeper, tmp_path_factory, topic_name
):
    cluster = Cluster(zookeeper, tmp_path_factory)
    controller = cluster.brokers[1]  # started first, so the controller
    controller.props["zookeeper.session.timeout.ms"] = "30000"  # outlives its pause
    cluster.start()
    try:
        _wait(lambda: cluster_metadata(cluster)["controller"] == 1, 30, "broker 1 to be controller")
        leader = cluster.brokers[2]
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        new = NewTopic(
            topic_name,
            num_partitions=1,
            replica_assignment=[[2, 3, 1]],  # broker 2 leads, 3 is next in line
            config={"min.insync.replicas": "2"},
        )
        admin.create_topics([new])[topic_name].result(30)
        cluster.wait_full_isr(topic_name)
        assert cluster.leader_of(topic_name) == 2
        acked = _produce(cluster.bootstrap, topic_name, range(RECORDS))
        assert len(acked) == RECORDS
        cluster.wait_full_isr(topic_name)
        old_registration = _czxid(leader)

        os.killpg(controller.process.pid, signal.SIGSTOP)
        try:
            leader.kill()
            # It comes back without its copy of the partition (a replaced disk; a power
            # cut loses the unflushed tail the same way, only less of it).
            partition_dir = leader.dir / "logs" / f"{topic_name}-0"
            for path in sorted(partition_dir.rglob("*"), reverse=True):
                path.unlink() if path.is_file() else path.rmdir()
            partition_dir.rmdir()
            restart = threading.Thread(target=leader.start, kwargs={"timeout": 60}, daemon=True)
            restart.start()
            _wait(
                lambda: _czxid(leader) not in (None, old_registration),
                30,
                "broker 2 to register again",
            )
        finally:
            os.killpg(controller.process.pid, signal.SIGCONT)
        restart.join(60)
        assert leader.alive()

        # Everything acknowledged is still there, at its offset, and more can be written.
        cluster.wait_full_isr(topic_name, timeout=60)
        acked.update(_produce(cluster.bootstrap, topic_name, range(RECORDS, RECORDS + 50)))
        cluster.wait_full_isr(topic_name, timeout=60)
        found = _read_back(cluster.bootstrap, topic_name)
        lost = {v: o for v, o in acked.items() if found.get(o) != v}
        assert not lost, (
            f"{len(lost)} acknowledged records are not where they were acknowledged, e.g. "
            f"{list(lost.items())[:5]} (offsets 0-4 now hold {[found.get(o) for o in range(5)]})"
        )
        check_replicas_identical(cluster, topic_name)
    finally:
        for broker in cluster.brokers.values():
            if broker.alive():
                os.killpg(broker.process.pid, signal.SIGCONT)
        cluster.kill_all()


def test_a_coordinator_given_its_partition_before_it_registered_serves_its_groups(
    zookeeper, tmp_path_factory, topic_name
):
    """A broker restarted on its old ports takes requests before its registration is made
    (it waits for the old one to expire), and a controller that still counts the old
    registration sends it LeaderAndIsr then: here a new controller taking office. The
    `__consumer_offsets` partition it is given must be loaded once its group coordinator
    starts, whatever leadership changes follow, or its groups get NOT_COORDINATOR for as
    long as it leads."""
    cluster = Cluster(
        zookeeper,
        tmp_path_factory,
        offsets_topic_replication_factor="1",  # the partition has no other replica to lead
        offsets_topic_num_partitions="3",
        min_insync_replicas="1",
    )
    restarted = cluster.brokers[3]
    restarted.props["zookeeper.session.timeout.ms"] = "15000"  # its old registration stays
    cluster.start()
    try:
        _wait(lambda: cluster_metadata(cluster)["controller"] == 1, 30, "broker 1 to be controller")
        create_topic(cluster, topic_name)
        _produce(cluster.bootstrap, topic_name, range(20))
        committer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "warm-up"})
        _wait(lambda: _committed_once(committer, topic_name), 30, "a first commit")
        committer.close()  # the offsets topic exists now
        _wait(
            lambda: (
                len(cluster_metadata(cluster, OFFSETS_TOPIC)["topics"].get(OFFSETS_TOPIC, {})) == 3
            ),
            30,
            "the offsets topic",
        )
        offsets = cluster_metadata(cluster, OFFSETS_TOPIC)["topics"][OFFSETS_TOPIC]
        mine = next(p for p, state in offsets.items() if state["leader"] == 3)
        group = next(
            f"g{n}-{topic_name}"
            for n in range(1000)
            if partition_for(f"g{n}-{topic_name}", 3) == mine
        )

        restarted.kill()
        already = len(restarted.output.encode())
        starting = threading.Thread(target=restarted.start, kwargs={"timeout": 60}, daemon=True)
        starting.start()
        _wait(
            lambda: "listening on INTERNAL" in restarted.output_bytes(already),
            30,
            "broker 3 to listen again",
        )
        cluster.brokers[1].terminate()  # broker 2 takes office and tells every broker it counts
        starting.join(60)
        assert restarted.alive()

        consumer = Consumer(
            {
                "bootstrap.servers": f"{cluster.brokers[2].bootstrap},{restarted.bootstrap}",
                "group.id": group,
                "auto.offset.reset": "earliest",
            }
        )
        try:
            consumer.subscribe([topic_name])
            seen = 0
            deadline = time.monotonic() + 60
            while seen < 20:
                assert time.monotonic() < deadline, (
                    f"group {group} (coordinated on broker 3) read {seen} of 20 records"
                )
                message = consumer.poll(0.5)
                if message is not None and not message.error():
                    seen += 1
        finally:
            consumer.close()
    finally:
        cluster.kill_all()
