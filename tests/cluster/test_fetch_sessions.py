"""Followers fetch in fetch sessions (KIP-227).

An idle follower's fetches list no partition once its session is open: the leader's
/metrics show the bytes of Fetch requests it received, and on average each is smaller than
a fetch carrying a single partition; the followers counted what they appended
(ReplicationBytesIn). And a follower keeps catching up through leader
changes: its leader dies (its sessions there die with it), comes back empty of leadership,
then leads again (the other followers' fetchers come back to it and open new sessions);
every replica of every partition ends with every record.
"""

from __future__ import annotations

import datetime
import json
import time
import urllib.request

import pytest
from confluent_kafka import ElectionType, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient
from kio.schema.fetch.v12 import request as fetch_request
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i32Timedelta, i64
from prometheus_client.parser import text_string_to_metric_families

from brokerd.protocol.framing import encode_request

from .checker import checkpointed_high_watermark, create_topic
from .conftest import Cluster

PARTITIONS = 12


def _metrics(broker) -> dict:
    client = KazooClient(hosts=broker.props["zookeeper.connect"])
    client.start(timeout=15)
    try:
        data, _ = client.get(f"/brokers/ids/{broker.broker_id}")
    finally:
        client.stop()
        client.close()
    url = json.loads(data)["admin_endpoint"] + "/metrics"
    with urllib.request.urlopen(url, timeout=30) as response:
        text = response.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def _fetches(samples: dict) -> tuple[float, float]:
    """(Fetch requests handled, bytes of Fetch requests received)."""
    handled = sum(
        samples.get(("brokerd_requests_total", (("api", "fetch"), ("outcome", o))), 0)
        for o in ("ok", "error")
    )
    return handled, samples.get(("brokerd_network_request_bytes_total", (("api", "fetch"),)), 0)


def _one_partition_fetch_bytes(topic: str) -> int:
    """The frame of an incremental follower fetch listing one partition, as a fetcher
    (client id broker-<n>-fetcher-<m>) sends it: the least a fetch with a partition takes."""
    request = fetch_request.FetchRequest(
        replica_id=BrokerId(2),
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=500)),
        min_bytes=i32(1),
        max_bytes=i32(10485760),
        session_id=i32(123456),
        session_epoch=i32(7),
        topics=(
            fetch_request.FetchTopic(
                topic=TopicName(topic),
                partitions=(
                    fetch_request.FetchPartition(
                        partition=i32(0),
                        current_leader_epoch=i32(0),
                        fetch_offset=i64(0),
                        partition_max_bytes=i32(1048576),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
    )
    return len(encode_request(request, 1, "broker-2-fetcher-1"))


def _produce(cluster: Cluster, topic: str, count: int) -> None:
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True}
    )
    failures = []
    for n in range(count):
        producer.produce(
            topic,
            f"v{n}".encode(),
            partition=n % PARTITIONS,
            on_delivery=lambda err, _msg: failures.append(err) if err else None,
        )
    assert producer.flush(60) == 0
    assert not failures, failures[:3]


def test_an_idle_followers_fetches_list_no_partition(cluster, topic_name):
    create_topic(cluster, topic_name, PARTITIONS)
    _produce(cluster, topic_name, 3 * PARTITIONS)
    time.sleep(1.5)  # sessions open, followers caught up and told the HW
    leader = cluster.brokers[1]
    handled_before, bytes_before = _fetches(_metrics(leader))
    time.sleep(4)
    handled_after, bytes_after = _fetches(_metrics(leader))
    handled = handled_after - handled_before
    received = bytes_after - bytes_before
    # Two followers long-poll every replica.fetch.wait.max.ms (500 ms); a fetch or two in
    # flight at either sample is all the skew there is.
    assert handled >= 8, (handled, received)
    one_partition = _one_partition_fetch_bytes(topic_name)
    assert received / handled < one_partition, (
        f"{received} bytes in {handled} fetches: the followers still list partitions "
        f"(one partition takes {one_partition} bytes)"
    )

    # Kafka's ReplicationBytesInPerSec and ReplicationBytesOutPerSec: at RF 3 with every
    # follower caught up, the followers appended each produced byte twice, as fetched.
    totals = [_metrics(b) for b in cluster.brokers.values()]
    produced = sum(t[("brokerd_bytes_in_total", ())] for t in totals)
    replicated_in = sum(t[("brokerd_replication_bytes_in_total", ())] for t in totals)
    replicated_out = sum(t[("brokerd_replication_bytes_out_total", ())] for t in totals)
    assert produced > 0
    assert replicated_in == 2 * produced, (replicated_in, produced)
    assert replicated_out >= replicated_in


@pytest.fixture
def manual_cluster(zookeeper, tmp_path_factory):
    made = Cluster(zookeeper, tmp_path_factory, auto_leader_rebalance_enable="false").start()
    yield made
    made.kill_all()


def _led_by(meta, topic: str, broker_id: int) -> list[int]:
    return [p for p, state in meta["topics"][topic].items() if state["leader"] == broker_id]


def test_followers_in_fetch_sessions_catch_up_through_leader_changes(manual_cluster, topic_name):
    cluster = manual_cluster
    create_topic(cluster, topic_name, PARTITIONS)
    _produce(cluster, topic_name, 5 * PARTITIONS)
    victim = cluster.brokers[1]
    assert _led_by(cluster.metadata(topic_name), topic_name, 1)

    # Its leader dies: the other two lead everything; the victim misses these records.
    victim.kill()
    cluster.wait_for(
        lambda m: (
            not _led_by(m, topic_name, 1)
            and all(s["leader"] in m["brokers"] for s in m["topics"][topic_name].values())
        ),
        what="new leaders for the dead broker's partitions",
    )
    _produce(cluster, topic_name, 5 * PARTITIONS)
    # It comes back as a follower of everything and catches up in new sessions.
    victim.start()
    cluster.wait_full_isr(topic_name, PARTITIONS)
    _produce(cluster, topic_name, 5 * PARTITIONS)

    # It leads again: the others' fetchers return to it with sessions it never had.
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    partitions = [TopicPartition(topic_name, p) for p in range(PARTITIONS)]
    admin.elect_leaders(ElectionType.PREFERRED, partitions).result(30)
    cluster.wait_for(lambda m: _led_by(m, topic_name, 1), what="the restarted broker leading again")
    _produce(cluster, topic_name, 5 * PARTITIONS)
    cluster.wait_full_isr(topic_name, PARTITIONS)
    time.sleep(1.5)  # followers learn the last HW a fetch after their last append
    cluster.stop_all()

    for broker in cluster.brokers.values():
        for partition in range(PARTITIONS):
            hw = checkpointed_high_watermark(broker.dir / "logs", topic_name, partition)
            assert hw == 20, (broker.broker_id, partition, hw)
