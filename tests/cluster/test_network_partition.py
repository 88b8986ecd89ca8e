"""A network partition isolating the partition leader from its followers and from ZooKeeper.

Every inter-broker connection and every broker's ZooKeeper session runs through its own
test-controlled TCP proxy (tests/cluster/proxy.py). Broker j listens on one listener per
peer (FROM1, FROM2, FROM3) and advertises FROMi at the proxy of the link i->j; broker i's
inter.broker.listener.name is FROMi, so its fetchers and controller channel reach j through
that link alone. Every link into j ends at j's own inter-broker listener FROMj, the only one
where j takes inter-broker requests. Clients use the PLAINTEXT listener directly and still
reach every broker.

Cutting the leader's links leaves it alive and reachable by clients but unable to hear from
its followers or to shrink its ISR in ZooKeeper: it must not acknowledge an acks=all write
(the followers, one of which becomes leader once its session expires, never get it). After
healing, the old leader rejoins as a follower, truncates what only it had, and the queue
checker passes.
"""

from __future__ import annotations

import datetime
import time

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from brokerd.protocol.errors import ErrorCode
from brokerd.records.batch import SimpleRecord, build_batch
from tests.harness import free_port
from tests.integration.wire import WireClient, nested, request

from .checker import (
    Workload,
    check_queue,
    check_replicas_identical,
    cluster_metadata_from,
    consume_all,
)
from .conftest import Cluster
from .proxy import Network


class PartitionableCluster(Cluster):
    """Three brokers whose inter-broker and ZooKeeper traffic runs through `network`."""

    def __init__(self, zookeeper, tmp_path_factory, network: Network):
        super().__init__(zookeeper, tmp_path_factory)
        self.network = network
        ids = list(self.brokers)
        names = [f"FROM{i}" for i in ids]
        for dst, broker in self.brokers.items():
            ports = {src: free_port() for src in ids}
            advertised = {
                src: ports[src] if src == dst else network.add(f"{src}->{dst}", ports[dst]).port
                for src in ids
            }
            zk_link = network.add(f"{dst}->zk", zookeeper.port)
            chroot = broker.props["zookeeper.connect"].partition("/")[2]
            broker.props.update(
                {
                    "listeners": ",".join(
                        [f"PLAINTEXT://127.0.0.1:{broker.port}"]
                        + [f"FROM{src}://127.0.0.1:{ports[src]}" for src in ids]
                    ),
                    "advertised.listeners": ",".join(
                        [f"PLAINTEXT://127.0.0.1:{broker.port}"]
                        + [f"FROM{src}://127.0.0.1:{advertised[src]}" for src in ids]
                    ),
                    "listener.security.protocol.map": ",".join(
                        ["PLAINTEXT:PLAINTEXT"] + [f"{name}:PLAINTEXT" for name in names]
                    ),
                    "inter.broker.listener.name": f"FROM{dst}",
                    "zookeeper.connect": f"127.0.0.1:{zk_link.port}/{chroot}",
                }
            )

    def isolate(self, broker_id: int) -> None:
        """Cut every link to and from `broker_id`, its ZooKeeper session's included."""
        self.network.cut(
            *(name for name in self.network.links if str(broker_id) in name.split("->"))
        )

    def metadata_from(self, broker_id: int, topic: str) -> dict:
        admin = AdminClient({"bootstrap.servers": self.brokers[broker_id].bootstrap})
        return cluster_metadata_from(admin.list_topics(topic=topic, timeout=5))


@pytest.fixture
def network():
    made = Network()
    yield made
    made.close()


@pytest.fixture
def partitionable_cluster(zookeeper, tmp_path_factory, network):
    made = PartitionableCluster(zookeeper, tmp_path_factory, network).start()
    yield made
    made.kill_all()


def produce_acks_all(bootstrap: str, topic: str, value: bytes, timeout_ms: int) -> ErrorCode:
    """One acks=all Produce straight to `bootstrap`, whatever the metadata says."""
    data = nested(
        0, 9, "PartitionProduceData", index=0, records=bytes(build_batch([SimpleRecord(value)]))
    )
    body = request(
        0,
        9,
        transactional_id=None,
        acks=-1,
        timeout=datetime.timedelta(milliseconds=timeout_ms),
        topic_data=(nested(0, 9, "TopicProduceData", name=topic, partition_data=(data,)),),
    )
    with WireClient(bootstrap, timeout=timeout_ms / 1000 + 10) as client:
        return ErrorCode(client.call(body).responses[0].partition_responses[0].error_code)


