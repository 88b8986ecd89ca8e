"""Every codec through aiokafka and kcat: keys, headers and timestamps come back identical
at contiguous offsets (test_codecs.py does the same for kafka-python and confluent-kafka)."""

import subprocess
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from kafka import KafkaProducer

from tests.client_reads import confluent_read
from tests.codec_roundtrip import CODECS, COUNT, expected_records


@pytest.mark.parametrize("codec", CODECS)
async def test_aiokafka_every_codec(broker, topic_name, codec):
    producer = AIOKafkaProducer(
        bootstrap_servers=broker.bootstrap,
        compression_type=None if codec == "none" else codec,
        linger_ms=20,
    )
    await producer.start()
    try:
        sent = [
            await producer.send(
                topic_name, value, key=key, partition=0, timestamp_ms=ts, headers=headers
            )
            for key, value, headers, ts in expected_records(codec)
        ]
        await producer.flush()
        assert [(await f).offset for f in sent] == list(range(COUNT))
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    try:
        consumer.assign([AioTopicPartition(topic_name, 0)])
        got = []
        while len(got) < COUNT:
            batch = await consumer.getmany(timeout_ms=10_000)
            assert batch, f"stalled after {len(got)}"
            for messages in batch.values():
                got.extend(messages)
    finally:
        await consumer.stop()
    assert [m.offset for m in got] == list(range(COUNT))
    assert [(m.key, m.value, list(m.headers), m.timestamp) for m in got] == [
        (k, v, h, ts) for k, v, h, ts in expected_records(codec)
    ]


def _kcat(*args, stdin=None):
    return subprocess.run(
        ["kcat", *args], input=stdin, capture_output=True, check=True, timeout=60
    ).stdout


def _kcat_read(broker, topic):
    """kcat -C from the beginning: (offset, key, value, headers, timestamp) per record."""
    out = _kcat(
        *("-C", "-b", broker.bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-e"),
        *("-f", "%o\t%k\t%s\t%h\t%T\n"),
    )
    rows = [line.split(b"\t") for line in out.splitlines()]
    return [(int(o), k, v, h, int(ts)) for o, k, v, h, ts in rows]


def _stored_codecs(broker, topic) -> list[int]:
    """The compression attribute of every stored batch, from a raw Fetch (no client
    decompresses in between)."""
    from brokerd.records.batch import RecordBatch
    from tests.integration.wire import WireClient
    from tests.integration.wire_calls import fetch

    with WireClient(broker.bootstrap) as client:
        records = fetch(client, topic, 0).responses[0].partitions[0].records
    codecs, position = [], 0
    while position + 12 <= len(records):
        length = int.from_bytes(records[position + 8 : position + 12], "big")
        codecs.append(RecordBatch(records[position : position + 12 + length]).compression)
        position += 12 + length
    assert codecs, "no batch stored"
    return codecs


CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@pytest.mark.parametrize("codec", CODECS)
def test_kcat_produces_every_codec(broker, topic_name, codec):
    # kcat takes no per-record timestamps: librdkafka stamps CreateTime when producing.
    lines = [(key, value) for key, value, _, _ in expected_records(codec)]
    before = int(time.time() * 1000)
    _kcat(
        *("-P", "-b", broker.bootstrap, "-t", topic_name, "-p", "0", "-K", "\t"),
        *("-H", "trace=abc", "-H", "empty="),
        # One batch: librdkafka sends a batch that compression would not shrink uncompressed.
        *("-X", f"compression.codec={codec}", "-X", "linger.ms=1000"),
        stdin=b"".join(k + b"\t" + v + b"\n" for k, v in lines),
    )
    after = int(time.time() * 1000)
    got = _kcat_read(broker, topic_name)
    assert [o for o, *_ in got] == list(range(COUNT))
    assert [(k, v) for _, k, v, _, _ in got] == lines
    assert {h for *_, h, _ in got} == {b"trace=abc,empty="}
    timestamps = [ts for *_, ts in got]
    assert all(before <= ts <= after for ts in timestamps)
    # librdkafka 2.0.2 compresses gzip, snappy and lz4 only for a broker whose Produce range
    # includes v0 (it checks Produce [0, 0]), though it then sends v7: brokerd advertises
    # Produce v0-v9, so every codec really is compressed on the wire and on disk.
    assert set(_stored_codecs(broker, topic_name)) == {CODEC_IDS[codec]}

    # An independent reader sees the very same records.
    seen = confluent_read(broker.bootstrap, topic_name, 0, COUNT)
    assert [(k, v, h, ts) for _, k, v, h, ts in seen] == [
        (k, v, [("trace", b"abc"), ("empty", b"")], ts)
        for (k, v), ts in zip(lines, timestamps, strict=True)
    ]


@pytest.mark.parametrize("codec", CODECS)
def test_kcat_consumes_every_codec(broker, topic_name, codec):
    """Batches compressed in each codec (by kafka-python) decode through kcat."""
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        compression_type=None if codec == "none" else codec,
        linger_ms=20,
    )
    expected = [(key, value, ts) for key, value, _, ts in expected_records(codec)]
    for key, value, ts in expected:
        producer.send(
            topic_name,
            key=key,
            value=value,
            headers=[("h", b"v%d" % ts)],
            timestamp_ms=ts,
            partition=0,
        )
    producer.flush()
    producer.close()
    assert set(_stored_codecs(broker, topic_name)) == {CODEC_IDS[codec]}
    assert _kcat_read(broker, topic_name) == [
        (i, k, v, b"h=v%d" % ts, ts) for i, (k, v, ts) in enumerate(expected)
    ]
