"""brokerd.client's producer and consumer against a real broker, cross-checked with
kafka-python and confluent-kafka in both directions, for every codec."""

import asyncio
import os

import pytest
from confluent_kafka import Producer as ConfluentProducer
from kafka import KafkaProducer
from kafka.partitioner.default import DefaultPartitioner as KafkaPythonPartitioner

from brokerd.client import (
    AdminClient,
    Cluster,
    ConfigResource,
    Consumer,
    ErrorCode,
    KafkaResponseError,
    KafkaTimeoutError,
    NewTopic,
    OffsetOutOfRangeError,
    Producer,
    murmur2,
    partition_for_key,
)
from brokerd.client.consumer import decode_partition
from brokerd.records.batch import SimpleRecord, build_batch
from brokerd.records.control import COMMIT, build_end_txn_marker
from brokerd.records.legacy import build_message_set
from tests.client_reads import confluent_read, kafka_python_all, kafka_python_read
from tests.codec_roundtrip import BASE_TS, CODECS, COUNT, expected_records
from tests.integration.test_admin_api import wait_cleaner_done_with


async def create_topic(cluster, name, partitions=1, **configs):
    await AdminClient(cluster).create_topics([NewTopic(name, partitions, 1, configs)])


@pytest.mark.parametrize("codec", CODECS)
async def test_our_producer_is_read_identically_by_kafka_python_and_confluent(
    broker, topic_name, codec
):
    async with Cluster(broker.bootstrap) as cluster:
        await create_topic(cluster, topic_name)
        async with Producer(cluster, compression_type=codec, idempotent=True, linger=0.02) as p:
            futures = [
                await p.send(topic_name, v, k, headers=h, timestamp=ts, partition=0)
                for k, v, h, ts in expected_records(codec)
            ]
            await p.flush()
        offsets = [f.result().offset for f in futures]
    assert offsets == list(range(COUNT))
    want = [(i, k, v, h, ts) for i, (k, v, h, ts) in enumerate(expected_records(codec))]
    assert kafka_python_read(broker.bootstrap, topic_name, 0, COUNT) == want
    assert confluent_read(broker.bootstrap, topic_name, 0, COUNT) == want


@pytest.mark.parametrize("codec", CODECS)
async def test_records_of_kafka_python_and_confluent_are_read_identically(
    broker, topic_name, codec
):
    confluent = ConfluentProducer(
        {"bootstrap.servers": broker.bootstrap, "compression.type": codec, "linger.ms": 20}
    )
    kafka_python = KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        compression_type=None if codec == "none" else codec,
        linger_ms=20,
    )
    async with Cluster(broker.bootstrap) as cluster:
        await create_topic(cluster, topic_name, partitions=2)
        for k, v, h, ts in expected_records(codec):
            confluent.produce(topic_name, key=k, value=v, headers=h, timestamp=ts, partition=0)
            kafka_python.send(topic_name, key=k, value=v, headers=h, timestamp_ms=ts, partition=1)
        assert confluent.flush(15) == 0
        kafka_python.flush()
        kafka_python.close()
        consumer = Consumer(cluster)
        for partition in (0, 1):
            records = await consumer.fetch_range(topic_name, partition, 0, COUNT)
            assert [
                (r.offset, r.key, r.value, list(r.headers), r.timestamp, r.timestamp_type)
                for r in records
            ] == [(i, k, v, h, ts, 0) for i, (k, v, h, ts) in enumerate(expected_records(codec))]
            assert all((r.topic, r.partition) == (topic_name, partition) for r in records)