def leader_seen_by(cluster: PartitionableCluster, broker_id: int, topic: str) -> int:
    try:
        return cluster.metadata_from(broker_id, topic)["topics"][topic][0]["leader"]
    except Exception:  # noqa: BLE001 - a broker busy with the election answers later
        return -1


def wait_until_all_agree(cluster: PartitionableCluster, topic: str, old_leader: int) -> int:
    """Every broker's own Metadata names one new leader and a full ISR: the old leader has
    heard of its replacement (a stale broker would otherwise answer for the cluster)."""
    deadline = time.monotonic() + 60
    views: dict = {}
    while time.monotonic() < deadline:
        for broker_id in cluster.brokers:
            try:
                views[broker_id] = cluster.metadata_from(broker_id, topic)["topics"][topic][0]
            except Exception as exc:  # noqa: BLE001 - still reconnecting
                views[broker_id] = exc
        leaders = {getattr(v, "get", lambda _: None)("leader") for v in views.values()}
        if (
            len(leaders) == 1
            and leaders.isdisjoint({old_leader, -1, None})
            and all(len(v["isr"]) == len(cluster.brokers) for v in views.values())
        ):
            return leaders.pop()
        time.sleep(0.2)
    log = cluster.brokers[old_leader].output[-4000:]
    raise AssertionError(f"brokers disagree after healing: {views}\nold leader's log:\n{log}")


@pytest.mark.parametrize("isolated", ["leader", "leader_and_controller"])
def test_isolated_leader_acknowledges_nothing_the_new_leader_lacks(
    partitionable_cluster, topic_name, isolated
):
    cluster = partitionable_cluster
    controller = cluster.metadata()["controller"]
    others = [b for b in cluster.brokers if b != controller]
    leader = controller if isolated == "leader_and_controller" else others[0]
    followers = [b for b in cluster.brokers if b != leader]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    new_topic = NewTopic(
        topic_name,
        num_partitions=1,
        replication_factor=-1,
        replica_assignment=[[leader, *followers]],
        config={"min.insync.replicas": "2"},
    )
    admin.create_topics([new_topic])[topic_name].result(30)
    cluster.wait_full_isr(topic_name)
    assert cluster.leader_of(topic_name) == leader

    # librdkafka asks the broker it is connected to for metadata, and the isolated leader
    # still names itself (its cache is as stale as Kafka's would be): the producer may stay
    # with it until its requests and then messages time out (failed, so never acknowledged).
    # Shorter timeouts than librdkafka's 30 s / 300 s keep that stall short.
    workload = Workload(
        cluster.bootstrap, topic_name, request_timeout_ms=5000, message_timeout_ms=15000
    ).start()
    workload.wait_for_acks(100)
    cluster.isolate(leader)
    try:
        # The isolated leader still takes appends from clients, but cannot get them to its
        # ISR nor shrink the ISR to itself: acks=all times out, before and after a new
        # leader is elected on the majority side.
        stranded = []
        deadline = time.monotonic() + 60
        while not all(
            leader_seen_by(cluster, b, topic_name) not in (leader, -1) for b in followers
        ):
            assert time.monotonic() < deadline, "the majority side elected no new leader"
            value = f"stranded-{len(stranded)}".encode()
            stranded.append(
                produce_acks_all(cluster.brokers[leader].bootstrap, topic_name, value, 1000)
            )
        workload.wait_for_acks(100, timeout=90)  # the producer found the new leader
        for n in range(3):
            value = f"stranded-late-{n}".encode()
            stranded.append(
                produce_acks_all(cluster.brokers[leader].bootstrap, topic_name, value, 1000)
            )
        assert stranded and ErrorCode.none not in stranded, stranded
    finally:
        cluster.network.heal()

    # The old leader learns it was replaced, truncates to the new leader's log, rejoins.
    wait_until_all_agree(cluster, topic_name, leader)
    workload.wait_for_acks(100)
    workload.stop()
    consumed = consume_all(cluster.bootstrap, topic_name)
    assert not [v for _, _, v in consumed if v.startswith("stranded")]
    check_queue(workload, consumed)
    check_replicas_identical(cluster, topic_name)
