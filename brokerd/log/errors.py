"""Typed errors of the log layer, each carrying the Kafka error code a handler answers with.

`error_code` is a plain int (Kafka's `Errors` numbering), so `brokerd.protocol.errors.error_code_of`
maps any of these exceptions straight to a response code.
"""

from __future__ import annotations


class LogError(Exception):
    """Base of the log's errors; anything unexpected answers UNKNOWN_SERVER_ERROR."""

    error_code: int = -1  # UNKNOWN_SERVER_ERROR


class OffsetOutOfRangeError(LogError):
    error_code = 1  # OFFSET_OUT_OF_RANGE


class CorruptMessageError(LogError):
    """Bytes that fail size, magic or CRC checks (Kafka's CorruptRecordException)."""

    error_code = 2  # CORRUPT_MESSAGE


class NotLeaderOrFollowerError(LogError):
    error_code = 6  # NOT_LEADER_OR_FOLLOWER


class RecordTooLargeError(LogError):
    """A batch larger than max.message.bytes (Kafka's RecordTooLargeException)."""

    error_code = 10  # MESSAGE_TOO_LARGE


class RecordListTooLargeError(LogError):
    """A produce request's record set larger than the segment can hold (RecordBatchTooLargeException)."""

    error_code = 18  # RECORD_LIST_TOO_LARGE


class InvalidTimestampError(LogError):
    """A CreateTime outside message.timestamp.difference.max.ms (or the before/after bounds)."""

    error_code = 32  # INVALID_TIMESTAMP


class OutOfOrderSequenceError(LogError):
    error_code = 45  # OUT_OF_ORDER_SEQUENCE_NUMBER


class DuplicateSequenceError(LogError):
    error_code = 46  # DUPLICATE_SEQUENCE_NUMBER


class InvalidProducerEpochError(LogError):
    """An epoch older than the producer's current one (2.7+ replaced PRODUCER_FENCED here)."""

    error_code = 47  # INVALID_PRODUCER_EPOCH


class InvalidProducerIdMappingError(LogError):
    error_code = 49  # INVALID_PRODUCER_ID_MAPPING


class KafkaStorageError(LogError):
    """The log directory failed (I/O error); clients retry on another replica."""

    error_code = 56  # KAFKA_STORAGE_ERROR


class LogDirNotFoundError(LogError):
    """A log dir that is not one of log.dirs (AlterReplicaLogDirs)."""

    error_code = 57  # LOG_DIR_NOT_FOUND


class ReplicaNotAvailableError(LogError):
    """No local replica of the partition (AlterReplicaLogDirs before the replica exists)."""

    error_code = 9  # REPLICA_NOT_AVAILABLE


class UnknownProducerIdError(LogError):
    error_code = 59  # UNKNOWN_PRODUCER_ID


class InvalidRecordError(LogError):
    """A well-formed batch that breaks a broker rule (compacted topic without keys, ...)."""

    error_code = 87  # INVALID_RECORD