async def test_fetch_range_starts_inside_a_batch_and_stops_at_its_end(broker, topic_name):
    async with Cluster(broker.bootstrap) as cluster:
        await create_topic(cluster, topic_name)
        async with Producer(cluster) as producer:
            for start in range(0, 30, 10):  # three batches of ten
                records = [SimpleRecord(b"v%d" % i, b"k") for i in range(start, start + 10)]
                await producer.produce_batch(topic_name, 0, records)
        consumer = Consumer(cluster)
        got = await consumer.fetch_range(topic_name, 0, 5, 25)
        assert [r.offset for r in got] == list(range(5, 25))
        assert [r.value for r in got] == [b"v%d" % i for i in range(5, 25)]
        assert await consumer.fetch_range(topic_name, 0, 7, 7) == []
        # Past the high watermark it waits, then says so.
        with pytest.raises(KafkaTimeoutError, match="high watermark is 30"):
            await consumer.fetch_range(topic_name, 0, 28, 31, timeout=0.5)


async def test_offset_out_of_range_is_surfaced(broker, topic_name):
    async with Cluster(broker.bootstrap) as cluster:
        await create_topic(cluster, topic_name)
        async with Producer(cluster) as producer:
            await producer.produce_batch(topic_name, 0, [SimpleRecord(b"x")] * 3)
        consumer = Consumer(cluster)
        with pytest.raises(OffsetOutOfRangeError) as caught:
            await consumer.fetch_range(topic_name, 0, 10, 20)
        assert caught.value.error_code == ErrorCode.offset_out_of_range
        assert (caught.value.topic, caught.value.partition, caught.value.offset) == (
            topic_name,
            0,
            10,
        )
        assert "OFFSET_OUT_OF_RANGE" in str(caught.value)
        consumer.assign({(topic_name, 0): 99})
        with pytest.raises(OffsetOutOfRangeError):
            await consumer.poll(0)


async def test_poll_follows_positions_and_waits_for_new_records(broker, topic_name):
    async with Cluster(broker.bootstrap) as cluster:
        await create_topic(cluster, topic_name, partitions=3)
        consumer = Consumer(cluster, max_wait=2.0)
        consumer.assign({(topic_name, p): 0 for p in range(3)})
        async with Producer(cluster) as producer:
            later = asyncio.create_task(_produce_later(producer, topic_name))
            records = []
            while len(records) < 30:
                records += await consumer.poll()
            await later
        by_partition = {p: [r.offset for r in records if r.partition == p] for p in range(3)}
        assert by_partition == {p: list(range(10)) for p in range(3)}
        assert {consumer.position(topic_name, p) for p in range(3)} == {10}


async def _produce_later(producer, topic):
    await asyncio.sleep(0.3)
    for partition in range(3):
        for i in range(10):
            await producer.send(topic, b"%d" % i, partition=partition)
    await producer.flush()


async def test_acks_zero_one_and_all(broker, topic_name):
    async with Cluster(broker.bootstrap) as cluster:
        await create_topic(cluster, topic_name)
        for acks, expected_offset in ((1, 0), (-1, 1), (0, -1)):
            async with Producer(cluster, acks=acks) as producer:
                metadata = await producer.send_and_wait(topic_name, b"a%d" % acks, partition=0)
                assert metadata.offset == expected_offset
        records = await Consumer(cluster).fetch_range(topic_name, 0, 0, 3, timeout=10)
        assert [r.value for r in records] == [b"a1", b"a-1", b"a0"]


async def test_per_partition_errors_are_raised_with_their_code(broker, topic_name):
    async with Cluster(broker.bootstrap, retries=1, retry_backoff=0.01) as cluster:
        await create_topic(cluster, topic_name, **{"max.message.bytes": "1000"})
        async with Producer(cluster) as producer:
            with pytest.raises(KafkaResponseError) as too_large:
                await producer.send_and_wait(topic_name, b"x" * 5000, partition=0)
            assert too_large.value.error_code == ErrorCode.message_too_large
            assert too_large.value.name == "MESSAGE_TOO_LARGE"
            with pytest.raises(KafkaResponseError) as missing:
                await producer.produce_batch(topic_name, 5, [SimpleRecord(b"x")])
            assert missing.value.error_code == ErrorCode.unknown_topic_or_partition
            with pytest.raises(KafkaResponseError) as no_topic:
                await producer.send("no-such-topic-" + topic_name, b"x")
            assert no_topic.value.error_code == ErrorCode.unknown_topic_or_partition


