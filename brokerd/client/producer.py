"""A producer of v2 record batches: acks 0/1/all, codecs, partitioner, optional idempotence.

`send()` buffers a record for its partition and returns a future of its RecordMetadata;
each partition drains its buffer one batch at a time (after `linger`), so batches of a
partition are written in order. `produce_batch()` and `send_batch()` are the lower level:
build one batch now, and send one built batch (retried, the same bytes each time).

With `idempotent=True` the producer takes a producer id (InitProducerId) and numbers each
partition's batches; a retried batch carries the sequence of its first attempt, so a
broker that already wrote it answers with the original offsets instead of writing it
twice. Dedup holds for one producer session: another producer (or another id after a
fatal error) is not deduplicated against it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from brokerd.records import compression
from brokerd.records.batch import NO_SEQUENCE, SimpleRecord, build_batch

from .cluster import Cluster, TopicPartition
from .errors import (
    ErrorCode,
    KafkaClientError,
    KafkaConnectionError,
    KafkaResponseError,
    KafkaTimeoutError,
    check,
)
from .partitioner import DefaultPartitioner
from .requests import Nested

log = logging.getLogger(__name__)

PRODUCE = 0
INIT_PRODUCER_ID = 22
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_RECORD_OVERHEAD = 24  # rough per-record bytes beyond key, value and headers
# Sequences wrap at Integer.MAX_VALUE back to 0, as in Kafka.
_SEQUENCE_MODULO = 1 << 31


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    topic: str
    partition: int
    offset: int  # -1 with acks=0
    timestamp: int  # LogAppendTime from the broker, else the record's CreateTime
    log_start_offset: int = -1


@dataclass(slots=True)
class ProducedBatch:
    """One built batch, kept byte-for-byte so that every retry resends the same bytes."""

    topic: str
    partition: int
    data: bytes
    record_count: int
    timestamps: list[int]
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = NO_SEQUENCE


@dataclass(frozen=True, slots=True)
class BatchResult:
    topic: str
    partition: int
    base_offset: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    duplicate_of_earlier_send: bool = False

    def record_metadata(self, batch: ProducedBatch) -> list[RecordMetadata]:
        return [
            RecordMetadata(
                self.topic,
                self.partition,
                self.base_offset + i if self.base_offset >= 0 else -1,
                self.log_append_time if self.log_append_time >= 0 else ts,
                self.log_start_offset,
            )
            for i, ts in enumerate(batch.timestamps)
        ]


@dataclass(slots=True)
class _Pending:
    record: SimpleRecord
    future: asyncio.Future
    size: int


@dataclass(slots=True)
class _PartitionBuffer:
    records: deque[_Pending] = field(default_factory=deque)
    size: int = 0
    task: asyncio.Task | None = None


def compression_code(value: int | str | None) -> int:
    if value is None:
        return compression.NONE
    if isinstance(value, int):
        if value not in compression.NAMES:
            raise ValueError(f"unknown compression codec {value}")
        return value
    try:
        return compression.BY_NAME[value.lower()]
    except KeyError:
        raise ValueError(f"unknown compression type {value!r}") from None


class Producer:
    def __init__(
        self,
        cluster: Cluster,
        *,
        acks: int | str = -1,
        compression_type: int | str | None = None,
        idempotent: bool = False,
        request_timeout: float = 30.0,
        retries: int = 5,
        retry_backoff: float = 0.1,
        batch_size: int = 64 * 1024,
        linger: float = 0.005,
        buffer_memory: int = 32 * 1024 * 1024,
        partitioner: DefaultPartitioner | None = None,
    ):
        acks = -1 if acks == "all" else int(acks)
        if acks not in (-1, 0, 1):
            raise ValueError("acks must be 0, 1 or -1 (all)")
        if idempotent and acks != -1:
            raise ValueError("an idempotent producer needs acks=all (-1), as in Kafka")
        self.cluster = cluster
        self.acks = acks
        self.compression = compression_code(compression_type)
        self.idempotent = idempotent
        self.request_timeout = request_timeout
        self.retries = retries
        self.retry_backoff = retry_backoff
        self.batch_size = batch_size
        self.linger = linger
        self.buffer_memory = buffer_memory
        self.partitioner = partitioner or DefaultPartitioner()
        self.producer_id = -1
        self.producer_epoch = -1
        self._sequences: dict[TopicPartition, int] = {}
        self._partition_locks: dict[TopicPartition, asyncio.Lock] = {}
        self._buffers: dict[TopicPartition, _PartitionBuffer] = {}
        self._buffered = 0
        self._space = asyncio.Event()
        self._id_lock = asyncio.Lock()
        self._needs_new_id = False

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        if self.idempotent:
            await self._ensure_producer_id()

    async def close(self) -> None:
        await self.flush()

    # Idempotence -----------------------------------------------------------------------
    async def _ensure_producer_id(self) -> None:
        async with self._id_lock:
            if self.producer_id >= 0 and not self._needs_new_id:
                return
            response = await self.cluster.call_any(
                INIT_PRODUCER_ID,
                {
                    "transactional_id": None,
                    "transaction_timeout": datetime.timedelta(minutes=1),
                    "producer_id": -1,
                    "producer_epoch": -1,
                },
            )
            check(response.error_code, None, "InitProducerId")
            self.producer_id = int(response.producer_id)
            self.producer_epoch = int(response.producer_epoch)
            self._sequences.clear()  # a new id numbers every partition from 0
            self._needs_new_id = False

    # Building and sending one batch ----------------------------------------------------
    async def build(
        self, topic: str, partition: int, records: Sequence[SimpleRecord]
    ) -> ProducedBatch:
        """Encode records into one batch; idempotent producers number it (and move on)."""
        if not records:
            raise ValueError("a batch needs at least one record")
        now = _now_ms()
        timestamps = [now if r.timestamp is None else int(r.timestamp) for r in records]
        records = [r if r.timestamp is not None else _with_timestamp(r, now) for r in records]
        pid, epoch, sequence = -1, -1, NO_SEQUENCE
        if self.idempotent:
            await self._ensure_producer_id()
            tp = (topic, partition)
            pid, epoch = self.producer_id, self.producer_epoch
            sequence = self._sequences.get(tp, 0)
            self._sequences[tp] = (sequence + len(records)) % _SEQUENCE_MODULO
        data = build_batch(
            records,
            compression_type=self.compression,
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=sequence,
        )
        return ProducedBatch(
            topic, partition, bytes(data), len(records), timestamps, pid, epoch, sequence
        )

    async def produce_batch(
        self, topic: str, partition: int, records: Sequence[SimpleRecord]
    ) -> BatchResult:
        """Build and send one batch to an explicit partition, in order with its others."""
        async with self._lock_for((topic, partition)):
            batch = await self.build(topic, partition, records)
            return await self.send_batch(batch)

    async def send_batch(self, batch: ProducedBatch) -> BatchResult:
        """Send a built batch to its partition's leader, retrying the same bytes.

        Retries follow routing errors (after a metadata refresh), lost connections,
        timeouts and other retriable codes. A final failure of an idempotent batch makes
        the next batch take a new producer id, as its sequence can no longer be trusted.
        """
        tp = (batch.topic, batch.partition)
        last_error: KafkaClientError | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                await asyncio.sleep(self.retry_backoff * attempt)
            try:
                return await self._send_once(batch)
            except KafkaResponseError as exc:
                last_error = exc
                if exc.error_code == ErrorCode.duplicate_sequence_number:
                    # An old broker's way of saying "already written": the offsets are gone.
                    return BatchResult(*tp, -1, -1, -1, duplicate_of_earlier_send=True)
                if not exc.retriable:
                    break
                if exc.needs_metadata_refresh:
                    await self._refresh(batch.topic)
            except (KafkaConnectionError, KafkaTimeoutError) as exc:
                last_error = exc
                await self._refresh(batch.topic)
        if self.idempotent:
            self._needs_new_id = True
        assert last_error is not None
        raise last_error

    async def _refresh(self, topic: str) -> None:
        with contextlib.suppress(KafkaClientError):  # the next attempt reports what fails
            await self.cluster.refresh_metadata([topic])

    async def _send_once(self, batch: ProducedBatch) -> BatchResult:
        leader = await self.cluster.leader_for(batch.topic, batch.partition)
        connection = await self.cluster.connection(leader)
        values = {
            "transactional_id": None,
            "acks": self.acks,
            "timeout": datetime.timedelta(seconds=self.request_timeout),
            "topic_data": [
                Nested(
                    "TopicProduceData",
                    name=batch.topic,
                    partition_data=[
                        Nested("PartitionProduceData", index=batch.partition, records=batch.data)
                    ],
                )
            ],
        }
        response = await connection.call(
            PRODUCE,
            values,
            timeout=self.request_timeout + 5,
            expect_response=self.acks != 0,
        )
        if response is None:  # acks=0
            return BatchResult(batch.topic, batch.partition, -1, -1, -1)
        part = response.responses[0].partition_responses[0]
        message = getattr(part, "error_message", None)
        record_errors = getattr(part, "record_errors", ())
        if record_errors:
            details = "; ".join(
                f"record {e.batch_index}: {e.batch_index_error_message}" for e in record_errors
            )
            message = f"{message or ''} ({details})".strip()
        check(part.error_code, message, f"{batch.topic}-{batch.partition}")
        return BatchResult(
            batch.topic,
            batch.partition,
            int(part.base_offset),
            _millis(part.log_append_time),
            int(getattr(part, "log_start_offset", -1)),
        )

    def _lock_for(self, tp: TopicPartition) -> asyncio.Lock:
        lock = self._partition_locks.get(tp)
        if lock is None:
            lock = self._partition_locks[tp] = asyncio.Lock()
        return lock

    # Buffered sends --------------------------------------------------------------------
    async def send(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        *,
        headers: Sequence[tuple[str, bytes | None]] = (),
        partition: int | None = None,
        timestamp: int | None = None,
    ) -> asyncio.Future:
        """Buffer one record; the returned future resolves to its RecordMetadata."""
        while self._buffered >= self.buffer_memory:
            self._space.clear()
            await self._space.wait()
        partitions = await self._partitions(topic)
        if partition is None:
            partition = self.partitioner.partition(topic, key, len(partitions))
        elif partition not in partitions:
            raise KafkaResponseError(
                ErrorCode.unknown_topic_or_partition, None, f"{topic}-{partition}"
            )
        record = SimpleRecord(value, key, tuple(headers), timestamp)
        size = _RECORD_OVERHEAD + len(value or b"") + len(key or b"")
        size += sum(len(k) + len(v or b"") for k, v in headers)
        future = asyncio.get_running_loop().create_future()
        buffer = self._buffers.setdefault((topic, partition), _PartitionBuffer())
        buffer.records.append(_Pending(record, future, size))
        buffer.size += size
        self._buffered += size
        if buffer.task is None or buffer.task.done():
            buffer.task = asyncio.create_task(self._drain((topic, partition), buffer))
        return future

    async def _partitions(self, topic: str) -> list[int]:
        """The topic's partitions, waiting a little for a topic that is just being created."""
        for attempt in range(self.retries + 1):
            try:
                return await self.cluster.partitions_for(topic, refresh=attempt > 0)
            except KafkaResponseError as exc:
                if not exc.retriable or attempt == self.retries:
                    raise
            await asyncio.sleep(self.retry_backoff * (attempt + 1))
        raise AssertionError("unreachable")

    async def send_and_wait(self, topic: str, value: bytes | None = None, key=None, **kw):
        return await (await self.send(topic, value, key, **kw))

    async def send_many(
        self, topic: str, records: Iterable[SimpleRecord | Mapping[str, Any]]
    ) -> list[RecordMetadata]:
        """Buffer many records (SimpleRecord, or dicts with value, key, headers, partition,
        timestamp) and wait for all; raises the first failure after all have settled."""
        futures = []
        for record in records:
            if isinstance(record, SimpleRecord):
                futures.append(
                    await self.send(
                        topic,
                        record.value,
                        record.key,
                        headers=record.headers,
                        timestamp=record.timestamp,
                    )
                )
            else:
                futures.append(await self.send(topic, **record))
        results = await asyncio.gather(*futures, return_exceptions=True)
        metadata: list[RecordMetadata] = []
        for result in results:
            if isinstance(result, BaseException):
                raise result
            metadata.append(result)
        return metadata

    async def flush(self) -> None:
        """Wait until every buffered record is acknowledged or failed."""
        while True:
            tasks = [b.task for b in self._buffers.values() if b.task and not b.task.done()]
            if not tasks:
                return
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _drain(self, tp: TopicPartition, buffer: _PartitionBuffer) -> None:
        if self.linger > 0 and buffer.size < self.batch_size:
            await asyncio.sleep(self.linger)
        while buffer.records:
            taken: list[_Pending] = []
            size = 0
            while buffer.records and (
                not taken or size + buffer.records[0].size <= self.batch_size
            ):
                pending = buffer.records.popleft()
                taken.append(pending)
                size += pending.size
            buffer.size -= size
            try:
                async with self._lock_for(tp):
                    batch = await self.build(*tp, [p.record for p in taken])
                    self._sticky_batch_sent(tp)
                    result = await self.send_batch(batch)
                for pending, metadata in zip(taken, result.record_metadata(batch), strict=True):
                    if not pending.future.done():
                        pending.future.set_result(metadata)
            except Exception as exc:  # every record of the batch learns why
                for pending in taken:
                    if not pending.future.done():
                        pending.future.set_exception(exc)
            finally:
                self._buffered -= size
                self._space.set()

    def _sticky_batch_sent(self, tp: TopicPartition) -> None:
        info = self.cluster.metadata.topics.get(tp[0])
        if info is not None:
            self.partitioner.batch_sent(tp[0], tp[1], len(info.partitions))


def _with_timestamp(record: SimpleRecord, now: int) -> SimpleRecord:
    return SimpleRecord(record.value, record.key, record.headers, now)


def _now_ms() -> int:
    import time

    return time.time_ns() // 1_000_000


def _millis(value: Any) -> int:
    if value is None:
        return -1
    if isinstance(value, datetime.datetime):
        return (value - _EPOCH) // datetime.timedelta(milliseconds=1)
    return int(value)
