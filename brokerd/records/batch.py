"""Record batch v2 (magic 2): a zero-copy view that validates and patches, and a builder.

Layout (61-byte header, big-endian):
    0 baseOffset int64        8 batchLength int32     12 partitionLeaderEpoch int32
   16 magic int8             17 crc uint32 (CRC-32C of bytes 21..end)
   21 attributes int16       23 lastOffsetDelta int32 27 firstTimestamp int64
   35 maxTimestamp int64     43 producerId int64      51 producerEpoch int16
   53 baseSequence int32     57 recordsCount int32    61 records...

baseOffset and partitionLeaderEpoch lie outside the CRC, so the broker assigns them by
patching the header in place: the produce path never decodes records.
"""

from __future__ import annotations

import builtins
import struct
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import crc32c

from . import compression
from .varint import VarintError, decode_varint, decode_varint32, encode_varint, wrap_int64

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: what batchLength does not count
MAGIC = 2

BASE_OFFSET_POS = 0
LENGTH_POS = 8
PARTITION_LEADER_EPOCH_POS = 12
MAGIC_POS = 16
CRC_POS = 17
ATTRIBUTES_POS = 21
LAST_OFFSET_DELTA_POS = 23
FIRST_TIMESTAMP_POS = 27
MAX_TIMESTAMP_POS = 35
PRODUCER_ID_POS = 43
PRODUCER_EPOCH_POS = 51
BASE_SEQUENCE_POS = 53
RECORDS_COUNT_POS = 57

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

CREATE_TIME = 0
LOG_APPEND_TIME = 1

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")


class CorruptRecordError(ValueError):
    """Bytes that are not a well-formed batch: bad size, magic or CRC (CORRUPT_MESSAGE)."""


class InvalidRecordError(ValueError):
    """A well-formed batch that breaks a rule of the broker (INVALID_RECORD)."""


@dataclass(slots=True)
class Header:
    key: str
    value: bytes | None


