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
