"""The REST admin (/api/v3/) against a real broker: resources, changes, errors, audit."""

from __future__ import annotations

import base64

import pytest
from kafka import KafkaProducer

from dashboard.core.models import AuditLog

pytestmark = pytest.mark.django_db(transaction=True)

API = "/api/v3/clusters/local"


def create_topic(api, name: str, partitions: int = 3, **extra):
    body = {"topic_name": name, "partitions_count": partitions, "replication_factor": 1, **extra}
    return api.post(f"{API}/topics", body, format="json")


def test_cluster_resources_follow_rest_proxy_v3(kafka_cluster, viewer_api, broker):
    clusters = viewer_api.get("/api/v3/clusters").json()
    assert clusters["kind"] == "KafkaClusterList"
    assert clusters["metadata"]["self"] == "http://testserver/api/v3/clusters"
    (local,) = clusters["data"]
    assert local["kind"] == "KafkaCluster" and local["cluster_id"] == "local"
    assert local["topics"]["related"] == "http://testserver/api/v3/clusters/local/topics"

    detail = viewer_api.get(API).json()
    assert detail["kafka_cluster_id"]
    assert detail["controller"]["related"].endswith("/brokers/1")

    brokers = viewer_api.get(f"{API}/brokers").json()
    assert brokers["kind"] == "KafkaBrokerList"
    (one,) = brokers["data"]
    assert (one["broker_id"], one["port"], one["is_up"]) == (1, broker.port, True)
    assert one["metadata"]["self"].endswith("/clusters/local/brokers/1")
    assert viewer_api.get(f"{API}/brokers/99").status_code == 404


def test_topic_lifecycle_configs_partitions_records(kafka_cluster, operator_api, topic_name):
    created = create_topic(
        operator_api, topic_name, configs=[{"name": "retention.ms", "value": "3600000"}]
    )
    assert created.status_code == 201, created.json()
    topic = created.json()
    assert (topic["kind"], topic["partitions_count"], topic["replication_factor"]) == (
        "KafkaTopic",
        3,
        1,
    )
    assert topic["metadata"]["self"].endswith(f"/topics/{topic_name}")

    # Configs: described with sources; changed with :alter, PUT, and reset with DELETE.
    configs = operator_api.get(f"{API}/topics/{topic_name}/configs").json()
    retention = next(c for c in configs["data"] if c["name"] == "retention.ms")
    assert (retention["value"], retention["source"]) == ("3600000", "DYNAMIC_TOPIC_CONFIG")
    assert retention["kind"] == "KafkaTopicConfig"
    altered = operator_api.post(
        f"{API}/topics/{topic_name}/configs:alter",
        {
            "data": [
                {"name": "cleanup.policy", "value": "compact"},
                {"name": "retention.ms", "operation": "DELETE"},
            ]
        },
        format="json",
    )
    assert altered.status_code == 204, altered.content
    policy = operator_api.get(f"{API}/topics/{topic_name}/configs/cleanup.policy").json()
    assert policy["value"] == "compact"
    reset = operator_api.get(f"{API}/topics/{topic_name}/configs/retention.ms").json()
    assert reset["is_default"] and reset["value"] == "604800000"
    put = operator_api.put(
        f"{API}/topics/{topic_name}/configs/segment.bytes", {"value": "1048576"}, format="json"
    )
    assert put.status_code == 204
    assert (
        operator_api.get(f"{API}/topics/{topic_name}/configs/segment.bytes").json()["value"]
        == "1048576"
    )
    assert (
        operator_api.delete(f"{API}/topics/{topic_name}/configs/segment.bytes").status_code == 204
    )

    # Produce test records (REST and kafka-python), then see HW and per-replica LEO move.
    produced = operator_api.post(
        f"{API}/topics/{topic_name}/records",
        {
            "partition_id": 1,
            "key": {"type": "STRING", "data": "user-7"},
            "value": {"type": "JSON", "data": {"n": 1}},
            "headers": [{"name": "h", "value": base64.b64encode(b"x").decode()}],
        },
        format="json",
    )
    assert produced.status_code == 200, produced.json()
    assert (produced.json()["partition_id"], produced.json()["offset"]) == (1, 0)
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap_servers)
    for i in range(4):
        producer.send(topic_name, key=f"k{i}".encode(), value=b"v%d" % i, partition=1)
    producer.flush()
    producer.close()

    partition = operator_api.get(f"{API}/topics/{topic_name}/partitions/1").json()
    assert partition["kind"] == "KafkaPartition"
    assert (partition["leader"], partition["isr"], partition["high_watermark"]) == (1, [1], 5)
    assert partition["log_start_offset"] == 0
    (replica,) = partition["replica_states"]
    assert (replica["broker_id"], replica["log_end_offset"], replica["in_sync"]) == (1, 5, True)
    assert replica["size_bytes"] > 0
    replicas = operator_api.get(f"{API}/topics/{topic_name}/partitions/1/replicas").json()
    assert (
        replicas["data"][0]["kind"] == "KafkaReplica" and replicas["data"][0]["log_end_offset"] == 5
    )
    listed = operator_api.get(f"{API}/topics/{topic_name}/partitions").json()
    assert [p["high_watermark"] for p in listed["data"]] == [0, 5, 0]

    segments = operator_api.get(f"{API}/topics/{topic_name}/partitions/1/segments").json()
    assert segments["kind"] == "KafkaSegmentList"
    assert segments["data"][0]["base_offset"] == 0

    # Browse: everything, a key filter, a bounded scan that says how far it got.
    everything = operator_api.get(f"{API}/topics/{topic_name}/records").json()
    assert [r["offset"] for r in everything["data"]] == [0, 1, 2, 3, 4]
    first = everything["data"][0]
    assert first["key"] == {"type": "STRING", "data": "user-7", "size": 6}
    assert first["value"]["data"] == '{"n": 1}'
    assert first["headers"] == [{"name": "h", "value": base64.b64encode(b"x").decode()}]
    assert everything["scan"]["complete"] is True
    by_key = operator_api.get(f"{API}/topics/{topic_name}/records", {"key": "k2"}).json()
    assert [(r["offset"], r["value"]["data"]) for r in by_key["data"]] == [(3, "v2")]
    bounded = operator_api.get(
        f"{API}/topics/{topic_name}/records", {"partition_id": 1, "offset": 1, "max_scan": 2}
    ).json()
    assert [r["offset"] for r in bounded["data"]] == [1, 2]
    assert bounded["scan"]["complete"] is False
    (progress,) = bounded["scan"]["partitions"]
    assert (progress["next_offset"], progress["remaining"]) == (3, 2)
    tail = operator_api.get(f"{API}/topics/{topic_name}/records", {"from_end": 1}).json()
    assert [r["offset"] for r in tail["data"]] == [4]

    # Delete; the topic is gone.
    assert operator_api.delete(f"{API}/topics/{topic_name}").status_code == 204
    gone = operator_api.get(f"{API}/topics/{topic_name}")
    assert gone.status_code == 404 and "not found" in gone.json()["message"]

    actions = list(
        AuditLog.objects.filter(target=topic_name)
        .order_by("timestamp")
        .values_list("action", "succeeded", "username")
    )
    assert actions == [
        ("topic.create", True, "otto"),
        ("topic.configs.alter", True, "otto"),
        ("topic.configs.alter", True, "otto"),
        ("topic.configs.alter", True, "otto"),
        ("record.produce", True, "otto"),
        ("topic.delete", True, "otto"),
    ]


