"""Produce and consume through real clients: kafka-python, confluent-kafka, aiokafka, kcat."""

import subprocess

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer


def test_kafka_python_roundtrip(broker, topic_name):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    for i in range(20):
        producer.send(topic_name, key=b"k%d" % i, value=b"v%d" % i, partition=i % 3)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(
        topic_name,
        bootstrap_servers=broker.bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
        enable_auto_commit=False,
        group_id=None,
    )
    values = sorted(m.value for m in consumer)
    consumer.close()
    assert values == sorted(b"v%d" % i for i in range(20))


def test_confluent_idempotent_roundtrip_with_compression(broker, topic_name):
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "enable.idempotence": True,
            "compression.type": "lz4",
            "linger.ms": 5,
        }
    )
    errors = []
    for i in range(300):
        producer.produce(
            topic_name,
            key=b"%d" % i,
            value=b"x" * 100 + b"%d" % i,
            partition=0,
            on_delivery=lambda err, msg: err and errors.append(err),
        )
    assert producer.flush(15) == 0
    assert not errors
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "unused",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic_name, 0, 0)])
    got = []
    while len(got) < 300:
        message = consumer.poll(10)
        assert message is not None, f"stalled after {len(got)} messages"
        assert message.error() is None, message.error()
        got.append((message.offset(), message.key()))
    consumer.close()
    assert got == [(i, b"%d" % i) for i in range(300)]


async def test_aiokafka_roundtrip_and_long_poll(broker, topic_name):
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
    await producer.start()
    consumer = AIOKafkaConsumer(
        bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest", fetch_max_wait_ms=5000
    )
    await consumer.start()
    try:
        from aiokafka import TopicPartition as AioTopicPartition

        await producer.send_and_wait(topic_name, b"first", partition=1)
        consumer.assign([AioTopicPartition(topic_name, 1)])
        first = await consumer.getone()
        assert first.value == b"first"
        # The consumer is now parked in the broker's purgatory; an append must wake it.
        import asyncio

        waiting = asyncio.ensure_future(consumer.getone())
        await asyncio.sleep(0.3)
        await producer.send_and_wait(topic_name, b"second", partition=1)
        second = await asyncio.wait_for(waiting, 10)
        assert (second.offset, second.value) == (1, b"second")
    finally:
        await consumer.stop()
        await producer.stop()


def test_kcat_produce_and_consume(broker, topic_name):
    lines = "\n".join(f"line-{i}" for i in range(10)) + "\n"
    subprocess.run(
        ["kcat", "-b", broker.bootstrap, "-P", "-t", topic_name, "-p", "0"],
        input=lines,
        text=True,
        check=True,
        timeout=30,
    )
    out = subprocess.run(
        [
            "kcat",
            "-b",
            broker.bootstrap,
            "-C",
            "-t",
            topic_name,
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert out.stdout.split() == [f"line-{i}" for i in range(10)]
