"""`__transaction_state`: which partition holds a transactional id, and Kafka's record schemas.

The key is Kafka's TransactionLogKey v0 behind the coordinator record type (0): an int16 0
then the transactional id as a string. The value is TransactionLogValue behind its int16
version: v0 (not flexible) is what Kafka writes for clients of transaction version 1 and
what we write; v1 is flexible (compact lengths and tagged fields: previous and next producer
id, next producer epoch, client transaction version) and read as well. A null value is a
tombstone: the transactional id expired.
"""

from __future__ import annotations

import enum
import functools
import struct
from dataclasses import dataclass, field

from brokerd.records.varint import VarintError, decode_unsigned, encode_unsigned
from brokerd.util.java_hash import java_string_hash, kafka_abs

TOPIC = "__transaction_state"

KEY_VERSION = 0  # CoordinatorRecordType.TRANSACTION_LOG
VALUE_VERSION = 0
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class TxnState(enum.IntEnum):
    """Kafka's TransactionState ids (the TransactionStatus field) and names (Describe)."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        return _NAMES[self]


_NAMES = {
    TxnState.EMPTY: "Empty",
    TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
STATE_BY_NAME = {name: state for state, name in _NAMES.items()}


# The partition formula ----------------------------------------------------------------------
@functools.lru_cache(maxsize=4096)  # every transactional request asks, several times
def partition_for(transactional_id: str, num_partitions: int) -> int:
    """TransactionStateManager.partitionFor: Utils.abs(transactionalId.hashCode) % partitions."""
    return kafka_abs(java_string_hash(transactional_id)) % num_partitions


def topic_configs(segment_bytes: int, min_isr: int) -> dict[str, str]:
    """The overrides Kafka gives the topic when it creates it (TransactionStateManager's
    transactionTopicConfigs)."""
    return {
        "cleanup.policy": "compact",
        "compression.type": "uncompressed",
        "min.insync.replicas": str(min_isr),
        "segment.bytes": str(segment_bytes),
        "unclean.leader.election.enable": "false",
    }


# Records ---------------------------------------------------------------------------------------
@dataclass
class TxnLogValue:
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    state: TxnState
    # topic -> partitions, in the order they are written
    partitions: dict[str, list[int]] = field(default_factory=dict)
    last_update_timestamp_ms: int = -1
    start_timestamp_ms: int = -1
    # v1 tagged fields
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    next_producer_epoch: int = NO_PRODUCER_EPOCH
    client_transaction_version: int = 0

    @property
    def topic_partitions(self) -> set[tuple[str, int]]:
        return {(t, p) for t, parts in self.partitions.items() for p in parts}


class RecordFormatError(ValueError):
    """A record in __transaction_state that no known schema reads."""


def group_partitions(topic_partitions) -> dict[str, list[int]]:
    """(topic, partition) pairs grouped by topic, each topic's partitions sorted."""
    out: dict[str, list[int]] = {}
    for topic, partition in sorted(topic_partitions):
        out.setdefault(topic, []).append(partition)
    return out


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    return _I16.pack(len(data)) + data


def key(transactional_id: str) -> bytes:
    return _I16.pack(KEY_VERSION) + _string(transactional_id)


def value(record: TxnLogValue) -> bytes:
    """TransactionLogValue v0. An Empty state writes a null partition list, as Kafka does."""
    if record.state == TxnState.EMPTY and record.partitions:
        raise ValueError("an Empty transaction has no partitions")
    out = [
        _I16.pack(VALUE_VERSION),
        _I64.pack(record.producer_id),
        _I16.pack(record.producer_epoch),
        _I32.pack(record.transaction_timeout_ms),
        _I8.pack(int(record.state)),
    ]
    if record.state == TxnState.EMPTY:
        out.append(_I32.pack(-1))
    else:
        out.append(_I32.pack(len(record.partitions)))
        for topic, partitions in record.partitions.items():
            out.append(_string(topic))
            out.append(_I32.pack(len(partitions)))
            out.extend(_I32.pack(p) for p in partitions)
    out.append(_I64.pack(record.last_update_timestamp_ms))
    out.append(_I64.pack(record.start_timestamp_ms))
    return b"".join(out)


