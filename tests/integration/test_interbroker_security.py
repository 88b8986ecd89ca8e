"""Inter-broker requests come from brokers only, and no request names a path outside log.dirs.

The brokers run as the harness and the launcher set them up: clients on the PLAINTEXT
listener, brokers on INTERNAL (inter.broker.listener.name). An anonymous client on the
client listener sends what only a controller or a follower may send (LeaderAndIsr,
StopReplica, UpdateMetadata, ControlledShutdown, a Fetch with a replica id): each is refused
as Kafka refuses a principal without CLUSTER_ACTION, and nothing on disk or in the broker's
state changes. On the inter-broker listener, topic names that would leave the log dir are
refused by validation, a controller epoch ZooKeeper does not hold is refused without
locking the real controller out, and a request for an earlier registration of the broker
gets STALE_BROKER_EPOCH (KIP-380).
"""

from __future__ import annotations

import asyncio
import datetime
import os
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from brokerd.client import NewTopic, SyncClient
from brokerd.client.connection import BrokerConnection
from brokerd.config import BrokerConfig, ConfigError
from brokerd.log.manager import LogManager, PartitionDirError
from brokerd.protocol import interbroker
from brokerd.protocol.errors import ErrorCode
from tests.cluster.conftest import Cluster
from tests.harness import BrokerProcess, free_port
from tests.integration.wire import WireClient, nested, request
from tests.integration.wire_calls import batch, create, fetch, produce

FORGED_EPOCH = 2**31 - 1


@pytest.fixture(scope="module")
def target(zookeeper, tmp_path_factory):
    """A broker of its own: a refused attack must not be able to spoil a shared one."""
    process = BrokerProcess(
        tmp_path_factory.mktemp("interbroker"), f"{zookeeper.connect}/interbroker-security"
    ).start()
    yield process
    process.kill()


# Raw inter-broker requests ----------------------------------------------------------------
def send(address: str, body):
    """One request over the project's client connection (what the controller uses)."""

    async def exchange():
        host, port = address.rsplit(":", 1)
        connection = BrokerConnection(host, int(port), client_id="intruder", request_timeout=15)
        try:
            return await connection.send(body)
        finally:
            await connection.close()

    return asyncio.run(exchange())


def zookeeper_read(broker: BrokerProcess, path: str):
    client = KazooClient(hosts=broker.props["zookeeper.connect"])
    client.start(timeout=10)
    try:
        return client.get(path)
    finally:
        client.stop()
        client.close()


def controller_epoch(broker: BrokerProcess) -> int:
    return int(zookeeper_read(broker, "/controller_epoch")[0])


def broker_epoch(broker: BrokerProcess) -> int:
    return zookeeper_read(broker, f"/brokers/ids/{broker.broker_id}")[1].czxid


def leader_and_isr(partitions, broker_id: int, epoch: int, broker_epoch_: int = -1):
    """LeaderAndIsr making `broker_id` the only replica and leader of each (topic, index)."""
    by_topic: dict[str, list] = {}
    for topic, index in partitions:
        by_topic.setdefault(topic, []).append(
            interbroker.LeaderAndIsrPartitionState(
                partition_index=index,
                controller_epoch=epoch,
                leader=broker_id,
                leader_epoch=1000,
                isr=(broker_id,),
                zk_version=0,
                replicas=(broker_id,),
            )
        )
    return interbroker.LeaderAndIsrRequest(
        controller_id=broker_id,
        controller_epoch=epoch,
        broker_epoch=broker_epoch_,
        topic_states=tuple(
            interbroker.LeaderAndIsrTopicState(topic_name=t, partition_states=tuple(ps))
            for t, ps in by_topic.items()
        ),
        live_leaders=(),
    )


def stop_replica(partitions, broker_id: int, epoch: int, broker_epoch_: int = -1):
    by_topic: dict[str, list] = {}
    for topic, index in partitions:
        by_topic.setdefault(topic, []).append(
            interbroker.StopReplicaPartitionState(partition_index=index, delete_partition=True)
        )
    return interbroker.StopReplicaRequest(
        controller_id=broker_id,
        controller_epoch=epoch,
        broker_epoch=broker_epoch_,
        topic_states=tuple(
            interbroker.StopReplicaTopicState(topic_name=t, partition_states=tuple(ps))
            for t, ps in by_topic.items()
        ),
    )


def update_metadata(broker_id: int, epoch: int):
    return interbroker.UpdateMetadataRequest(
        controller_id=broker_id, controller_epoch=epoch, topic_states=(), live_brokers=()
    )