async def test_idempotent_resend_of_the_same_batch_writes_it_once(broker, topic_name):
    async with Cluster(broker.bootstrap) as cluster:
        await create_topic(cluster, topic_name)
        async with Producer(cluster, idempotent=True) as producer:
            first = await producer.build(topic_name, 0, [SimpleRecord(b"a"), SimpleRecord(b"b")])
            second = await producer.build(topic_name, 0, [SimpleRecord(b"c")])
            assert (first.base_sequence, second.base_sequence) == (0, 2)
            assert first.producer_id >= 0
            written = await producer.send_batch(first)
            again = await producer.send_batch(first)  # a retry after a lost answer
            assert again.base_offset == written.base_offset == 0
            assert (await producer.send_batch(second)).base_offset == 2
            assert (await producer.send_batch(first)).base_offset == 0  # still a duplicate
        # Without idempotence the same bytes are written twice: the dedup is the broker's.
        async with Producer(cluster) as plain:
            batch = await plain.build(topic_name, 0, [SimpleRecord(b"d")])
            assert (await plain.send_batch(batch)).base_offset == 3
            assert (await plain.send_batch(batch)).base_offset == 4
        records = await Consumer(cluster).fetch_range(topic_name, 0, 0, 5)
    assert [r.value for r in records] == [b"a", b"b", b"c", b"d", b"d"]
    assert [m.value for m in _kafka_python_all(broker, topic_name)] == [
        b"a",
        b"b",
        b"c",
        b"d",
        b"d",
    ]


def _kafka_python_all(broker, topic):
    return kafka_python_all(broker.bootstrap, topic)


def test_murmur2_matches_kafkas_documented_values_and_kafka_python():
    # Kafka's UtilsTest.testMurmur2 (clients/src/test/java/org/apache/kafka/common/utils).
    documented = {
        b"21": -973932308,
        b"foobar": -790332482,
        b"a-little-bit-long-string": -985981536,
        b"a-little-bit-longer-string": -1486304829,
        b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
        bytes([ord("a"), ord("b"), ord("c")]): 479470107,
    }
    assert {key: murmur2(key) for key in documented} == documented
    theirs = KafkaPythonPartitioner()
    for count in (1, 3, 7, 64):
        topology = _Partitions(count)  # what kafka-python's partitioner asks of its cluster
        for _ in range(1000):
            key = os.urandom(os.urandom(1)[0] % 40)
            expected = theirs.partition("t", key, key, b"v", b"v", topology)
            assert partition_for_key(key, count) == expected


class _Partitions:
    def __init__(self, count):
        self.count = count

    def topics(self):
        return {"t"}

    def partitions_for_topic(self, topic):
        return set(range(self.count))

    def available_partitions_for_topic(self, topic):
        return set(range(self.count))


async def test_keyed_records_land_where_kafka_python_puts_them(broker, topic_name):
    keys = [b"user-%d" % i for i in range(60)]
    async with Cluster(broker.bootstrap) as cluster:
        await create_topic(cluster, topic_name, partitions=5)
        async with Producer(cluster) as producer:
            ours = [(await producer.send_and_wait(topic_name, b"v", k)).partition for k in keys]
    kafka_python = KafkaProducer(bootstrap_servers=broker.bootstrap)
    theirs = [kafka_python.send(topic_name, key=k, value=b"v").get(10).partition for k in keys]
    kafka_python.close()
    assert ours == theirs
    assert len(set(ours)) == 5


