"""Every codec, through two independent clients: keys, headers and timestamps come back
byte-identical at contiguous offsets."""

import pytest
from confluent_kafka import Producer
from kafka import KafkaProducer

from tests.client_reads import confluent_read, kafka_python_read
from tests.codec_roundtrip import CODECS, COUNT, expected_records


def _at_contiguous_offsets(codec):
    return [(i, k, v, h, ts) for i, (k, v, h, ts) in enumerate(expected_records(codec))]


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_every_codec(broker, topic_name, codec):
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        compression_type=None if codec == "none" else codec,
        linger_ms=20,
    )
    for key, value, headers, ts in expected_records(codec):
        producer.send(
            topic_name, key=key, value=value, headers=headers, timestamp_ms=ts, partition=0
        )
    producer.flush()
    producer.close()
    got = kafka_python_read(broker.bootstrap, topic_name, 0, COUNT)
    assert got == _at_contiguous_offsets(codec)


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
    for key, value, headers, ts in expected_records(codec):
        producer.produce(
            topic_name, key=key, value=value, headers=headers, timestamp=ts, partition=0
        )
    assert producer.flush(15) == 0
    got = confluent_read(broker.bootstrap, topic_name, 0, COUNT)
    assert got == _at_contiguous_offsets(codec)