def partition_codes(response) -> dict:
    return {(p.topic_name, p.partition_index): p.error_code for p in response.partition_errors}


def tree(directory: Path) -> set:
    return {str(p.relative_to(directory)) for p in directory.rglob("*")}


@pytest.fixture
def victim(target, tmp_path):
    """A directory outside log.dirs with something precious in it, and the topic names that
    lead there from the broker's log dir (`<name>-0` is the partition directory)."""
    log_dir = Path(target.props["log.dirs"])
    precious = tmp_path / "victim-0"
    precious.mkdir()
    (precious / "precious.txt").write_text("keep me")
    return {
        "existing": os.path.relpath(tmp_path / "victim", log_dir),
        "fresh": os.path.relpath(tmp_path / "fresh", log_dir),
        "outside": tmp_path,
        "log_dir": log_dir,
    }


def assert_untouched(victim, log_dir_before: set) -> None:
    outside = victim["outside"]
    assert tree(outside) == {"victim-0", "victim-0/precious.txt"}
    assert (outside / "victim-0" / "precious.txt").read_text() == "keep me"
    assert tree(victim["log_dir"]) - log_dir_before == set(), "nothing new in the log dir"


# From a client: refused as without CLUSTER_ACTION -----------------------------------------
def test_path_traversal_from_a_client_listener_is_refused(target, victim):
    before = tree(victim["log_dir"])
    names = [(victim["existing"], 0), (victim["fresh"], 0)]
    epoch = controller_epoch(target)

    created = send(target.bootstrap, leader_and_isr(names, target.broker_id, epoch))
    assert created.error_code == ErrorCode.cluster_authorization_failed
    assert partition_codes(created) == dict.fromkeys(names, ErrorCode.cluster_authorization_failed)

    deleted = send(target.bootstrap, stop_replica(names, target.broker_id, epoch))
    assert deleted.error_code == ErrorCode.cluster_authorization_failed
    assert partition_codes(deleted) == dict.fromkeys(names, ErrorCode.cluster_authorization_failed)
    assert_untouched(victim, before)


def test_controller_requests_and_controlled_shutdown_from_a_client_are_refused(target):
    metadata = send(target.bootstrap, update_metadata(target.broker_id, controller_epoch(target)))
    assert metadata.error_code == ErrorCode.cluster_authorization_failed
    shutdown = send(
        target.bootstrap,
        interbroker.ControlledShutdownRequest(broker_id=target.broker_id, broker_epoch=-1),
    )
    assert shutdown.error_code == ErrorCode.cluster_authorization_failed
    assert shutdown.remaining_partitions == ()


def test_a_real_partition_is_not_deleted_by_an_anonymous_stop_replica(target, topic_name):
    create(target, topic_name)
    with WireClient(target.bootstrap) as client:
        assert produce(client, topic_name, batch(b"a", b"b")).error_code == ErrorCode.none
    directory = Path(target.props["log.dirs"]) / f"{topic_name}-0"
    assert directory.is_dir()

    request_ = stop_replica([(topic_name, 0)], target.broker_id, controller_epoch(target))
    answer = send(target.bootstrap, request_)
    assert answer.error_code == ErrorCode.cluster_authorization_failed
    assert directory.is_dir() and any(directory.glob("*.log"))
    with WireClient(target.bootstrap) as client:
        partition = fetch(client, topic_name, 0).responses[0].partitions[0]
    assert partition.error_code == ErrorCode.none
    assert partition.high_watermark == 2 and partition.records


def follower_fetch(topic: str, replica_id: int):
    fetched = nested(
        1,
        12,
        "FetchPartition",
        partition=0,
        fetch_offset=0,
        partition_max_bytes=1 << 20,
        current_leader_epoch=-1,
        log_start_offset=-1,
        last_fetched_epoch=-1,
    )
    return request(
        1,
        12,
        replica_id=replica_id,
        max_wait=datetime.timedelta(milliseconds=0),
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=0,  # asks for a session: a refused fetch must not get one
        topics=(nested(1, 12, "FetchTopic", topic=topic, partitions=(fetched,)),),
        forgotten_topics_data=(),
        rack_id="",
    )