@dataclass(slots=True)
class Record:
    """A decoded record with its absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header] = field(default_factory=list)
    attributes: int = 0


@dataclass(slots=True)
class SimpleRecord:
    """What a producer hands the builder: offsets and timestamp deltas are derived."""

    value: bytes | None
    key: bytes | None = None
    headers: Sequence[tuple[str, bytes | None]] = ()
    timestamp: int | None = None


def crc_of(buf: bytes | bytearray | memoryview, pos: int, size: int) -> int:
    return crc32c.crc32c(memoryview(buf)[pos + ATTRIBUTES_POS : pos + size])


def check_crc_value(stored: int, computed: int) -> None:
    if computed != stored:
        raise CorruptRecordError(f"CRC mismatch: stored {stored}, computed {computed}")


def validate_produced_batch(
    buf: bytes | bytearray | memoryview, pos: int, header: tuple, check_crc: bool = True
) -> None:
    """What a produced batch at `pos` (its `HEADER.unpack_from` tuple given) must satisfy
    before offsets are assigned: size, CRC-32C and the header rules. The produce hot path,
    so the fields are read from the tuple, not through a view's properties. Without
    check_crc the caller checks the CRC itself (the log does, while writing a large batch)."""
    (_, length, _, _, crc, attributes, last_delta, _, _, producer_id, _, base_sequence, count) = (
        header
    )
    if length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptRecordError(f"batch length {length} is below the header size")
    end = pos + length + LOG_OVERHEAD
    if end > len(buf):
        raise CorruptRecordError(
            f"batch of {length + LOG_OVERHEAD} bytes runs past the buffer ({len(buf) - pos} left)"
        )
    if check_crc:
        computed = crc32c.crc32c(memoryview(buf)[pos + ATTRIBUTES_POS : end])
        if computed != crc:  # check_crc_value, inlined (the 16 KiB produce path)
            raise CorruptRecordError(f"CRC mismatch: stored {crc}, computed {computed}")
    if last_delta < 0:
        raise InvalidRecordError(f"negative lastOffsetDelta {last_delta}")
    if count != last_delta + 1:
        raise InvalidRecordError(
            f"record count {count} does not match lastOffsetDelta {last_delta}"
        )
    if attributes & COMPRESSION_MASK not in compression.NAMES:
        raise InvalidRecordError(f"unknown compression codec {attributes & COMPRESSION_MASK}")
    if attributes & CONTROL_MASK:
        raise InvalidRecordError("clients may not produce control batches")
    if producer_id != NO_PRODUCER_ID and base_sequence < 0:
        raise InvalidRecordError(f"invalid sequence {base_sequence} for producer id {producer_id}")


class RecordBatch:
    """A view of one v2 batch at `pos` in `buf`. Reading the header decodes nothing else."""

    __slots__ = ("buf", "pos", "_header")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0):
        if len(buf) - pos < HEADER_SIZE:
            raise CorruptRecordError(
                f"batch header needs {HEADER_SIZE} bytes, {len(buf) - pos} left"
            )
        self.buf = buf
        self.pos = pos
        self._header = HEADER.unpack_from(buf, pos)
        if self._header[3] != MAGIC:
            raise CorruptRecordError(f"magic {self._header[3]} is not 2")

    # Header fields -------------------------------------------------------------------
    @property
    def header_fields(self) -> tuple:
        """Every field of the header, unpacked in `HEADER`'s order (validators take it whole)."""
        return self._header

    @property
    def base_offset(self) -> int:
        return self._header[0]

    @property
    def batch_length(self) -> int:
        return self._header[1]

    @property
    def size(self) -> int:
        return self._header[1] + LOG_OVERHEAD

    @property
    def partition_leader_epoch(self) -> int:
        return self._header[2]

    @property
    def magic(self) -> int:
        return MAGIC

    @property
    def crc(self) -> int:
        return self._header[4]

    @property
    def attributes(self) -> int:
        return self._header[5]

    @property
    def compression(self) -> int:
        return self._header[5] & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        return LOG_APPEND_TIME if self._header[5] & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self._header[5] & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self._header[5] & CONTROL_MASK)

    @property
    def last_offset_delta(self) -> int:
        return self._header[6]

    @property
    def last_offset(self) -> int:
        return self._header[0] + self._header[6]

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def first_timestamp(self) -> int:
        return self._header[7]

    @property
    def max_timestamp(self) -> int:
        return self._header[8]

    @property
    def producer_id(self) -> int:
        return self._header[9]

    @property
    def producer_epoch(self) -> int:
        return self._header[10]

    @property
    def base_sequence(self) -> int:
        return self._header[11]

    @property
    def last_sequence(self) -> int:
        if self._header[11] == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self._header[11] + self._header[6]) & 0x7FFFFFFF  # sequences wrap at 2^31

    @property
    def record_count(self) -> int:
        return self._header[12]

    @property
    def has_producer_id(self) -> bool:
        return self._header[9] != NO_PRODUCER_ID

    @property
    def is_idempotent(self) -> bool:
        return self.has_producer_id and self._header[11] != NO_SEQUENCE

    def bytes(self) -> bytes:
        return bytes(memoryview(self.buf)[self.pos : self.pos + self.size])

    # Validation ----------------------------------------------------------------------
    def compute_crc(self) -> int:
        return crc_of(self.buf, self.pos, self.size)

    def check_size(self) -> None:
        length = self._header[1]
        if length < HEADER_SIZE - LOG_OVERHEAD:
            raise CorruptRecordError(f"batch length {length} is below the header size")
        if self.pos + self.size > len(self.buf):
            raise CorruptRecordError(
                f"batch of {self.size} bytes runs past the buffer ({len(self.buf) - self.pos} left)"
            )

    def is_valid(self) -> bool:
        try:
            self.check_size()
        except CorruptRecordError:
            return False
        return self.compute_crc() == self.crc

    def validate(self) -> None:
        """Structure and CRC: what recovery and the fetch path trust (CORRUPT_MESSAGE)."""
        self.check_size()
        computed = self.compute_crc()
        if computed != self.crc:
            raise CorruptRecordError(f"CRC mismatch: stored {self.crc}, computed {computed}")

    def validate_from_client(self) -> None:
        """Everything a produced batch must satisfy before offsets are assigned."""
        validate_produced_batch(self.buf, self.pos, self._header)

    # In-place patches (outside the CRC) ---------------------------------------------
    def set_base_offset(self, offset: int) -> None:
        _I64.pack_into(self.buf, self.pos + BASE_OFFSET_POS, offset)
        self._header = (offset, *self._header[1:])

    def set_partition_leader_epoch(self, epoch: int) -> None:
        _I32.pack_into(self.buf, self.pos + PARTITION_LEADER_EPOCH_POS, epoch)
        h = self._header
        self._header = (h[0], h[1], epoch, *h[3:])

    def set_log_append_time(self, timestamp: int) -> None:
        """LogAppendTime: flag the batch and stamp maxTimestamp; both are under the CRC."""
        attributes = self.attributes | TIMESTAMP_TYPE_MASK
        _I16.pack_into(self.buf, self.pos + ATTRIBUTES_POS, attributes)
        _I64.pack_into(self.buf, self.pos + MAX_TIMESTAMP_POS, timestamp)
        _U32.pack_into(self.buf, self.pos + CRC_POS, self.compute_crc())
        self._header = HEADER.unpack_from(self.buf, self.pos)

    # Records -------------------------------------------------------------------------
    def records_payload(self) -> builtins.bytes:
        """The (decompressed) bytes of the records section."""
        self.check_size()  # a short or truncated batch must not decode a shifted payload
        raw = memoryview(self.buf)[self.pos + HEADER_SIZE : self.pos + self.size]
        if self.compression == compression.NONE:
            return bytes(raw)
        try:
            return compression.decompress(self.compression, raw)
        except compression.CompressionError as exc:
            raise CorruptRecordError(str(exc)) from exc

    def __iter__(self) -> Iterator[Record]:
        if self.record_count < 0:
            raise CorruptRecordError(f"negative record count {self.record_count}")
        payload = self.records_payload()
        pos = 0
        for _ in range(self.record_count):
            record, pos = _decode_record(payload, pos, self.base_offset, self)
            yield record
        if pos != len(payload):
            raise CorruptRecordError(
                f"{len(payload) - pos} bytes left over after {self.record_count} records"
            )

    def records(self) -> list[Record]:
        return list(self)

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"count={self.record_count}, size={self.size}, codec={self.compression})"
        )


