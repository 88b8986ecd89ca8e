"""What kafka-python and confluent-kafka read back from a broker, for tests that check the
broker against independent clients."""

from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition


def kafka_python_read(bootstrap: str, topic: str, partition: int, count: int) -> list[tuple]:
    """(offset, key, value, headers, timestamp) of the first `count` records, by kafka-python."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=30000,  # a stall, not the end: the loop stops at `count`
        enable_auto_commit=False,
        group_id=None,
    )
    consumer.assign([KafkaTopicPartition(topic, partition)])
    got = []
    for message in consumer:
        got.append(message)
        if len(got) == count:
            break
    consumer.close()
    return [(m.offset, m.key, m.value, list(m.headers), m.timestamp) for m in got]


def confluent_read(bootstrap: str, topic: str, partition: int, count: int) -> list[tuple]:
    """(offset, key, value, headers, timestamp) of the first `count` records, by
    confluent-kafka; fails if a poll comes back empty or with an error."""
    consumer = ConfluentConsumer(
        {"bootstrap.servers": bootstrap, "group.id": "client-check", "enable.auto.commit": False}
    )
    consumer.assign([ConfluentTopicPartition(topic, partition, 0)])
    got = []
    while len(got) < count:
        message = consumer.poll(30)
        assert message is not None, f"stalled after {len(got)}"
        assert message.error() is None, message.error()
        got.append(message)
    consumer.close()
    return [(m.offset(), m.key(), m.value(), m.headers() or [], m.timestamp()[1]) for m in got]


def kafka_python_values_by_offset(bootstrap: str, topic: str) -> dict[int, bytes]:
    """Every record of a one-partition topic from the beginning to its high watermark, by
    kafka-python: value by offset (what a restarted broker still serves)."""
    return {m.offset: m.value for m in kafka_python_all(bootstrap, topic)}


def kafka_python_all(bootstrap: str, topic: str, partitions: int = 1) -> list:
    """Every record of partitions 0..`partitions`-1 of `topic` below their high watermarks
    (as they are at the start), by kafka-python, in partition and offset order. Like the
    reads above, it ends at the high watermarks, not after a quiet spell."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=30000,  # a stall, not the end
        enable_auto_commit=False,
        group_id=None,
    )
    wanted = [KafkaTopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(wanted)
    ends = consumer.end_offsets(wanted)
    pending = {tp for tp in wanted if consumer.position(tp) < ends[tp]}
    found = []
    for message in consumer if pending else ():
        found.append(message)
        if message.offset + 1 >= ends[KafkaTopicPartition(topic, message.partition)]:
            pending.discard(KafkaTopicPartition(topic, message.partition))
            if not pending:
                break
    consumer.close()
    return sorted(found, key=lambda m: (m.partition, m.offset))
