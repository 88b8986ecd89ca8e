"""The reading side of the data source: plan offset ranges on the driver, read on executors.

Each input partition is one offset range of one topic-partition. An executor reads it with
`brokerd.client`'s `Consumer.iter_range`, which returns exactly the records in
[start, end) below the high watermark and steps over compacted offsets, and yields Arrow
record batches in the schema of Spark's own Kafka source.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from brokerd.client import ConsumerRecord, OffsetOutOfRangeError, SyncClient

from .offsets import OffsetRange, isolation_level, option, plan_ranges
from .security import client_security

HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
ARROW_SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("timestampType", pa.int32()),
        ("headers", HEADERS_TYPE),
    ]
)
SPARK_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int, headers array<struct<key string, value binary>>"
)
# Test-only fault injection: "topic:partition:offset[:exit]" makes the first attempt of the
# task whose range holds that offset fail after yielding the records before it (raise, or
# exit the Python worker as a killed process would).
FAIL_OPTION = "brokerd.test.failFirstAttemptAt"
MARKER_OPTION = "brokerd.test.failureMarker"  # a file written when the failure is injected


@dataclass
class RangePartition(InputPartition):
    """One input partition: an offset range plus what an executor needs to read it."""

    range: OffsetRange
    index: int

    def __post_init__(self) -> None:
        super().__init__(self.index)


def bootstrap_servers(options: Mapping[str, str]) -> str:
    servers = option(options, "kafka.bootstrap.servers")
    if not servers:
        raise ValueError("the option kafka.bootstrap.servers is required")
    return servers


def client_options(options: Mapping[str, str]) -> dict:
    timeout = float(option(options, "kafka.request.timeout.ms", "30000")) / 1000
    return {
        "client_id": option(options, "kafka.client.id", "brokerd-spark"),
        "request_timeout": timeout,
        "security": client_security(options),
    }


class KafkaRangeReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str]):
        self.options = dict(options)
        self.servers = bootstrap_servers(self.options)
        self.partition_bytes = int(
            option(self.options, "kafka.max.partition.fetch.bytes", str(8 * 1024 * 1024))
        )
        self.fail_at = option(self.options, FAIL_OPTION)
        self.isolation_level = isolation_level(self.options)

    def partitions(self) -> list[RangePartition]:
        with SyncClient(self.servers, **client_options(self.options)) as client:
            ranges = plan_ranges(client, self.options)
        if not ranges:
            # Spark needs at least one partition; an empty range reads nothing.
            return [RangePartition(OffsetRange("", 0, 0, 0), 0)]
        return [RangePartition(r, i) for i, r in enumerate(ranges)]

    def read(self, partition: RangePartition) -> Iterator[pa.RecordBatch]:
        r = partition.range
        if r.size == 0:
            return
        failure = self._injected_failure(r)
        with SyncClient(self.servers, **client_options(self.options)) as client:
            consumer = client.consumer(
                max_partition_bytes=self.partition_bytes, isolation_level=self.isolation_level
            )
            for chunk in _records(client, consumer, r, self.options):
                if failure is not None and chunk[-1].offset >= failure[0]:
                    before = [rec for rec in chunk if rec.offset < failure[0]]
                    if before:
                        yield to_arrow(before)
                    _fail(r, failure, option(self.options, MARKER_OPTION))
                yield to_arrow(chunk)

    def _injected_failure(self, r: OffsetRange) -> tuple[int, str] | None:
        if not self.fail_at:
            return None
        from pyspark import TaskContext

        topic, partition, offset, *mode = self.fail_at.split(":")
        context = TaskContext.get()
        first_attempt = context is None or context.attemptNumber() == 0
        if (topic, int(partition)) != (r.topic, r.partition) or not first_attempt:
            return None
        if not r.start <= int(offset) < r.end:
            return None
        return int(offset), (mode[0] if mode else "raise")


def _fail(r: OffsetRange, failure: tuple[int, str], marker: str | None) -> None:
    if marker:  # lets a test prove that the failure really happened
        Path(marker).write_text(f"{r.topic}-{r.partition} at {failure[0]}")
    if failure[1] == "exit":
        os._exit(17)  # a killed worker: no exception, no clean-up
    raise RuntimeError(f"injected failure reading {r.topic}-{r.partition} at {failure[0]}")


def _records(
    client: SyncClient, consumer, r: OffsetRange, options: Mapping[str, str]
) -> Iterator[list[ConsumerRecord]]:
    """Chunks of the range; with failOnDataLoss=false, offsets deleted meanwhile are skipped."""
    fail_on_data_loss = (option(options, "failOnDataLoss", "true") or "true").lower() != "false"
    position = r.start
    while position < r.end:
        try:
            for chunk in consumer.iter_range(r.topic, r.partition, position, r.end):
                yield chunk
                position = chunk[-1].offset + 1
            return
        except OffsetOutOfRangeError:
            if fail_on_data_loss:
                raise
            earliest = client.admin.earliest_offsets(r.topic)[r.partition]
            if earliest <= position:
                raise
            position = earliest


def to_arrow(records: list[ConsumerRecord]) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [
            pa.array([r.key for r in records], pa.binary()),
            pa.array([r.value for r in records], pa.binary()),
            pa.array([r.topic for r in records], pa.string()),
            pa.array([r.partition for r in records], pa.int32()),
            pa.array([r.offset for r in records], pa.int64()),
            pa.array(
                [r.timestamp * 1000 if r.timestamp >= 0 else None for r in records],
                pa.timestamp("us", tz="UTC"),
            ),
            pa.array([r.timestamp_type for r in records], pa.int32()),
            _headers(records),
        ],
        schema=ARROW_SCHEMA,
    )


def _headers(records: list[ConsumerRecord]) -> pa.Array:
    """Built from flat arrays: most records have no headers, and a list per record is slow."""
    offsets = [0]
    keys: list[str] = []
    values: list[bytes | None] = []
    total = 0
    for record in records:
        if record.headers:
            for key, value in record.headers:
                keys.append(key)
                values.append(value)
            total += len(record.headers)
        offsets.append(total)
    entries = pa.StructArray.from_arrays(
        [pa.array(keys, pa.string()), pa.array(values, pa.binary())],
        fields=list(HEADERS_TYPE.value_type),
    )
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), entries, type=HEADERS_TYPE)
