"""Kafka's LogValidator: what a produced record set must satisfy before offsets are assigned.

Two entries, both raising the log's typed errors: `check_single_batch` for the common
request (one v2 batch, checked from its header tuple, its bytes written as they came) and
`validate_record_set` for the rest (legacy sets first up-converted by `up_convert_legacy`).
The header rules and CRC are `validate_produced_batch`'s (records/batch.py). Then the
records themselves are read, as Kafka's broker reads every produced record:
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
from ..records import compression, legacy
from ..records.batch import (
    COMPRESSION_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    CorruptRecordError,
    InvalidRecordError,
    RecordBatch,
    validate_produced_batch,
)
from ..records.validation import RecordStructureError, record_facts, walk_records
from ..records.varint import wrap_int64
from . import errors
from .segment import CRC_WRITE_CHUNK

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


def check_single_batch(
    records: bytes | bytearray | memoryview,
    header: tuple,
    config: LogConfig,
    topic_partition: str,
    now: int,
) -> bool:
    """Every check of a produced record set that is one v2 batch (its HEADER tuple given)
    for a topic that asks nothing of each record (CreateTime, not compacted, no timestamp
    bound: `Log`'s plain appends), short of the CRC of a large uncompressed batch: True when that CRC is left for the
    write (`segment.append_batch_checking_crc`), which reads the batch from memory once
    instead of twice. Whoever refuses such a batch, here or later, checks its CRC first
    (`check_batch_crc`), so a damaged batch is CORRUPT_MESSAGE exactly as when checked up
    front. A compressed batch is read whole to be decompressed: its CRC is checked first."""
    size = len(records)
    max_bytes = config.max_message_bytes
    if size > max_bytes:
        raise errors.RecordTooLargeError(
            f"batch of {size} bytes exceeds max.message.bytes {max_bytes}"
        )
    crc_pending = size > CRC_WRITE_CHUNK and not header[5] & COMPRESSION_MASK
    try:
        validate_produced_batch(records, 0, header, not crc_pending)
    except CorruptRecordError as exc:
        raise errors.CorruptMessageError(str(exc)) from exc
    except InvalidRecordError as exc:
        if crc_pending:
            check_batch_crc(records, header)
        raise errors.InvalidRecordError(str(exc)) from exc
    try:
        if header[5] & (COMPRESSION_MASK | TIMESTAMP_TYPE_MASK):
            check_records(records, 0, header, RecordRules.of(config, topic_partition), now)
        else:
            walk_records(records, HEADER_SIZE, size, header[12])
    except RecordStructureError as exc:
        if crc_pending:
            check_batch_crc(records, header)
        raise structure_error(exc, topic_partition) from None
    except (errors.InvalidRecordError, errors.InvalidTimestampError):
        if crc_pending:
            check_batch_crc(records, header)
        raise
    return crc_pending


def check_batch_crc(records, header: tuple) -> None:
    """The full header check, CRC included, of a batch whose CRC was left for the write."""
    try:
        validate_produced_batch(records, 0, header)
    except CorruptRecordError as exc:
        raise errors.CorruptMessageError(str(exc)) from exc
    except InvalidRecordError as exc:
        raise errors.InvalidRecordError(str(exc)) from exc


def up_convert_legacy(buf: bytearray, max_message_bytes: int) -> bytearray:
    """A produced v0/v1 message set as one v2 batch (entries over max.message.bytes are
    refused before they are decoded)."""
    try:
        return legacy.up_convert(buf, max_message_bytes)
    except CorruptRecordError as exc:
        raise errors.CorruptMessageError(str(exc)) from exc
    except legacy.MessageTooLargeError as exc:
        raise errors.RecordTooLargeError(str(exc)) from exc


def validate_record_set(
    buf: bytes | bytearray | memoryview, config: LogConfig, topic_partition: str, now: int
) -> list[RecordBatch]:
    """The general path: every batch of a produced v2 record set checked whole, CRC
    included; as Kafka's LogValidator, a client sends exactly one batch."""
    batches = []
    pos = 0
    end = len(buf)
    max_bytes = config.max_message_bytes
    rules = RecordRules.of(config, topic_partition)
    try:
        while pos < end:
            if end - pos < HEADER_SIZE:
                raise CorruptRecordError("trailing bytes shorter than a batch header")
            if buf[pos + 16] != 2:
                raise CorruptRecordError(f"magic {buf[pos + 16]} mixed into a v2 record set")
            batch = RecordBatch(buf, pos)
            size = batch.size
            if size > max_bytes:
                raise errors.RecordTooLargeError(
                    f"batch of {size} bytes exceeds max.message.bytes {max_bytes}"
                )
            batch.validate_from_client()
            check_records(buf, pos, batch.header_fields, rules, now)
            batches.append(batch)
            pos += size
    except CorruptRecordError as exc:
        raise errors.CorruptMessageError(str(exc)) from exc
    except InvalidRecordError as exc:
        raise errors.InvalidRecordError(str(exc)) from exc
    if not batches:
        raise errors.CorruptMessageError("empty record set")
    if len(batches) > 1:
        raise errors.InvalidRecordError(
            f"a produced v2 record set must hold one batch, not {len(batches)}"
        )
    return batches


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
        # A claim of LogAppendTime is refused on every topic unless the timestamp is
        # already out of range (Kafka's validateTimestamp reports that one instead).
        if check_range and timestamp != NO_TIMESTAMP and abs(now - timestamp) > max_diff:
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