def _decode_record(payload: bytes, pos: int, base_offset: int, batch: RecordBatch):
    try:
        length, pos = decode_varint32(payload, pos)
        end = pos + length
        if length < 0 or end > len(payload):
            raise CorruptRecordError(f"record length {length} runs past the batch")
        attributes = payload[pos]
        pos += 1
        timestamp_delta, pos = decode_varint(payload, pos)
        offset_delta, pos = decode_varint32(payload, pos)
        key, pos = _read_bytes(payload, pos, end)
        value, pos = _read_bytes(payload, pos, end)
        header_count, pos = decode_varint32(payload, pos)
        if header_count < 0:
            raise CorruptRecordError(f"negative header count {header_count}")
        headers = []
        for _ in range(header_count):
            hkey, pos = _read_bytes(payload, pos, end)
            if hkey is None:
                raise CorruptRecordError("null header key")
            hvalue, pos = _read_bytes(payload, pos, end)
            headers.append(Header(hkey.decode("utf-8", "replace"), hvalue))
        if pos != end:
            raise CorruptRecordError("record length does not match its fields")
    except (VarintError, IndexError) as exc:
        raise CorruptRecordError(f"malformed record: {exc}") from exc
    if batch.timestamp_type == LOG_APPEND_TIME:
        timestamp = batch.max_timestamp
    else:
        # Java adds longs: a producer's wrapped delta must come back as the same timestamp.
        timestamp = wrap_int64(batch.first_timestamp + timestamp_delta)
    return Record(base_offset + offset_delta, timestamp, key, value, headers, attributes), end


def _read_bytes(payload: bytes, pos: int, end: int) -> tuple[bytes | None, int]:
    length, pos = decode_varint32(payload, pos)
    if length < 0:
        return None, pos
    if pos + length > end:
        raise CorruptRecordError("field runs past its record")
    return payload[pos : pos + length], pos + length


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Iterable[tuple[str, bytes | None]] = (),
    attributes: int = 0,
) -> bytes:
    body = bytearray()
    body.append(attributes)
    body += encode_varint(timestamp_delta)
    body += encode_varint(offset_delta)
    _write_bytes(body, key)
    _write_bytes(body, value)
    headers = list(headers)
    body += encode_varint(len(headers))
    for hkey, hvalue in headers:
        _write_bytes(body, hkey.encode("utf-8"))
        _write_bytes(body, hvalue)
    return encode_varint(len(body)) + bytes(body)


