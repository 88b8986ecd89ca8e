"""Reading a load's Parquet output back, and what a topic holds, for exact comparisons."""

from __future__ import annotations

from pathlib import Path

import pyarrow.dataset as ds


def parquet_records(output: Path) -> list[tuple[int, int, bytes, bytes]]:
    """(partition, offset, key, value) of every row, sorted; `_`-prefixed dirs ignored."""
    dataset = ds.dataset(str(output), format="parquet", partitioning="hive")
    table = dataset.to_table(columns=["partition", "offset", "key", "value"])
    return sorted(
        zip(
            table["partition"].to_pylist(),
            table["offset"].to_pylist(),
            table["key"].to_pylist(),
            table["value"].to_pylist(),
            strict=True,
        )
    )


def topic_records(client, topic: str) -> list[tuple[int, int, bytes, bytes]]:
    """Everything below the high watermark, read with brokerd.client."""
    consumer = client.consumer(max_partition_bytes=8 * 1024 * 1024)
    found = []
    for p, end in client.admin.high_watermarks(topic).items():
        for record in consumer.fetch_range(topic, p, 0, end):
            found.append((p, record.offset, record.key, record.value))
    return sorted(found)


def confluent_read_all(bootstrap: str, topic: str, high_watermarks: dict[int, int]) -> list:
    """Every record below the given high watermarks, read with confluent-kafka."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "spark-tests", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p, end in high_watermarks.items() if end])
    wanted = sum(high_watermarks.values())
    found = []
    try:
        while len(found) < wanted:
            message = consumer.poll(10)
            assert message is not None, f"only {len(found)} of {wanted} records arrived"
            assert message.error() is None, message.error()
            found.append(message)
    finally:
        consumer.close()
    return found
