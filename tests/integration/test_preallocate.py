"""A broker with log.preallocate=true: segment files reserved at segment.bytes, and kill -9
then restart keeps every acknowledged record (recovery stops at the zero tail)."""

import os

from kafka import KafkaProducer

from tests.client_reads import kafka_python_values_by_offset

SEGMENT_BYTES = 64 << 10
PADDING = b"." * 100


def _value(i: int) -> bytes:
    return b"record-%d" % i + PADDING


def _produce(broker, topic, start, count):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks=1, linger_ms=2)
    futures = [producer.send(topic, value=_value(i)) for i in range(start, start + count)]
    producer.flush()
    offsets = [f.get(10).offset for f in futures]
    producer.close()
    return offsets


def test_kill_9_with_preallocated_segments_loses_nothing_acknowledged(make_broker, topic_name):
    broker = make_broker(
        num_partitions="1", log_preallocate="true", log_segment_bytes=str(SEGMENT_BYTES)
    ).start()
    offsets = _produce(broker, topic_name, 0, 3000)  # ~350 KiB: several rolls
    partition_dir = broker.dir / "logs" / f"{topic_name}-0"
    *rolled, active = sorted(partition_dir.glob("*.log"))
    assert rolled and all(p.stat().st_size < SEGMENT_BYTES for p in rolled)  # trimmed at roll
    assert active.stat().st_size == SEGMENT_BYTES  # reserved, mostly zeros
    broker.kill()  # SIGKILL: the active segment keeps its zero tail
    broker.start()
    offsets += _produce(broker, topic_name, 3000, 100)  # appends go after the data
    seen = kafka_python_values_by_offset(broker.bootstrap, topic_name)
    for i, offset in enumerate(offsets):
        assert seen.get(offset) == _value(i)
    assert sorted(seen) == list(range(len(offsets)))
    assert "invalid bytes" not in broker.output  # the zero tail is not reported as damage
    broker.terminate()
    sizes = [os.path.getsize(p) for p in sorted(partition_dir.glob("*.log"))]
    assert all(size < SEGMENT_BYTES for size in sizes)  # a clean shutdown trims the active one
