"""Metadata, topic auto-creation and DescribeCluster through real clients."""

import json
import subprocess

from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient, KafkaProducer


def test_kafka_python_auto_creates_topic(broker, topic_name):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, max_block_ms=10000)
    try:
        assert producer.partitions_for(topic_name) == {0, 1, 2}
    finally:
        producer.close()


def test_confluent_admin_lists_cluster(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    metadata = admin.list_topics(timeout=10)
    assert list(metadata.brokers) == [1]
    assert metadata.brokers[1].port == broker.port
    assert metadata.cluster_id and len(metadata.cluster_id) == 22
    assert metadata.controller_id == 1


def test_confluent_auto_creates_with_num_partitions(broker, topic_name):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    metadata = admin.list_topics(topic=topic_name, timeout=10)
    topic = metadata.topics[topic_name]
    assert topic.error is None
    assert sorted(topic.partitions) == [0, 1, 2]
    assert {(p.leader, tuple(p.replicas), tuple(p.isrs)) for p in topic.partitions.values()} == {
        (1, (1,), (1,))
    }


def test_kafka_python_describe_cluster(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        cluster = admin.describe_cluster()
    finally:
        admin.close()
    assert cluster["controller_id"] == 1
    assert [b.get("node_id", b.get("broker_id")) for b in cluster["brokers"]] == [1]


def test_kcat_metadata(broker, topic_name):
    out = subprocess.run(
        ["kcat", "-b", broker.bootstrap, "-L", "-J", "-t", topic_name],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    listing = json.loads(out.stdout)
    assert listing["brokers"][0]["id"] == 1
    assert [t["topic"] for t in listing["topics"]] == [topic_name]
    assert len(listing["topics"][0]["partitions"]) == 3
