"""An assign-style consumer: fetch given partitions from given offsets, no group needed.

Fetch answers are decoded batch by batch (v2 batches and legacy v0/v1 message sets, every
codec): records below the requested offset (a fetch starts at a batch boundary) and control
batches are skipped, nothing at or above the high watermark is returned, and the next
position is the end of the last batch, so compacted topics' offset gaps are stepped over.
Reads are read_uncommitted (isolation level 0), bounded by the high watermark, unless the
consumer is made with isolation_level=1 (read_committed): then fetches are bounded by the
last stable offset and the batches of aborted transactions are dropped as Kafka's consumer
drops them (the Fetch answer's aborted_transactions, ended by each producer's abort marker).
"""

from __future__ import annotations

import datetime
import heapq
import struct
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass

from brokerd.records import iter_entries
from brokerd.records.batch import CorruptRecordError, RecordBatch

from .cluster import Cluster, TopicPartition
from .errors import ErrorCode, KafkaResponseError, KafkaTimeoutError, error_code
from .requests import Nested

FETCH = 1


@dataclass(frozen=True, slots=True)
class ConsumerRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int  # 0 CreateTime, 1 LogAppendTime (-1: a v0 message has none)
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True, slots=True)
class PartitionData:
    """What one fetch returned for one partition."""

    topic: str
    partition: int
    fetch_offset: int
    records: list[ConsumerRecord]
    next_offset: int  # where the next fetch starts: past every batch returned
    high_watermark: int
    log_start_offset: int
    last_stable_offset: int


class OffsetOutOfRangeError(KafkaResponseError):
    """The requested offset is below the log start or above the log end."""

    def __init__(self, topic: str, partition: int, offset: int):
        super().__init__(
            ErrorCode.offset_out_of_range,
            f"offset {offset} is outside the log",
            f"{topic}-{partition}",
        )
        self.topic = topic
        self.partition = partition
        self.offset = offset


READ_UNCOMMITTED = 0
READ_COMMITTED = 1
ABORT_MARKER = 0  # a control record's type (its key: int16 version, int16 type)


def _is_abort_marker(batch: RecordBatch) -> bool:
    """Whether a control batch holds an ABORT marker (its one record's key says so)."""
    key = next((record.key for record in batch), None)
    return key is not None and len(key) >= 4 and struct.unpack_from(">h", key, 2)[0] == ABORT_MARKER


def decode_partition(
    topic: str,
    partition: int,
    data: bytes | None,
    fetch_offset: int,
    high_watermark: int,
    aborted: list[tuple[int, int]] | None = None,
) -> tuple[list[ConsumerRecord], int]:
    """Records at or after `fetch_offset` and below `high_watermark` (the last stable offset
    for read_committed); the next offset. With `aborted` (read_committed: the Fetch answer's
    (producer id, first offset) pairs), aborted transactions' batches are skipped as Kafka's
    consumer skips them: a producer's transaction counts as aborted from its first offset
    until that producer's abort marker."""
    records: list[ConsumerRecord] = []
    next_offset = fetch_offset
    if not data:
        return records, next_offset
    pending = [(first, pid) for pid, first in aborted or ()]
    heapq.heapify(pending)
    aborting: set[int] = set()
    for entry in iter_entries(data):
        if isinstance(entry, RecordBatch):
            entry.validate()  # CRC-32C, as Java's check.crcs
            if aborted is not None and entry.has_producer_id:
                while pending and pending[0][0] <= entry.last_offset:
                    aborting.add(heapq.heappop(pending)[1])
                if entry.is_control:
                    if entry.producer_id in aborting and _is_abort_marker(entry):
                        aborting.discard(entry.producer_id)
                elif entry.is_transactional and entry.producer_id in aborting:
                    next_offset = max(next_offset, min(entry.next_offset, high_watermark))
                    continue
            if entry.is_control:
                next_offset = max(next_offset, entry.next_offset)
                continue
            timestamp_type = entry.timestamp_type
        else:
            entry.validate()
            timestamp_type = entry.timestamp_type if entry.magic == 1 else -1
        for record in entry:
            if record.offset < fetch_offset:
                continue
            if record.offset >= high_watermark:
                return records, max(next_offset, record.offset)
            records.append(
                ConsumerRecord(
                    topic,
                    partition,
                    record.offset,
                    record.timestamp,
                    timestamp_type,
                    record.key,
                    record.value,
                    tuple((h.key, h.value) for h in record.headers),
                )
            )
        next_offset = max(next_offset, min(entry.next_offset, high_watermark))
    return records, next_offset


