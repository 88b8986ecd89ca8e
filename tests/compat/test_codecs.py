"""Every codec, through two independent clients: keys, headers and timestamps come back
byte-identical at contiguous offsets."""

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
COUNT = 40
BASE_TS = 1_700_000_000_000


def _expected(codec):
    return [
        (
            b"key-%d" % i,
            (b"%s value %d " % (codec.encode(), i)) * (i % 7 + 1),
            [("trace", b"t%d" % i), ("empty", b"")],
            BASE_TS + i,
        )
        for i in range(COUNT)
    ]


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_every_codec(broker, topic_name, codec):
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        compression_type=None if codec == "none" else codec,
        linger_ms=20,
    )
    for key, value, headers, ts in _expected(codec):
        producer.send(
            topic_name, key=key, value=value, headers=headers, timestamp_ms=ts, partition=0
        )
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
        enable_auto_commit=False,
        group_id=None,
    )
    from kafka import TopicPartition as KTopicPartition

    consumer.assign([KTopicPartition(topic_name, 0)])
    got = []
    for message in consumer:
        got.append(message)
        if len(got) == COUNT:
            break
    consumer.close()
    assert [m.offset for m in got] == list(range(COUNT))
    assert [(m.key, m.value, list(m.headers), m.timestamp) for m in got] == [
        (k, v, h, ts) for k, v, h, ts in _expected(codec)
    ]


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_every_codec(broker, topic_name, codec):
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "compression.type": codec,
            "linger.ms": 20,
            "enable.idempotence": True,
        }
    )
    for key, value, headers, ts in _expected(codec):
        producer.produce(
            topic_name, key=key, value=value, headers=headers, timestamp=ts, partition=0
        )
    assert producer.flush(15) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "codec-check",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic_name, 0, 0)])
    got = []
    while len(got) < COUNT:
        message = consumer.poll(10)
        assert message is not None, f"stalled after {len(got)}"
        assert message.error() is None, message.error()
        got.append(message)
    consumer.close()
    assert [m.offset() for m in got] == list(range(COUNT))
    assert [(m.key(), m.value(), m.headers(), m.timestamp()[1]) for m in got] == [
        (k, v, h, ts) for k, v, h, ts in _expected(codec)
    ]