def _write_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out += encode_varint(-1)
    else:
        out += encode_varint(len(data))
        out += data


def build_batch(
    records: Sequence[SimpleRecord],
    *,
    base_offset: int = 0,
    compression_type: int = compression.NONE,
    timestamp_type: int = CREATE_TIME,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    is_transactional: bool = False,
    is_control: bool = False,
    offset_deltas: Sequence[int] | None = None,
    last_offset_delta: int | None = None,
    max_timestamp: int | None = None,
    first_timestamp: int | None = None,
    now_ms: int | None = None,
) -> bytearray:
    """Encode records into one v2 batch. `offset_deltas` keeps a compacted batch's gaps."""
    if offset_deltas is None:
        offset_deltas = range(len(records))
    missing = any(r.timestamp is None for r in records)
    fill = (now_ms if now_ms is not None else int(time.time() * 1000)) if missing else 0
    timestamps = [fill if r.timestamp is None else r.timestamp for r in records]
    if first_timestamp is None:
        first_timestamp = timestamps[0] if timestamps else NO_TIMESTAMP
    if max_timestamp is None:
        max_timestamp = max(timestamps) if timestamps else NO_TIMESTAMP
    if last_offset_delta is None:
        last_offset_delta = offset_deltas[-1] if records else 0

    payload = b"".join(
        encode_record(delta, wrap_int64(ts - first_timestamp), r.key, r.value, r.headers)
        for r, delta, ts in zip(records, offset_deltas, timestamps, strict=True)
    )
    return batch_of_payload(
        payload,
        len(records),
        base_offset=base_offset,
        compression_type=compression_type,
        timestamp_type=timestamp_type,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=partition_leader_epoch,
        is_transactional=is_transactional,
        is_control=is_control,
        last_offset_delta=last_offset_delta,
        first_timestamp=first_timestamp,
        max_timestamp=max_timestamp,
    )


def batch_of_payload(
    payload: bytes | bytearray,
    record_count: int,
    *,
    first_timestamp: int,
    max_timestamp: int,
    last_offset_delta: int | None = None,
    base_offset: int = 0,
    compression_type: int = compression.NONE,
    timestamp_type: int = CREATE_TIME,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    is_transactional: bool = False,
    is_control: bool = False,
) -> bytearray:
    """A v2 batch around records already encoded (`encode_record`), compressed here.
    lastOffsetDelta defaults to record_count - 1 (consecutive offset deltas)."""
    if last_offset_delta is None:
        last_offset_delta = max(record_count - 1, 0)
    payload = compression.compress(compression_type, payload, MAGIC)

    attributes = compression_type & COMPRESSION_MASK
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_MASK
    if is_control:
        attributes |= CONTROL_MASK

    buf = bytearray(HEADER_SIZE + len(payload))
    HEADER.pack_into(
        buf,
        0,
        base_offset,
        HEADER_SIZE - LOG_OVERHEAD + len(payload),
        partition_leader_epoch,
        MAGIC,
        0,
        attributes,
        last_offset_delta,
        first_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    )
    buf[HEADER_SIZE:] = payload
    _U32.pack_into(buf, CRC_POS, crc_of(buf, 0, len(buf)))
    return buf


def iter_batches(buf: bytes | bytearray | memoryview, pos: int = 0) -> Iterator[RecordBatch]:
    """Consecutive v2 batches; stops at a trailing partial batch (as a fetch may return)."""
    end = len(buf)
    while end - pos >= HEADER_SIZE:
        batch = RecordBatch(buf, pos)
        if batch.batch_length < HEADER_SIZE - LOG_OVERHEAD:
            raise CorruptRecordError(f"batch length {batch.batch_length} at {pos} is too small")
        if pos + batch.size > end:
            return
        yield batch
        pos += batch.size
