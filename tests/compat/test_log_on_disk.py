"""What clients write lands in Kafka's on-disk format: dump-log agrees with the clients,
and a compacted topic is really compacted by the broker's cleaner."""

import subprocess
import sys
import time

from kafka import KafkaConsumer, KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from tests.harness import ROOT


def _consume_all(bootstrap, topic, expected=None, last_offset=None):
    """From the beginning until `expected` records or the record at `last_offset` (a
    compacted log has gaps, but keeps its last offset); 30 s without a record ends it."""
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=30000,
        enable_auto_commit=False,
        group_id=None,
    )
    messages = []
    for message in consumer:
        messages.append(message)
        if len(messages) == expected or message.offset == last_offset:
            break
    consumer.close()
    return messages


def test_dump_log_agrees_with_what_clients_read(make_broker, topic_name):
    broker = make_broker(num_partitions="1").start()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, compression_type="gzip")
    for i in range(50):
        producer.send(topic_name, key=b"key-%d" % i, value=b"value-%d" % i, headers=[("h", b"x")])
    producer.flush()
    producer.close()
    consumed = _consume_all(broker.bootstrap, topic_name, 50)
    assert broker.terminate() == 0
    segment = broker.dir / "logs" / f"{topic_name}-0" / "00000000000000000000.log"
    dump = subprocess.run(
        [
            sys.executable,
            "-m",
            "brokerd",
            "dump-log",
            "--deep-iteration",
            "--print-data-log",
            str(segment),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    record_lines = [line for line in dump.splitlines() if line.startswith("| offset:")]
    assert len(record_lines) == len(consumed) == 50
    for line, message in zip(record_lines, consumed, strict=True):
        assert f"offset: {message.offset} " in line
        assert f"key: {message.key.decode()}" in line
        assert f"payload: {message.value.decode()}" in line
    assert "compresscodec: gzip" in dump.lower()
    assert "isvalid: true" in dump


def test_compacted_topic_is_cleaned_by_the_broker(make_broker, topic_name):
    broker = make_broker(
        num_partitions="1", log_cleaner_backoff_ms="200", log_retention_check_interval_ms="500"
    ).start()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics(
        [
            NewTopic(
                topic_name,
                1,
                1,
                topic_configs={
                    "cleanup.policy": "compact",
                    "segment.bytes": "2000",
                    "min.cleanable.dirty.ratio": "0.01",
                    "delete.retention.ms": "0",
                },
            )
        ]
    )
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    for round_ in range(20):
        for key in range(5):
            producer.send(topic_name, key=b"k%d" % key, value=b"v%d-%d" % (key, round_)).get(10)
    producer.flush()
    producer.close()
    latest = {b"k%d" % key: b"v%d-19" % key for key in range(5)}

    deadline = time.monotonic() + 60
    while True:
        # A whole read (through offset 99), so a slow or partial one cannot pass for a
        # compacted log.
        messages = _consume_all(broker.bootstrap, topic_name, last_offset=99)
        if len(messages) < 100 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert len(messages) < 100, "the cleaner never compacted the topic"
    offsets = [m.offset for m in messages]
    assert offsets == sorted(offsets)
    assert offsets[-1] == 99  # the active segment's records keep their offsets
    seen = {}
    for message in messages:
        seen[message.key] = message.value
    assert seen == latest  # every key's latest value survives