def test_a_follower_fetch_from_a_client_listener_is_refused(target, topic_name):
    create(target, topic_name)
    with WireClient(target.bootstrap) as client:
        assert produce(client, topic_name, batch(b"x", b"y")).error_code == ErrorCode.none
        # A fetch claiming to be replica 7 would read past the HW and move the ISR state.
        refused = client.call(follower_fetch(topic_name, 7))
        (topic,) = refused.responses
        (partition,) = topic.partitions
        assert (refused.error_code, refused.session_id) == (ErrorCode.none, 0)
        assert partition.error_code == ErrorCode.topic_authorization_failed
        assert not partition.records
        # The same partition as a consumer reads it is fine.
        consumer = fetch(client, topic_name, 0).responses[0].partitions[0]
        assert consumer.error_code == ErrorCode.none and consumer.records


# On the inter-broker listener: names, broker epoch, controller epoch -----------------------
def test_names_leaving_the_log_dir_are_refused_on_the_inter_broker_listener(target, victim):
    before = tree(victim["log_dir"])
    epoch, mine = controller_epoch(target), broker_epoch(target)
    invalid = [
        (victim["existing"], 0),
        (victim["fresh"], 0),
        (".", 0),
        ("..", 0),
        ("a" * 250, 0),
        ("sub/dir", 0),
    ]
    created = send(
        target.internal_bootstrap,
        leader_and_isr([*invalid, ("legal", -1)], target.broker_id, epoch, mine),
    )
    assert created.error_code == ErrorCode.none
    assert partition_codes(created) == {
        **dict.fromkeys(invalid, ErrorCode.invalid_topic_exception),
        ("legal", -1): ErrorCode.unknown_topic_or_partition,
    }
    deleted = send(target.internal_bootstrap, stop_replica(invalid, target.broker_id, epoch, mine))
    assert deleted.error_code == ErrorCode.none
    assert partition_codes(deleted) == dict.fromkeys(invalid, ErrorCode.invalid_topic_exception)
    assert_untouched(victim, before)


def test_a_request_for_an_earlier_registration_gets_stale_broker_epoch(target, topic_name):
    stale = broker_epoch(target) - 1
    answer = send(
        target.internal_bootstrap,
        leader_and_isr([(topic_name, 0)], target.broker_id, controller_epoch(target), stale),
    )
    assert answer.error_code == ErrorCode.stale_broker_epoch
    assert partition_codes(answer) == {(topic_name, 0): ErrorCode.stale_broker_epoch}
    assert not (Path(target.props["log.dirs"]) / f"{topic_name}-0").exists()


def test_the_log_manager_creates_and_deletes_only_inside_its_log_dirs(tmp_path):
    log_dir = tmp_path / "logs"
    outside = tmp_path / "outside-0"
    outside.mkdir()
    manager = LogManager([log_dir])
    manager.startup()
    try:
        for topic, index in [("../outside", 0), ("a/b", 0), ("t", -1), ("t-", -1)]:
            with pytest.raises(PartitionDirError):
                manager.get_or_create_log(topic, index)
        assert sorted(p.name for p in log_dir.iterdir()) == [".lock"]
        assert manager.get_or_create_log("fine", 0).dir == log_dir / "fine-0"
    finally:
        manager.shutdown()
    assert outside.is_dir() and not (tmp_path / "a").exists()


# A forged controller epoch does not lock the real controller out -------------------------
def established_on(port: int) -> int:
    """TCP connections accepted on a loopback `port` and still open (/proc/net/tcp)."""
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, state = fields[1], fields[3]
        if state == "01" and local == f"0100007F:{port:04X}":
            count += 1
    return count


def with_control_plane_listener(broker: BrokerProcess) -> int:
    port = free_port()
    broker.props["listeners"] += f",CONTROL://127.0.0.1:{port}"
    broker.props["listener.security.protocol.map"] += ",CONTROL:PLAINTEXT"
    broker.props["control.plane.listener.name"] = "CONTROL"
    return port