def test_batches_of_every_format_decode_with_gaps_control_batches_and_watermark():
    legacy_v0 = build_message_set(
        [SimpleRecord(b"m0"), SimpleRecord(b"m1", b"k")], magic=0, base_offset=0
    )
    legacy_v1 = build_message_set(
        [SimpleRecord(b"m2", b"k", timestamp=BASE_TS), SimpleRecord(b"m3", timestamp=BASE_TS)],
        magic=1,
        base_offset=2,
        compression_type=1,
    )
    # A compacted batch: offsets 4 and 6 survive of 4..7 (lastOffsetDelta keeps 7).
    compacted = build_batch(
        [
            SimpleRecord(b"v4", b"a", timestamp=BASE_TS),
            SimpleRecord(b"v6", b"b", timestamp=BASE_TS),
        ],
        base_offset=4,
        offset_deltas=[0, 2],
        last_offset_delta=3,
        compression_type=3,
    )
    marker = build_end_txn_marker(
        COMMIT, producer_id=7, producer_epoch=0, coordinator_epoch=0, base_offset=8, timestamp=0
    )
    tail = build_batch([SimpleRecord(b"v%d" % i) for i in range(9, 12)], base_offset=9)
    data = bytes(legacy_v0 + legacy_v1 + compacted + marker + tail)

    records, next_offset = decode_partition("t", 0, data, 1, high_watermark=12)
    assert [(r.offset, r.value) for r in records] == [
        (1, b"m1"),
        (2, b"m2"),
        (3, b"m3"),
        (4, b"v4"),
        (6, b"v6"),
        (9, b"v9"),
        (10, b"v10"),
        (11, b"v11"),
    ]
    assert next_offset == 12
    assert [r.timestamp_type for r in records[:3]] == [-1, 0, 0]
    assert records[1].timestamp == BASE_TS

    records, next_offset = decode_partition("t", 0, data, 5, high_watermark=10)
    assert [r.offset for r in records] == [6, 9]
    assert next_offset == 10


async def test_fetch_range_reads_across_compaction_gaps(make_broker, topic_name):
    broker = make_broker(
        num_partitions="1", log_cleaner_backoff_ms="200", log_retention_check_interval_ms="500"
    ).start()
    async with Cluster(broker.bootstrap) as cluster:
        admin = AdminClient(cluster)
        configs = {
            "cleanup.policy": "compact",
            "segment.bytes": "2000",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "0",
        }
        await admin.create_topics([NewTopic(topic_name, 1, 1, configs)])
        async with Producer(cluster, linger=0) as producer:
            for round_ in range(20):
                for key in range(5):
                    await producer.send_and_wait(
                        topic_name, b"v%d-%d" % (key, round_), b"k%d" % key, partition=0
                    )
        consumer = Consumer(cluster)
        deadline = asyncio.get_running_loop().time() + 60
        while True:
            records = await consumer.fetch_range(topic_name, 0, 0, 100)
            if len(records) < 100 or asyncio.get_running_loop().time() > deadline:
                break
            await asyncio.sleep(0.5)
        assert len(records) < 100, "the cleaner never compacted the topic"
        # Stop the cleaner for this topic, then wait until no pass of it can still be running.
        await admin.incremental_alter_configs(
            {ConfigResource.topic(topic_name): [("cleanup.policy", "SET", "delete")]}
        )
        await asyncio.to_thread(wait_cleaner_done_with, broker, topic_name)
        records = await consumer.fetch_range(topic_name, 0, 0, 100)
        offsets = [r.offset for r in records]
        assert offsets == sorted(set(offsets)) and offsets[-1] == 99
        assert {r.key: r.value for r in records} == {
            b"k%d" % key: b"v%d-19" % key for key in range(5)
        }
        # Every sub-range reads exactly the surviving records inside it, gaps or not.
        for start, end in ((0, 100), (1, 50), (37, 38), (60, 99), (95, 100)):
            inside = await consumer.fetch_range(topic_name, 0, start, end)
            assert [r.offset for r in inside] == [o for o in offsets if start <= o < end]
        # kafka-python agrees on what survived.
        theirs = await asyncio.to_thread(_kafka_python_all, broker, topic_name)
        assert [(m.offset, m.key, m.value) for m in theirs] == [
            (r.offset, r.key, r.value) for r in records
        ]