def test_topic_list_paginates_on_the_server(kafka_cluster, operator_api, topic_name):
    names = [f"{topic_name}-{i}" for i in range(3)]
    for name in names:
        assert create_topic(operator_api, name, partitions=1).status_code == 201
    seen, url = [], f"{API}/topics?page_size=2"
    while url:
        page = operator_api.get(url).json()
        assert page["kind"] == "KafkaTopicList" and len(page["data"]) <= 2
        seen += [t["topic_name"] for t in page["data"]]
        url = page["metadata"]["next"]
    assert seen == sorted(seen) and set(names) <= set(seen)


def test_bad_input_gets_4xx_with_a_message_and_failures_are_audited(
    kafka_cluster, operator_api, topic_name
):
    bad_name = create_topic(operator_api, "bad/name")
    assert bad_name.status_code == 400 and bad_name.json()["errors"]["topic_name"]
    too_many = create_topic(operator_api, topic_name, partitions=0)
    assert too_many.status_code == 400
    assert create_topic(operator_api, topic_name).status_code == 201
    again = create_topic(operator_api, topic_name)
    assert again.status_code == 409
    assert again.json()["kafka_error"] == "TOPIC_ALREADY_EXISTS"
    bad_config = operator_api.post(
        f"{API}/topics/{topic_name}/configs:alter",
        {"data": [{"name": "retention.ms", "value": "soon"}]},
        format="json",
    )
    assert bad_config.status_code == 400
    # In Kafka's words, about the topic: not the client's repr of a ConfigResource.
    message = bad_config.json()["message"]
    assert message.startswith(f"topic {topic_name}: retention.ms: ") and "INVALID_CONFIG" in message
    unknown_config = operator_api.post(
        f"{API}/topics/{topic_name}/configs:alter",
        {"data": [{"name": "no.such.config", "value": "1"}]},
        format="json",
    )
    assert unknown_config.status_code == 400
    assert operator_api.get(f"{API}/topics/no-such-topic-{topic_name}").status_code == 404
    assert operator_api.get(f"{API}/topics/{topic_name}/partitions/7").status_code == 404
    assert operator_api.get("/api/v3/clusters/nope/topics").status_code == 404
    not_base64 = operator_api.post(
        f"{API}/topics/{topic_name}/records",
        {"value": {"type": "BINARY", "data": "!!"}},
        format="json",
    )
    assert not_base64.status_code == 400
    both = operator_api.get(f"{API}/topics/{topic_name}/records", {"offset": 0, "timestamp": 5})
    assert both.status_code == 400
    failed = AuditLog.objects.filter(target=topic_name, succeeded=False).values_list(
        "action", flat=True
    )
    assert sorted(failed) == ["topic.configs.alter", "topic.configs.alter", "topic.create"]
