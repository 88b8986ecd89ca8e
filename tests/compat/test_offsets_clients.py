"""Offsets through real clients: kcat -Q (offsets by timestamp), kafka-python's consumer with
assign/seek/offsets_for_times, and every client's auto.offset.reset on OFFSET_OUT_OF_RANGE."""

import json
import subprocess
import time

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as AioTopicPartition
from aiokafka.errors import OffsetOutOfRangeError as AioOffsetOutOfRangeError
from confluent_kafka import Consumer, KafkaError, TopicPartition
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTopicPartition
from kafka.errors import OffsetOutOfRangeError

# Not monotonic on purpose: ListOffsets by time answers the first offset whose timestamp
# is >= the target, not the offset of the nearest timestamp.
TIMESTAMPS = [1000, 2000, 5000, 3000, 4000, 6000, 6000, 7000]


def _produce(broker, topic, timestamps, batch_each=True):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0 if batch_each else 50)
    futures = [
        producer.send(topic, b"v%d" % i, key=b"k%d" % i, timestamp_ms=ts, partition=0)
        for i, ts in enumerate(timestamps)
    ]
    if batch_each:
        for future in futures:
            future.get(10)
    producer.flush()
    producer.close()


def _expected_offset(target):
    return next((i for i, ts in enumerate(TIMESTAMPS) if ts >= target), -1)


def _kcat_query(broker, topic, timestamp):
    out = subprocess.run(
        ["kcat", "-Q", "-b", broker.bootstrap, "-t", f"{topic}:0:{timestamp}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    assert out.startswith(f"{topic} [0] offset "), out
    return int(out.split()[-1])


@pytest.mark.parametrize("batch_each", [True, False], ids=["batch-per-record", "one-batch"])
def test_kcat_offsets_by_timestamp(broker, topic_name, batch_each):
    _produce(broker, topic_name, TIMESTAMPS, batch_each)
    for target in (0, 1000, 1001, 2500, 3000, 4500, 5000, 6000, 6001, 7000):
        assert _kcat_query(broker, topic_name, target) == _expected_offset(target), target
    assert _kcat_query(broker, topic_name, 7001) == -1  # nothing that late
    assert _kcat_query(broker, topic_name, -1) == len(TIMESTAMPS)  # latest
    assert _kcat_query(broker, topic_name, -2) == 0  # earliest


def test_kafka_python_assign_seek_and_offsets_for_times(broker, topic_name):
    _produce(broker, topic_name, TIMESTAMPS)
    partition = KpTopicPartition(topic_name, 0)
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, enable_auto_commit=False, group_id=None
    )
    try:
        consumer.assign([partition])
        assert consumer.beginning_offsets([partition]) == {partition: 0}
        assert consumer.end_offsets([partition]) == {partition: len(TIMESTAMPS)}
        found = consumer.offsets_for_times({partition: 2500})[partition]
        assert (found.offset, found.timestamp) == (2, 5000)
        assert consumer.offsets_for_times({partition: 99_999})[partition] is None

        consumer.seek(partition, 5)
        assert [(m.offset, m.value, m.timestamp) for m in _poll(consumer, 3)] == [
            (5, b"v5", 6000),
            (6, b"v6", 6000),
            (7, b"v7", 7000),
        ]
        consumer.seek(partition, 1)  # back again, into the middle of what was read
        assert [m.offset for m in _poll(consumer, 2)] == [1, 2]
        consumer.seek_to_beginning(partition)
        assert consumer.position(partition) == 0
        consumer.seek_to_end(partition)
        assert consumer.position(partition) == len(TIMESTAMPS)
    finally:
        consumer.close()


def _poll(consumer, count):
    got = []
    for _ in range(50):
        for messages in consumer.poll(timeout_ms=200, max_records=count - len(got)).values():
            got.extend(messages)
        if len(got) >= count:
            return got
    raise AssertionError(f"only {len(got)} of {count} records")


def _truncate_front(broker, topic, offset):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.delete_records({KpTopicPartition(topic, 0): offset})
    finally:
        admin.close()


@pytest.mark.parametrize("reset", ["earliest", "latest", "none"])
def test_kafka_python_auto_offset_reset(broker, topic_name, reset):
    _produce(broker, topic_name, TIMESTAMPS)
    _truncate_front(broker, topic_name, 3)  # offsets 0-2 are gone: below the log start
    partition = KpTopicPartition(topic_name, 0)
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        enable_auto_commit=False,
        group_id=None,
        auto_offset_reset=reset,
    )
    try:
        consumer.assign([partition])
        consumer.seek(partition, 1)
        if reset == "none":
            with pytest.raises(OffsetOutOfRangeError):
                for _ in range(150):  # raises on the first answered fetch; 30 s at most
                    consumer.poll(timeout_ms=200)
            return
        if reset == "earliest":
            assert [m.offset for m in _poll(consumer, 5)] == [3, 4, 5, 6, 7]
        else:
            # The fetch is refused, then the reset's ListOffsets answered: however long that
            # takes, the position goes from 1 straight to the end, never elsewhere.
            deadline = time.monotonic() + 30
            while consumer.position(partition) == 1 and time.monotonic() < deadline:
                assert not consumer.poll(timeout_ms=100)
            assert consumer.position(partition) == len(TIMESTAMPS)
        consumer.seek(partition, 1000)  # past the end: out of range too
        if reset == "earliest":
            assert _poll(consumer, 1)[0].offset == 3
    finally:
        consumer.close()