class Consumer:
    def __init__(
        self,
        cluster: Cluster,
        *,
        max_wait: float = 0.5,
        min_bytes: int = 1,
        max_bytes: int = 50 * 1024 * 1024,
        max_partition_bytes: int = 1024 * 1024,
        request_timeout: float = 30.0,
        isolation_level: int = READ_UNCOMMITTED,
    ):
        if isolation_level not in (READ_UNCOMMITTED, READ_COMMITTED):
            raise ValueError(f"isolation_level must be 0 or 1, not {isolation_level!r}")
        self.isolation_level = isolation_level
        self.cluster = cluster
        self.max_wait = max_wait
        self.min_bytes = min_bytes
        self.max_bytes = max_bytes
        self.max_partition_bytes = max_partition_bytes
        self.request_timeout = request_timeout
        self._positions: dict[TopicPartition, int] = {}

    # Assignment ------------------------------------------------------------------------
    def assign(self, positions: dict[TopicPartition, int]) -> None:
        """Read these partitions from these offsets (replaces the assignment)."""
        self._positions = {(t, int(p)): int(o) for (t, p), o in positions.items()}

    def assignment(self) -> set[TopicPartition]:
        return set(self._positions)

    def seek(self, topic: str, partition: int, offset: int) -> None:
        self._positions[(topic, partition)] = offset

    def position(self, topic: str, partition: int) -> int:
        return self._positions[(topic, partition)]

    async def poll(self, max_wait: float | None = None) -> list[ConsumerRecord]:
        """One fetch over the assignment; records in partition order, positions advanced.

        OFFSET_OUT_OF_RANGE raises OffsetOutOfRangeError naming the partition (after the
        other partitions' positions have advanced).
        """
        if not self._positions:
            return []
        answers = await self.fetch(self._positions, max_wait=max_wait)
        records: list[ConsumerRecord] = []
        failure: Exception | None = None
        for tp, answer in answers.items():
            if isinstance(answer, Exception):
                failure = failure or answer
                continue
            self._positions[tp] = answer.next_offset
            records.extend(answer.records)
        if failure is not None and not records:
            raise failure
        return records

    # Fetching --------------------------------------------------------------------------
    async def fetch(
        self, positions: dict[TopicPartition, int], *, max_wait: float | None = None
    ) -> dict[TopicPartition, PartitionData | Exception]:
        """One Fetch per leader for these positions; per partition, data or the error."""
        wait = self.max_wait if max_wait is None else max_wait

        async def send(node_id: int, group: dict[TopicPartition, int]):
            return await self._fetch_from(node_id, group, wait)

        return await self.cluster.for_partitions(positions, send)

    async def _fetch_from(
        self, node_id: int, positions: dict[TopicPartition, int], wait: float
    ) -> dict[TopicPartition, PartitionData | Exception]:
        by_topic: dict[str, list[Nested]] = {}
        for (topic, partition), offset in positions.items():
            by_topic.setdefault(topic, []).append(
                Nested(
                    "FetchPartition",
                    partition=partition,
                    current_leader_epoch=-1,
                    fetch_offset=offset,
                    last_fetched_epoch=-1,
                    log_start_offset=-1,
                    partition_max_bytes=self.max_partition_bytes,
                )
            )
        values = {
            "replica_id": -1,
            "max_wait": datetime.timedelta(seconds=wait),
            "min_bytes": self.min_bytes,
            "max_bytes": self.max_bytes,
            "isolation_level": self.isolation_level,
            "session_id": 0,
            "session_epoch": -1,  # a full fetch, no session
            "topics": [Nested("FetchTopic", topic=t, partitions=ps) for t, ps in by_topic.items()],
            "forgotten_topics_data": [],
            "rack_id": "",
        }
        connection = await self.cluster.connection(node_id)
        response = await connection.call(FETCH, values, timeout=self.request_timeout + wait)
        top_error = int(getattr(response, "error_code", 0))
        if top_error:
            error = KafkaResponseError(top_error, None, "Fetch")
            return dict.fromkeys(positions, error)
        results: dict[TopicPartition, PartitionData | Exception] = {}
        for topic in response.responses:
            for part in topic.partitions:
                tp = (topic.topic, int(part.partition_index))
                if tp not in positions:
                    continue
                results[tp] = self._partition_result(tp, positions[tp], part)
        for tp in positions:
            results.setdefault(
                tp, KafkaResponseError(ErrorCode.unknown_topic_or_partition, "not in the answer")
            )
        return results

    def _partition_result(self, tp: TopicPartition, offset: int, part) -> PartitionData | Exception:
        code = error_code(part.error_code)
        if code == ErrorCode.offset_out_of_range:
            return OffsetOutOfRangeError(tp[0], tp[1], offset)
        if code != ErrorCode.none:
            return KafkaResponseError(code, None, f"{tp[0]}-{tp[1]}")
        high_watermark = int(part.high_watermark)
        stable = int(getattr(part, "last_stable_offset", -1))
        limit, aborted = high_watermark, None
        if self.isolation_level == READ_COMMITTED:
            limit = stable if 0 <= stable <= high_watermark else high_watermark
            aborted = [
                (int(a.producer_id), int(a.first_offset))
                for a in (getattr(part, "aborted_transactions", None) or ())
            ]
        try:
            records, next_offset = decode_partition(*tp, part.records, offset, limit, aborted)
        except CorruptRecordError as exc:
            return KafkaResponseError(ErrorCode.corrupt_message, str(exc), f"{tp[0]}-{tp[1]}")
        return PartitionData(
            tp[0],
            tp[1],
            offset,
            records,
            next_offset,
            high_watermark,
            int(getattr(part, "log_start_offset", -1)),
            stable,
        )

    def readable_end(self, answer: PartitionData) -> int:
        """Where this consumer's reads stop: the high watermark, or for read_committed the
        last stable offset."""
        stable = answer.last_stable_offset
        if self.isolation_level == READ_COMMITTED and 0 <= stable <= answer.high_watermark:
            return stable
        return answer.high_watermark

    # Ranges for batch jobs -------------------------------------------------------------
    async def iter_range(
        self, topic: str, partition: int, start: int, end: int, *, timeout: float = 60.0
    ) -> AsyncIterator[list[ConsumerRecord]]:
        """Every record with start <= offset < end, in chunks, across compaction gaps.

        Offsets the log no longer holds (compacted away) are skipped; offsets not yet below
        the high watermark are waited for until `timeout`, then KafkaTimeoutError.
        """
        position = start
        deadline = time.monotonic() + timeout
        tp = (topic, partition)
        while position < end:
            answer = (await self.fetch({tp: position}))[tp]
            if isinstance(answer, Exception):
                raise answer
            chunk = [r for r in answer.records if r.offset < end]
            if chunk:
                yield chunk
            if answer.next_offset > position:
                position = answer.next_offset
                continue
            # Nothing at or after `position` below the high watermark (the last stable
            # offset for read_committed): compacted away.
            readable = self.readable_end(answer)
            if readable >= end:
                return
            if readable > position:
                position = readable
                continue
            if time.monotonic() > deadline:
                what = "last stable offset" if self.isolation_level else "high watermark"
                raise KafkaTimeoutError(
                    f"{topic}-{partition}: offsets up to {end} requested, "
                    f"{what} is {readable} after {timeout}s"
                )

    async def fetch_range(
        self, topic: str, partition: int, start: int, end: int, *, timeout: float = 60.0
    ) -> list[ConsumerRecord]:
        records: list[ConsumerRecord] = []
        async for chunk in self.iter_range(topic, partition, start, end, timeout=timeout):
            records.extend(chunk)
        return records


def positions_from(items: Iterable[tuple[str, int, int]]) -> dict[TopicPartition, int]:
    return {(topic, partition): offset for topic, partition, offset in items}