def test_a_forged_controller_epoch_does_not_stop_the_real_controller(
    zookeeper, tmp_path_factory, topic_name
):
    cluster = Cluster(
        zookeeper,
        tmp_path_factory,
        size=2,
        default_replication_factor="2",
        offsets_topic_replication_factor="2",
        min_insync_replicas="1",
    )
    control_ports = {b: with_control_plane_listener(p) for b, p in cluster.brokers.items()}
    cluster.start()
    try:
        controller = cluster.metadata()["controller"]
        (other,) = set(cluster.brokers) - {controller}
        with SyncClient(cluster.bootstrap, retries=20, retry_backoff=0.25) as client:
            client.admin.create_topics([NewTopic(topic_name, assignments={0: [controller]})])
            cluster.wait_for(
                lambda m: m["topics"].get(topic_name, {}).get(0, {}).get("leader") == controller,
                what=f"{topic_name} led by {controller}",
            )

            # Every broker, the controller included, is told of a controller epoch 2^31-1
            # on each of its listeners.
            for broker in cluster.brokers.values():
                forged = [("forged", 0)]
                for address, refusal in (
                    (broker.bootstrap, ErrorCode.cluster_authorization_failed),
                    (broker.internal_bootstrap, ErrorCode.stale_controller_epoch),
                    (
                        f"127.0.0.1:{control_ports[broker.broker_id]}",
                        ErrorCode.stale_controller_epoch,
                    ),
                ):
                    answer = send(address, leader_and_isr(forged, broker.broker_id, FORGED_EPOCH))
                    assert answer.error_code == refusal
                    answer = send(address, update_metadata(broker.broker_id, FORGED_EPOCH))
                    assert answer.error_code == refusal

            # The real controller still moves replicas: the other broker takes its
            # LeaderAndIsr, catches up and joins the ISR.
            key = (topic_name, 0)
            client.admin.alter_partition_reassignments({key: [controller, other]})
            deadline = time.monotonic() + 60
            while client.admin.list_partition_reassignments([key]):
                assert time.monotonic() < deadline, "the reassignment did not complete"
                time.sleep(0.2)
        cluster.wait_for(
            lambda m: (
                m["topics"][topic_name][0]["replicas"] == [controller, other]
                and sorted(m["topics"][topic_name][0]["isr"]) == sorted([controller, other])
            ),
            what=f"{topic_name} on [{controller}, {other}] in sync",
        )
        assert not any(
            d.name.startswith("forged")
            for b in cluster.brokers.values()
            for d in Path(b.props["log.dirs"]).iterdir()
        )
        # The controller keeps its connections to every broker on the control-plane
        # listener; the follower fetches from the leader on the inter-broker one.
        assert all(established_on(port) for port in control_ports.values())
        assert established_on(cluster.brokers[controller].internal_port)
    finally:
        cluster.kill_all()


# Kafka's rules for the inter-broker listener keys ----------------------------------------
BASE = {
    "broker.id": "1",
    "zookeeper.connect": "127.0.0.1:2181",
    "log.dirs": "/tmp/unused",
    "listeners": "PLAINTEXT://:9092,INTERNAL://:9093,CONTROL://:9094",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROL:PLAINTEXT",
}


def test_inter_broker_listener_names_resolve_as_in_kafka():
    assert BrokerConfig(BASE).inter_broker_listener_name == "PLAINTEXT"
    assert BrokerConfig(BASE).control_plane_listener_name is None
    config = BrokerConfig(
        {**BASE, "inter.broker.listener.name": "internal", "control.plane.listener.name": "CONTROL"}
    )
    assert (config.inter_broker_listener_name, config.control_plane_listener_name) == (
        "INTERNAL",
        "CONTROL",
    )


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (
            {
                "inter.broker.listener.name": "INTERNAL",
                "security.inter.broker.protocol": "PLAINTEXT",
            },
            "only one of inter.broker.listener.name and security.inter.broker.protocol",
        ),
        ({"inter.broker.listener.name": "NOWHERE"}, "must be a listener name defined"),
        ({"control.plane.listener.name": "NOWHERE"}, "must be a listener name defined"),
        (
            {"inter.broker.listener.name": "CONTROL", "control.plane.listener.name": "CONTROL"},
            "must differ from the inter-broker listener",
        ),
        ({"security.inter.broker.protocol": "SASL_SSL"}, "SASL_SSL must be a listener name"),
        ({"security.inter.broker.protocol": "BOGUS"}, "security.inter.broker.protocol"),
        ({"listeners": "INTERNAL://:9093"}, "inter.broker.listener.name: PLAINTEXT must be"),
    ],
)
def test_inter_broker_listener_configs_are_checked(props, message):
    with pytest.raises(ConfigError, match=message):
        BrokerConfig({**BASE, **props})


def test_metadata_and_find_coordinator_answer_with_the_listener_asked_through(broker):
    """Kafka answers with each broker's endpoint on the listener the request came in on:
    clients never learn the inter-broker addresses, brokers on INTERNAL get INTERNAL ones."""
    metadata = request(
        3,
        12,
        topics=None,
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    for port, expected in (
        (broker.port, broker.port),
        (broker.internal_port, broker.internal_port),
    ):
        with WireClient(f"127.0.0.1:{port}") as client:
            brokers = client.call(metadata).brokers
            assert [(b.host, b.port) for b in brokers] == [("127.0.0.1", expected)]
            found = client.call(request(10, 4, key_type=0, coordinator_keys=("g",)))
            assert found.coordinators[0].port == expected