@pytest.mark.parametrize("reset", ["earliest", "latest", "error"])
def test_confluent_auto_offset_reset(broker, topic_name, reset):
    _produce(broker, topic_name, TIMESTAMPS)
    _truncate_front(broker, topic_name, 3)
    fetch_positions: list[int] = []  # librdkafka's next fetch offset, from its statistics

    def statistics(report: str) -> None:
        partitions = json.loads(report)["topics"].get(topic_name, {}).get("partitions", {})
        if "0" in partitions:
            fetch_positions.append(partitions["0"]["next_offset"])

    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "reset-check",
            "enable.auto.commit": False,
            "auto.offset.reset": reset,
            "statistics.interval.ms": 100,
            "stats_cb": statistics,
        }
    )
    try:
        consumer.assign([TopicPartition(topic_name, 0, 1)])
        if reset == "latest":
            # Produce only once the reset has moved the fetch position to the end: a record
            # sent before the reset lands would be skipped by it.
            deadline = time.monotonic() + 30
            while not fetch_positions or fetch_positions[-1] != len(TIMESTAMPS):
                assert time.monotonic() < deadline, fetch_positions[-5:]
                assert consumer.poll(0.2) is None  # nothing to read until more arrives
            _produce(broker, topic_name, [8000])
            message = consumer.poll(10)
            assert (message.offset(), message.timestamp()[1]) == (len(TIMESTAMPS), 8000)
            return
        message = consumer.poll(10)
        if reset == "earliest":
            assert message is not None and message.error() is None
            assert (message.offset(), message.value()) == (3, b"v3")
        else:
            assert message is not None and message.error() is not None
            assert message.error().code() == KafkaError._AUTO_OFFSET_RESET
            assert "Offset out of range" in message.error().str()
    finally:
        consumer.close()


async def test_aiokafka_auto_offset_reset(broker, topic_name):
    _produce(broker, topic_name, TIMESTAMPS)
    _truncate_front(broker, topic_name, 3)
    partition = AioTopicPartition(topic_name, 0)
    for reset in ("earliest", "none"):
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset=reset)
        await consumer.start()
        try:
            consumer.assign([partition])
            consumer.seek(partition, 1)
            if reset == "earliest":
                message = await consumer.getone()
                assert (message.offset, message.value) == (3, b"v3")
            else:
                with pytest.raises(AioOffsetOutOfRangeError):
                    for _ in range(10):  # raises on the first answered fetch; 30 s at most
                        await consumer.getmany(timeout_ms=3000)
        finally:
            await consumer.stop()
