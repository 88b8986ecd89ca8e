"""Kafka's LogValidator for a produced v2 batch: its records must be what its header says.

`validate_produced_batch` (records/batch.py) has checked the batch's size, CRC and header
rules. Here the records themselves are read, as Kafka's broker reads every produced record
before offsets are assigned:
- compressed batches are decompressed first, capped at `compression.MAX_DECOMPRESSED_BYTES`
  (a few KiB can claim gigabytes): an undecodable or oversized payload is CORRUPT_MESSAGE;
- the declared count, each record's length and fields, and offset deltas 0..count-1 must
  match the bytes (`records.validation.walk_records`), else INVALID_RECORD, as Kafka's
  record iterator and validateBatch answer;
- record rules with KIP-467 record errors that name each bad record by its index in the
  batch: a key on every record of a compacted topic (INVALID_RECORD) and CreateTime within
  message.timestamp.difference.max.ms of the broker's clock (INVALID_TIMESTAMP).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..config import LogConfig
from ..records import compression
from ..records.batch import (
    COMPRESSION_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
)
from ..records.validation import RecordStructureError, record_facts, walk_records
from ..records.varint import wrap_int64
from . import errors

UNBOUNDED_MS = 1 << 62  # at or above this, message.timestamp.difference.max.ms is off


class RecordError(NamedTuple):
    """One rejected record, as Produce v8+ reports it (KIP-467)."""

    batch_index: int
    message: str


class InvalidRecordsError(errors.InvalidRecordError):
    """INVALID_RECORD naming the records at fault (Kafka's RecordValidationException)."""

    def __init__(self, message: str, record_errors: tuple[RecordError, ...] = ()):
        super().__init__(message)
        self.record_errors = record_errors


class InvalidTimestampsError(errors.InvalidTimestampError):
    """INVALID_TIMESTAMP naming the records whose timestamps are out of range."""

    def __init__(self, message: str, record_errors: tuple[RecordError, ...] = ()):
        super().__init__(message)
        self.record_errors = record_errors


@dataclass(frozen=True, slots=True)
class RecordRules:
    """What a topic's config asks of each record, and the partition named in messages."""

    topic_partition: str
    compacted: bool
    log_append_time: bool
    timestamp_max_diff_ms: int

    @classmethod
    def of(cls, config: LogConfig, topic_partition: str) -> RecordRules:
        return cls(
            topic_partition,
            config.compact,
            config.message_timestamp_type == "LogAppendTime",
            config.message_timestamp_difference_max_ms,
        )

    @property
    def reads_every_record(self) -> bool:
        return self.compacted or self.timestamp_max_diff_ms < UNBOUNDED_MS


def check_records(buf, pos: int, header: tuple, rules: RecordRules, now: int) -> None:
    """Check the records of the batch at `pos` (its HEADER tuple given, its size already
    checked against the buffer); raise the log's typed errors."""
    attributes = header[5]
    count = header[12]
    end = pos + header[1] + LOG_OVERHEAD
    codec = attributes & COMPRESSION_MASK
    if codec:
        records = decompressed_records(codec, buf, pos + HEADER_SIZE, end)
        start, stop = 0, len(records)
    else:
        records, start, stop = buf, pos + HEADER_SIZE, end
    try:
        walk_records(records, start, stop, count)
    except RecordStructureError as exc:
        raise structure_error(exc, rules.topic_partition) from None
    claims_log_append_time = bool(attributes & TIMESTAMP_TYPE_MASK)
    if rules.reads_every_record or claims_log_append_time:
        _check_record_rules(records, start, header, rules, now)


def decompressed_records(codec: int, buf, start: int, end: int) -> bytes:
    try:
        return compression.decompress(codec, memoryview(buf)[start:end])
    except compression.CompressionError as exc:
        raise errors.CorruptMessageError(str(exc)) from None


def structure_error(exc: RecordStructureError, topic_partition: str) -> InvalidRecordsError:
    message = f"{exc} in topic partition {topic_partition}"
    if exc.record_index is None:
        return InvalidRecordsError(message)
    return InvalidRecordsError(message, (RecordError(exc.record_index, message),))


def _check_record_rules(records, start: int, header: tuple, rules: RecordRules, now: int):
    """Kafka's validateKey and validateTimestamp for every record; all errors are
    collected, as Kafka reports every bad record of the batch."""
    first_timestamp, max_timestamp = header[7], header[8]
    claims_log_append_time = bool(header[5] & TIMESTAMP_TYPE_MASK)
    max_diff = rules.timestamp_max_diff_ms
    check_range = not rules.log_append_time and max_diff < UNBOUNDED_MS
    found: list[RecordError] = []
    bad_timestamp = False
    for index, (timestamp_delta, has_key) in enumerate(record_facts(records, start, header[12])):
        if rules.compacted and not has_key:
            found.append(
                RecordError(
                    index,
                    "Compacted topic cannot accept message without key in topic partition "
                    f"{rules.topic_partition}.",
                )
            )
            continue
        timestamp = (
            max_timestamp
            if claims_log_append_time
            else wrap_int64(first_timestamp + timestamp_delta)
        )
        if not rules.log_append_time and timestamp != NO_TIMESTAMP:
            if check_range and abs(now - timestamp) > max_diff:
                bad_timestamp = True
                found.append(
                    RecordError(
                        index,
                        f"Timestamp {timestamp} of message with offset {index} is out of "
                        f"range. The timestamp should be within [{now - max_diff}, "
                        f"{now + max_diff}]",
                    )
                )
        elif claims_log_append_time:
            bad_timestamp = True
            found.append(
                RecordError(
                    index,
                    "Invalid timestamp type in message: producer should not set timestamp "
                    "type to LogAppendTime.",
                )
            )
    if not found:
        return
    if bad_timestamp:
        raise InvalidTimestampsError(
            "One or more records have been rejected due to invalid timestamp", tuple(found)
        )
    shown = ", ".join(
        f"RecordError(batchIndex={e.batch_index}, message='{e.message}')" for e in found[:3]
    )
    raise InvalidRecordsError(
        f"One or more records have been rejected due to {len(found)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]",
        tuple(found),
    )
