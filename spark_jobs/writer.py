"""The writing side of the data source: rows (key, value, headers, topic, partition) to topics.

Every task produces with its own idempotent producer (acks=all), so the client's own retries
never duplicate. Spark may also run a task again after it failed (a new attempt, a new
producer): idempotence does not reach across producers, so each record carries a small
header naming the write job and the Spark task (`brokerd.spark.write`: 8 bytes of write id,
4 bytes of task partition id). A retried attempt first reads back, from where the job
started, the records its earlier attempts wrote (found by that header), and skips a row
whenever an identical one (same topic, key, value, headers) is already there - counted as a
multiset, so equal rows are still each written once and the input's order may change.

Guarantee: when the job succeeds, every input row is in its topic exactly once, however
often tasks were retried - provided attempts of one task never run at the same time
(Spark's default: speculation off) and an earlier attempt's acknowledged records are below
the high watermark (true with acks=all). A failed job leaves the rows its tasks wrote (topics
cannot roll back); `abort()` reports them. Stages resubmitted after a lost shuffle restart
task attempt numbers: set the option `dedupe=always` when the input is computed after a
shuffle, or `dedupe=none` to skip the header and the check (at-least-once, like Spark's own
Kafka sink).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import struct
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from brokerd.client import SyncClient
from brokerd.client.producer import Producer

from .offsets import option
from .reader import MARKER_OPTION, bootstrap_servers, client_options

MARK_HEADER = "brokerd.spark.write"
# Test-only fault injection: "task:rows[:exit]" makes the first attempt of that Spark task
# fail once its first `rows` rows are acknowledged (raise, or exit the Python worker).
FAIL_OPTION = "brokerd.test.failFirstAttemptAfter"
# A file the driver's commit writes a JSON summary to (rows, offsets per partition).
REPORT_OPTION = "reportPath"
WRITE_COLUMNS = {"key", "value", "headers", "topic", "partition"}
# Records of a retried task are found from the job's start time, minus this much clock skew
# between the driver and the brokers, in topics whose offsets were not taken at the start.
CLOCK_SKEW_MS = 10 * 60 * 1000


@dataclass
class WriteReport(WriterCommitMessage):
    task: int
    attempt: int
    written: int
    skipped: int  # rows an earlier attempt of this task had already written
    offsets: dict[str, list[int]] = field(default_factory=dict)  # "topic-p": [first, last]


def check_write_schema(column_types: Mapping[str, str], default_topic: str | None) -> None:
    unknown = set(column_types) - WRITE_COLUMNS
    if unknown:
        raise ValueError(
            f"columns {sorted(unknown)} cannot be written; use {sorted(WRITE_COLUMNS)}"
        )
    if "value" not in column_types:
        raise ValueError("a value column is required")
    for name in ("key", "value"):
        if name in column_types and column_types[name] not in ("binary", "string"):
            raise ValueError(f"{name} must be binary or string, not {column_types[name]}")
    if "topic" not in column_types and not default_topic:
        raise ValueError("give the option topic or a topic column")


class KafkaWriter(DataSourceArrowWriter):
    def __init__(self, options: Mapping[str, str], column_types: Mapping[str, str]):
        self.options = dict(options)
        self.servers = bootstrap_servers(self.options)
        self.topic = option(self.options, "topic")
        check_write_schema(column_types, self.topic)
        self.dedupe = (option(self.options, "dedupe", "retries") or "retries").lower()
        if self.dedupe not in ("retries", "always", "none"):
            raise ValueError("dedupe must be retries, always or none")
        self.write_id = uuid.uuid4().bytes[:8]
        self.started_ms = time.time_ns() // 1_000_000
        self.start_offsets: dict[str, dict[int, int]] = {}
        if self.topic:
            with SyncClient(self.servers, **client_options(self.options)) as client:
                self.start_offsets[self.topic] = client.admin.high_watermarks(self.topic)
        self.producer_options = {
            "acks": -1,
            "idempotent": True,
            "compression_type": option(self.options, "kafka.compression.type"),
            "linger": float(option(self.options, "kafka.linger.ms", "5")) / 1000,
            "batch_size": int(option(self.options, "kafka.batch.size", str(256 * 1024))),
        }

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteReport:
        from pyspark import TaskContext

        context = TaskContext.get()
        task = context.partitionId() if context else 0
        attempt = context.attemptNumber() if context else 0
        marker = self.write_id + struct.pack(">i", task)
        check = self.dedupe == "always" or (self.dedupe == "retries" and attempt > 0)
        fail_after = self._injected_failure(task, attempt)
        with SyncClient(self.servers, **client_options(self.options)) as client:
            task_writer = _TaskWriter(self, client, marker if self.dedupe != "none" else None)
            for batch in iterator:
                rows = _rows(batch, self.topic)
                if check:
                    rows = client.run(task_writer.not_yet_written(rows))
                if fail_after is not None and task_writer.sent + len(rows) >= fail_after[0]:
                    client.run(task_writer.send(rows[: fail_after[0] - task_writer.sent]))
                    client.run(task_writer.finish())
                    _fail(task, fail_after, option(self.options, MARKER_OPTION))
                client.run(task_writer.send(rows))
            client.run(task_writer.finish())
        report = WriteReport(task, attempt, task_writer.written, task_writer.skipped)
        report.offsets = {f"{t}-{p}": span for (t, p), span in task_writer.spans.items()}
        return report

    def _injected_failure(self, task: int, attempt: int) -> tuple[int, str] | None:
        spec = option(self.options, FAIL_OPTION)
        if not spec or attempt > 0:
            return None
        failing_task, rows, *mode = spec.split(":")
        if int(failing_task) != task:
            return None
        return int(rows), (mode[0] if mode else "raise")

    def commit(self, messages: Sequence[WriteReport | None]) -> None:
        reports = [m for m in messages if m is not None]
        written = sum(m.written for m in reports)
        skipped = sum(m.skipped for m in reports)
        print(
            f"brokerd: wrote {written} records in {len(reports)} tasks"
            + (f" ({skipped} already written by failed attempts, not repeated)" if skipped else ""),
            file=sys.stderr,
        )
        report_path = option(self.options, REPORT_OPTION)
        if report_path:
            Path(report_path).write_text(json.dumps(summarize(reports), sort_keys=True))

    def abort(self, messages: Sequence[WriteReport | None]) -> None:
        written = sum(m.written for m in messages if m is not None)
        print(
            f"brokerd: write failed; {written} records of finished tasks stay in their topics "
            "(a topic cannot roll back); tasks that failed may have written more",
            file=sys.stderr,
        )


def _fail(task: int, failure: tuple[int, str], marker: str | None) -> None:
    if marker:  # lets a test prove that the failure really happened
        Path(marker).write_text(f"task {task} after {failure[0]} rows")
    if failure[1] == "exit":
        os._exit(17)  # a killed worker: no exception, no clean-up
    raise RuntimeError(f"injected failure in write task {task} after {failure[0]} rows")


def summarize(reports: Sequence[WriteReport]) -> dict:
    """Rows written and skipped, and per "topic-partition" the [first, last] offsets."""
    spans: dict[str, list[int]] = {}
    for report in reports:
        for name, (first, last) in report.offsets.items():
            span = spans.setdefault(name, [first, last])
            span[0], span[1] = min(span[0], first), max(span[1], last)
    return {
        "written": sum(r.written for r in reports),
        "skipped_as_already_written": sum(r.skipped for r in reports),
        "tasks": len(reports),
        "offsets": spans,
    }


Row = tuple[str, int | None, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def _rows(batch: pa.RecordBatch, default_topic: str | None) -> list[Row]:
    count = batch.num_rows
    columns = {name: batch.column(name).to_pylist() for name in batch.schema.names}
    topics = columns.get("topic") or [default_topic] * count
    partitions = columns.get("partition") or [None] * count
    keys = [_as_bytes(k) for k in columns.get("key") or [None] * count]
    values = [_as_bytes(v) for v in columns["value"]]
    headers = [
        [(h["key"], h["value"]) for h in (hs or ())]
        for hs in columns.get("headers") or [None] * count
    ]
    rows = []
    for i in range(count):
        topic = topics[i] or default_topic
        if not topic:
            raise ValueError("a row has a null topic and no topic option is set")
        rows.append((topic, partitions[i], keys[i], values[i], headers[i]))
    return rows


def _as_bytes(value: bytes | str | None) -> bytes | None:
    return value.encode() if isinstance(value, str) else value


def content_digest(
    topic: str, key: bytes | None, value: bytes | None, headers: Sequence[tuple[str, bytes | None]]
) -> bytes:
    """What makes two records the same row for deduplication (not the offset, not the time)."""
    digest = hashlib.blake2b(digest_size=16)
    for part in (topic.encode(), key, value, *(x for k, v in headers for x in (k.encode(), v))):
        if part is None:
            digest.update(b"\xff")
        else:
            digest.update(struct.pack(">i", len(part)))
            digest.update(part)
    return digest.digest()


class _TaskWriter:
    """One task attempt's producer, running on the SyncClient's loop."""

    def __init__(self, writer: KafkaWriter, client: SyncClient, marker: bytes | None):
        self.writer = writer
        self.client = client
        self.marker = marker
        self.producer: Producer | None = None
        self.pending: list[asyncio.Future] = []
        self.previous: list[asyncio.Future] = []
        self.already: Counter[bytes] = Counter()
        self.scanned: set[str] = set()
        self.sent = 0
        self.written = 0
        self.skipped = 0
        self.spans: dict[tuple[str, int], list[int]] = {}

    async def send(self, rows: list[Row]) -> None:
        if self.producer is None:
            self.producer = Producer(self.client.cluster, **self.writer.producer_options)
            await self.producer.start()
        extra = [(MARK_HEADER, self.marker)] if self.marker is not None else []
        self.sent += len(rows)
        for topic, partition, key, value, headers in rows:
            self.pending.append(
                await self.producer.send(
                    topic, value, key, headers=headers + extra, partition=partition
                )
            )
        # Keep one batch in flight while checking the one before (bounded memory).
        await self._settle(self.previous)
        self.previous, self.pending = self.pending, []

    async def finish(self) -> None:
        if self.producer is not None:
            await self.producer.flush()
        await self._settle(self.previous)
        await self._settle(self.pending)

    async def _settle(self, futures: list[asyncio.Future]) -> None:
        results = await asyncio.gather(*futures, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
            span = self.spans.setdefault((result.topic, result.partition), [result.offset] * 2)
            span[0] = min(span[0], result.offset)
            span[1] = max(span[1], result.offset)
        self.written += len(results)

    async def not_yet_written(self, rows: list[Row]) -> list[Row]:
        kept = []
        for row in rows:
            topic, _, key, value, headers = row
            if topic not in self.scanned:
                await self._scan(topic)
            digest = content_digest(topic, key, value, headers)
            if self.already[digest] > 0:
                self.already[digest] -= 1
                self.skipped += 1
            else:
                kept.append(row)
        return kept

    async def _scan(self, topic: str) -> None:
        """Count what earlier attempts of this task wrote to `topic` since the job began."""
        from brokerd.client import AdminClient, Consumer

        self.scanned.add(topic)
        admin = AdminClient(self.client.cluster)
        partitions = await self.client.cluster.partitions_for(topic, refresh=True)
        latest = {
            p: r.offset
            for (_, p), r in (
                await admin.list_offsets(dict.fromkeys(((topic, p) for p in partitions), "latest"))
            ).items()
        }
        starts = dict(self.writer.start_offsets.get(topic, {}))
        missing = [p for p in partitions if p not in starts]
        if missing:
            since = self.writer.started_ms - CLOCK_SKEW_MS
            found = await admin.list_offsets({(topic, p): since for p in missing})
            for (_, p), listed in found.items():
                starts[p] = listed.offset if listed.offset >= 0 else latest[p]
        consumer = Consumer(self.client.cluster, max_partition_bytes=8 * 1024 * 1024)
        for p in partitions:
            async for chunk in consumer.iter_range(topic, p, starts[p], latest[p]):
                for record in chunk:
                    own = [h for h in record.headers if h[0] == MARK_HEADER]
                    if own and own[0][1] == self.marker:
                        rest = [h for h in record.headers if h[0] != MARK_HEADER]
                        self.already[content_digest(topic, record.key, record.value, rest)] += 1
