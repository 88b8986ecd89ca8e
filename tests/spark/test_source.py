"""The reader's options, schema and ranges against a real broker, as Spark's Kafka source."""

from __future__ import annotations

import json
import time

import pytest

from brokerd.client import ConfigResource, NewTopic, SyncClient
from tests.integration.test_admin_api import wait_cleaner_done_with

from .conftest import produce_confluent


def read(spark, broker, **options):
    reader = spark.read.format("brokerd").option("kafka.bootstrap.servers", broker.bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def offsets_of(frame) -> list[tuple[str, int, int]]:
    return sorted(
        (r.topic, r.partition, r.offset)
        for r in frame.select("topic", "partition", "offset").collect()
    )


@pytest.fixture
def filled(broker, client, make_topic):
    """A 3-partition topic with 200 records per partition (produced to each partition)."""
    topic = make_topic(3)
    for p in range(3):
        produce_confluent(
            broker.bootstrap,
            topic,
            [(b"k%d-%d" % (p, i), b"v%d-%d" % (p, i), [("n", b"%d" % i)]) for i in range(200)],
            partition=p,
        )
    return topic


def test_schema_and_values_match_sparks_kafka_source(spark, broker, filled):
    frame = read(spark, broker, subscribe=filled)
    assert [(f.name, f.dataType.simpleString()) for f in frame.schema] == [
        ("key", "binary"),
        ("value", "binary"),
        ("topic", "string"),
        ("partition", "int"),
        ("offset", "bigint"),
        ("timestamp", "timestamp"),
        ("timestampType", "int"),
        ("headers", "array<struct<key:string,value:binary>>"),
    ]
    row = frame.where("partition = 2 AND offset = 7").collect()[0]
    assert (row.key, row.value, row.topic, row.timestampType) == (b"k2-7", b"v2-7", filled, 0)
    assert [(h.key, h.value) for h in row.headers] == [("n", b"7")]
    assert abs(row.timestamp.timestamp() - time.time()) < 600
    assert frame.count() == 600


def test_offsets_json_and_splitting(spark, broker, filled):
    frame = read(
        spark,
        broker,
        subscribe=filled,
        startingOffsets=json.dumps({filled: {"0": 10, "1": -2, "2": -1}}),
        endingOffsets=json.dumps({filled: {"0": 50, "1": 120}}),
        maxRecordsPerPartition="25",
    )
    assert offsets_of(frame) == [(filled, 0, o) for o in range(10, 50)] + [
        (filled, 1, o) for o in range(0, 120)
    ]
    # 40 and 120 offsets in pieces of at most 25: 2 + 5 input partitions.
    assert frame.rdd.getNumPartitions() == 7


def test_ending_offsets_beyond_the_high_watermark_read_only_what_is_there(spark, broker, filled):
    frame = read(spark, broker, subscribe=filled, endingOffsets=json.dumps({filled: {"0": 10_000}}))
    assert frame.where("partition = 0").count() == 200


def test_subscribe_pattern_and_latest(spark, broker, client, make_topic, filled):
    other = make_topic(1, "-other")
    produce_confluent(broker.bootstrap, other, [(None, b"x")] * 5)
    prefix = filled.rsplit("-", 1)[0]
    frame = read(spark, broker, subscribePattern=f"{prefix}-.*")
    counts = {r["topic"]: r["count"] for r in frame.groupBy("topic").count().collect()}
    assert counts == {filled: 600, other: 5}
    assert read(spark, broker, subscribe=filled, startingOffsets="latest").count() == 0


def test_starting_and_ending_timestamps(spark, broker, client, make_topic):
    topic = make_topic(2)
    produce_confluent(broker.bootstrap, topic, [(b"old%d" % i, b"a") for i in range(100)])
    time.sleep(0.02)
    middle = int(time.time() * 1000)
    time.sleep(0.02)
    produce_confluent(broker.bootstrap, topic, [(b"new%d" % i, b"b") for i in range(50)])
    time.sleep(0.02)
    after = int(time.time() * 1000)
    frame = read(spark, broker, subscribe=topic, startingTimestamp=str(middle))
    assert sorted(r.key for r in frame.select("key").collect()) == sorted(
        b"new%d" % i for i in range(50)
    )
    by_partition = read(
        spark,
        broker,
        subscribe=topic,
        startingOffsetsByTimestamp=json.dumps({topic: {"0": middle, "1": after}}),
        endingTimestamp=str(after),
    )
    found = by_partition.select("partition", "value").collect()
    assert found and all(r.partition == 0 and r.value == b"b" for r in found)


def test_bad_options_are_refused_with_a_message(spark, broker, filled):
    with pytest.raises(Exception, match="exactly one of subscribe"):
        read(spark, broker).count()
    with pytest.raises(Exception, match="startingOffsets must be"):
        read(spark, broker, subscribe=filled, startingOffsets="{oops").count()
    with pytest.raises(Exception, match="kafka.bootstrap.servers is required"):
        spark.read.format("brokerd").option("subscribe", filled).load().count()


def test_deleted_records_fail_unless_data_loss_is_allowed(spark, broker, client, filled):
    client.admin.delete_records({(filled, 0): 30})
    start = json.dumps({filled: {"0": 5}})
    with pytest.raises(Exception, match="below the log start offset 30"):
        read(spark, broker, subscribe=filled, startingOffsets=start).count()
    frame = read(spark, broker, subscribe=filled, startingOffsets=start, failOnDataLoss="false")
    assert frame.where("partition = 0").agg({"offset": "min"}).collect()[0][0] == 30
    assert frame.count() == 570


def test_compacted_topic_gaps_read_exactly(spark, make_broker, topic_name):
    broker = make_broker(num_partitions="1", log_cleaner_backoff_ms="200").start()
    configs = {
        "cleanup.policy": "compact",
        "segment.bytes": "2000",
        "min.cleanable.dirty.ratio": "0.01",
        "delete.retention.ms": "0",
    }
    with SyncClient(broker.bootstrap) as client:
        client.admin.create_topics([NewTopic(topic_name, 1, 1, configs)])
        producer = client.producer(linger=0)
        for round_ in range(20):
            for key in range(5):
                producer.send(
                    topic_name, b"v%d-%d" % (key, round_), b"k%d" % key, partition=0
                ).result(10)
        consumer = client.consumer()
        deadline = time.monotonic() + 60
        while len(records := consumer.fetch_range(topic_name, 0, 0, 100)) == 100:
            assert time.monotonic() < deadline, "the cleaner never compacted the topic"
            time.sleep(0.5)
        client.admin.incremental_alter_configs(
            {ConfigResource.topic(topic_name): [("cleanup.policy", "SET", "delete")]}
        )
        wait_cleaner_done_with(broker, topic_name)
        records = consumer.fetch_range(topic_name, 0, 0, 100)
    expected = [(r.offset, r.key, r.value) for r in records]
    assert len(expected) < 100 and expected[-1][0] == 99
    # Ranges of 7 offsets: many start or end inside a gap, some hold nothing at all.
    frame = read(spark, broker, subscribe=topic_name, maxRecordsPerPartition="7")
    assert frame.rdd.getNumPartitions() == 15
    found = sorted(
        (r.offset, r.key, r.value) for r in frame.select("offset", "key", "value").collect()
    )
    assert found == expected
