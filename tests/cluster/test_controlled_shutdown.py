"""Controlled shutdown: a leader stopped with SIGTERM hands its partitions to another ISR
member before it leaves, so an idempotent acks=all producer sees nothing worse than
retriable errors and every acknowledged record survives exactly once.

A ZooKeeper watcher samples the leader's registration, then the partition's state znode:
at no sample may the registration be gone while the state still names the stopped broker
as leader. The order matters: a registration once gone stays gone while the test watches,
so "gone, then still the leader" means both held at the second read; the other order would
flag a handover and deregistration that both fell between the two reads.
"""

from __future__ import annotations

import json
import threading
import time

from kazoo.client import KazooClient

from .checker import Workload, check_queue, check_replicas_identical, consume_all, create_topic


class LeadershipWatcher:
    def __init__(self, zk_connect: str, topic: str, broker_id: int):
        self.client = KazooClient(hosts=zk_connect)
        self.client.start(timeout=15)
        self.state_path = f"/brokers/topics/{topic}/partitions/0/state"
        self.registration = f"/brokers/ids/{broker_id}"
        self.broker_id = broker_id
        self.samples: list[tuple[int, bool]] = []  # (leader, registered)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            registered = self.client.exists(self.registration) is not None
            leader = json.loads(self.client.get(self.state_path)[0])["leader"]
            self.samples.append((leader, registered))
            time.sleep(0.005)

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(10)
        self.client.stop()
        self.client.close()


def test_sigterm_of_the_leader_moves_leadership_first(cluster, topic_name):
    create_topic(cluster, topic_name)
    workload = Workload(cluster.bootstrap, topic_name).start()
    workload.wait_for_acks(100)
    leader = cluster.leader_of(topic_name)
    stopping = cluster.brokers[leader]
    watcher = LeadershipWatcher(stopping.props["zookeeper.connect"], topic_name, leader)
    try:
        assert stopping.terminate() == 0
        assert "controlled shutdown succeeded" in stopping.output
        workload.wait_for_acks(100)
    finally:
        watcher.stop()
    unregistered = [leader_then for leader_then, registered in watcher.samples if not registered]
    assert unregistered, "the stopped broker's registration never went"
    assert leader not in unregistered, (
        f"broker {leader} was still the leader after its registration disappeared"
    )
    stopping.start()
    cluster.wait_full_isr(topic_name)
    workload.wait_for_acks(100)
    workload.stop()
    assert not workload.failed, f"produce failures: {list(workload.failed.items())[:5]}"
    check_queue(workload, consume_all(cluster.bootstrap, topic_name))
    check_replicas_identical(cluster, topic_name)
