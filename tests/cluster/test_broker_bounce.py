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

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from .checker import check_replicas_identical, cluster_metadata
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