# Decoding ---------------------------------------------------------------------------------------
class _Reader:
    def __init__(self, data: bytes):
        self.data = memoryview(data)
        self.pos = 0

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise RecordFormatError("truncated record")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: struct.Struct) -> int:
        return fmt.unpack(self.take(fmt.size))[0]

    def uvarint(self) -> int:
        try:
            value, self.pos = decode_unsigned(self.data, self.pos)
        except VarintError as exc:
            raise RecordFormatError("bad varint") from exc
        return value

    def string(self, compact: bool) -> str:
        length = self.uvarint() - 1 if compact else self.unpack(_I16)
        if length < 0:
            raise RecordFormatError("null string")
        try:
            return bytes(self.take(length)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordFormatError("string is not UTF-8") from exc

    def array_length(self, compact: bool) -> int:
        n = self.uvarint() - 1 if compact else self.unpack(_I32)
        if n > len(self.data) - self.pos:  # every element takes at least one byte
            raise RecordFormatError("array longer than the record")
        return n


def decode_key(data: bytes) -> str:
    reader = _Reader(data)
    version = reader.unpack(_I16)
    if version != KEY_VERSION:
        raise RecordFormatError(f"unknown key version {version}")
    return reader.string(compact=False)


def decode_value(data: bytes) -> TxnLogValue:
    reader = _Reader(data)
    version = reader.unpack(_I16)
    if version not in (0, 1):
        raise RecordFormatError(f"unknown value version {version}")
    compact = version >= 1
    producer_id = reader.unpack(_I64)
    producer_epoch = reader.unpack(_I16)
    timeout_ms = reader.unpack(_I32)
    status = reader.unpack(_I8)
    try:
        state = TxnState(status)
    except ValueError as exc:
        raise RecordFormatError(f"unknown transaction status {status}") from exc
    partitions: dict[str, list[int]] = {}
    count = reader.array_length(compact)
    for _ in range(max(count, 0)):
        topic = reader.string(compact)
        n = reader.array_length(compact)
        parts = [reader.unpack(_I32) for _ in range(max(n, 0))]
        if compact:
            _skip_tagged(reader)
        partitions.setdefault(topic, []).extend(parts)
    last_update = reader.unpack(_I64)
    start = reader.unpack(_I64)
    record = TxnLogValue(
        producer_id,
        producer_epoch,
        timeout_ms,
        state,
        {} if state == TxnState.EMPTY else partitions,
        last_update,
        start,
    )
    if compact:
        for tag, body in _tagged(reader):
            field_reader = _Reader(bytes(body))
            if tag == 0:
                record.previous_producer_id = field_reader.unpack(_I64)
            elif tag == 1:
                record.next_producer_id = field_reader.unpack(_I64)
            elif tag == 2:
                record.client_transaction_version = field_reader.unpack(_I16)
            elif tag == 3:
                record.next_producer_epoch = field_reader.unpack(_I16)
    return record


def _tagged(reader: _Reader) -> list[tuple[int, memoryview]]:
    out = []
    for _ in range(reader.uvarint()):
        tag = reader.uvarint()
        size = reader.uvarint()
        out.append((tag, reader.take(size)))
    return out


def _skip_tagged(reader: _Reader) -> None:
    _tagged(reader)


def decode_record(key_bytes: bytes | None, value_bytes: bytes | None):
    """(transactional id, its value or None for a tombstone)."""
    if key_bytes is None:
        raise RecordFormatError("record without a key")
    transactional_id = decode_key(key_bytes)
    if value_bytes is None:
        return transactional_id, None
    return transactional_id, decode_value(value_bytes)


def encode_value_v1(record: TxnLogValue) -> bytes:
    """TransactionLogValue v1 (flexible), as Kafka writes it for transaction version 2
    clients; brokerd reads it, and tests compare against it."""
    out = [
        _I16.pack(1),
        _I64.pack(record.producer_id),
        _I16.pack(record.producer_epoch),
        _I32.pack(record.transaction_timeout_ms),
        _I8.pack(int(record.state)),
    ]
    if record.state == TxnState.EMPTY:
        out.append(encode_unsigned(0))
    else:
        out.append(encode_unsigned(len(record.partitions) + 1))
        for topic, partitions in record.partitions.items():
            data = topic.encode("utf-8")
            out.append(encode_unsigned(len(data) + 1) + data)
            out.append(encode_unsigned(len(partitions) + 1))
            out.extend(_I32.pack(p) for p in partitions)
            out.append(encode_unsigned(0))
    out.append(_I64.pack(record.last_update_timestamp_ms))
    out.append(_I64.pack(record.start_timestamp_ms))
    tags = []
    if record.previous_producer_id != NO_PRODUCER_ID:
        tags.append((0, _I64.pack(record.previous_producer_id)))
    if record.next_producer_id != NO_PRODUCER_ID:
        tags.append((1, _I64.pack(record.next_producer_id)))
    if record.client_transaction_version != 0:
        tags.append((2, _I16.pack(record.client_transaction_version)))
    if record.next_producer_epoch != NO_PRODUCER_EPOCH:
        tags.append((3, _I16.pack(record.next_producer_epoch)))
    out.append(encode_unsigned(len(tags)))
    for tag, body in tags:
        out.append(encode_unsigned(tag) + encode_unsigned(len(body)) + body)
    return b"".join(out)
