"""Legacy message sets: magic 0 (before 0.10) and magic 1 (0.10, adds timestamps).

A log entry is  offset int64 | size int32 | crc uint32 | magic int8 | attributes int8
                [timestamp int64, magic 1 only] | key bytes | value bytes
with a CRC-32 (IEEE) over magic..value. A compressed entry is a *wrapper* whose value is a
compressed message set of inner messages; the wrapper's offset is that of the last inner
message. Magic 1 inner offsets are relative (0..n-1) and resolve as
    absolute = wrapper_offset + (inner - last_inner);
magic 0 inner offsets are absolute. As in Kafka's DeepRecordsIterator, a magic 1 wrapper whose
offset is below its last inner offset (one a producer built: wrapper offset 0) keeps the inner
offsets as they are.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator, Sequence

from . import compression
from .batch import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    NO_TIMESTAMP,
    CorruptRecordError,
    Record,
    SimpleRecord,
    batch_of_payload,
    encode_record,
)
from .varint import wrap_int64

LOG_OVERHEAD = 12
MAGIC_POS = 16
V0_HEADER = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes: 18 bytes
V1_TIMESTAMP = struct.Struct(">q")
RECORD_OVERHEAD_V0 = 14  # crc + magic + attributes + key length + value length
RECORD_OVERHEAD_V1 = 22  # ... + timestamp

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08

_I32 = struct.Struct(">i")
_MAX_DECOMPRESSED_BYTES = compression.MAX_DECOMPRESSED_BYTES  # `compression` is a property below


class LegacyEntry:
    """A view of one v0/v1 log entry (plain message or compressed wrapper)."""

    __slots__ = ("buf", "pos", "offset", "message_size", "crc", "magic", "attributes")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0):
        if len(buf) - pos < V0_HEADER.size:
            raise CorruptRecordError("legacy entry header is truncated")
        self.buf = buf
        self.pos = pos
        self.offset, self.message_size, self.crc, self.magic, self.attributes = (
            V0_HEADER.unpack_from(buf, pos)
        )
        if self.magic not in (0, 1):
            raise CorruptRecordError(f"magic {self.magic} is not a legacy format")

    @property
    def size(self) -> int:
        return self.message_size + LOG_OVERHEAD

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        if self.magic == 1 and self.attributes & TIMESTAMP_TYPE_MASK:
            return LOG_APPEND_TIME
        return CREATE_TIME

    @property
    def timestamp(self) -> int:
        if self.magic == 0:
            return NO_TIMESTAMP
        timestamp_end = self.pos + V0_HEADER.size + V1_TIMESTAMP.size
        if self.message_size < RECORD_OVERHEAD_V1 or timestamp_end > len(self.buf):
            raise CorruptRecordError("magic 1 message too short for its timestamp")
        return V1_TIMESTAMP.unpack_from(self.buf, self.pos + V0_HEADER.size)[0]

    @property
    def max_timestamp(self) -> int:
        return self.timestamp

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def next_offset(self) -> int:
        return self.offset + 1

    @property
    def base_offset(self) -> int:
        if self.compression == compression.NONE:
            return self.offset
        return self.records()[0].offset  # as Kafka does: a wrapper must be opened

    @property
    def is_control(self) -> bool:
        return False

    @property
    def producer_id(self) -> int:
        return -1

    def _body(self) -> memoryview:
        return memoryview(self.buf)[self.pos + 16 : self.pos + self.size]

    def check_size(self) -> None:
        minimum = RECORD_OVERHEAD_V0 if self.magic == 0 else RECORD_OVERHEAD_V1
        if self.message_size < minimum:
            raise CorruptRecordError(f"message size {self.message_size} is below {minimum}")
        if self.pos + self.size > len(self.buf):
            raise CorruptRecordError("message runs past the buffer")

    def compute_crc(self) -> int:
        return zlib.crc32(self._body())

    def is_valid(self) -> bool:
        try:
            self.check_size()
        except CorruptRecordError:
            return False
        return self.compute_crc() == self.crc

    def validate(self) -> None:
        self.check_size()
        computed = self.compute_crc()
        if computed != self.crc:
            raise CorruptRecordError(f"CRC mismatch: stored {self.crc}, computed {computed}")

    def key_value(self) -> tuple[bytes | None, bytes | None]:
        self.check_size()
        pos = self.pos + 18 + (8 if self.magic == 1 else 0)
        end = self.pos + self.size
        key, pos = _read_bytes(self.buf, pos, end)
        value, pos = _read_bytes(self.buf, pos, end)
        if pos != end:
            raise CorruptRecordError("message size does not match its key and value")
        return key, value

    def decompressed_value(self, max_size: int = _MAX_DECOMPRESSED_BYTES) -> bytes:
        """A wrapper's inner message set, decoded (CorruptRecordError past `max_size`)."""
        _, value = self.key_value()
        if value is None:
            raise CorruptRecordError("compressed wrapper without a value")
        try:
            return compression.decompress(self.compression, value, self.magic, max_size)
        except compression.CompressionError as exc:
            raise CorruptRecordError(str(exc)) from exc

    def records(self) -> list[Record]:
        """The messages this entry holds: itself, or a wrapper's inner messages."""
        if self.compression == compression.NONE:
            key, value = self.key_value()
            return [Record(self.offset, self.timestamp, key, value, [], self.attributes)]
        inner = _inner_entries(self.decompressed_value(), self.magic)
        if self.magic == 1 and self.offset >= inner[-1].offset:
            absolute_base = self.offset - inner[-1].offset
        else:
            absolute_base = None  # magic 0 (absolute inner offsets) or a producer's wrapper
        out = []
        for entry in inner:
            inner_key, inner_value = entry.key_value()
            offset = entry.offset if absolute_base is None else absolute_base + entry.offset
            timestamp = (
                self.timestamp if self.timestamp_type == LOG_APPEND_TIME else entry.timestamp
            )
            out.append(Record(offset, timestamp, inner_key, inner_value, [], entry.attributes))
        return out

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())

    def bytes(self) -> bytes:
        return bytes(memoryview(self.buf)[self.pos : self.pos + self.size])

    def __repr__(self) -> str:
        return f"LegacyEntry(magic={self.magic}, offset={self.offset}, size={self.size})"


def _read_bytes(buf, pos: int, end: int) -> tuple[bytes | None, int]:
    if pos + 4 > end:
        raise CorruptRecordError("length field runs past the message")
    (length,) = _I32.unpack_from(buf, pos)
    pos += 4
    if length < 0:
        return None, pos
    if pos + length > end:
        raise CorruptRecordError("bytes field runs past the message")
    return bytes(buf[pos : pos + length]), pos + length


def _minimum_message_size(magic: int) -> int:
    return RECORD_OVERHEAD_V0 if magic == 0 else RECORD_OVERHEAD_V1


def iter_entries(buf: bytes | bytearray | memoryview, pos: int = 0) -> Iterator[LegacyEntry]:
    """Consecutive legacy entries; stops at a trailing partial entry."""
    end = len(buf)
    while end - pos >= V0_HEADER.size:
        entry = LegacyEntry(buf, pos)
        # Checked before the partial-entry test, as Kafka does: a size below the overhead is
        # corrupt wherever it sits, and a negative one would loop forever.
        if entry.message_size < _minimum_message_size(entry.magic):
            raise CorruptRecordError(f"message size {entry.message_size} at {pos} is too small")
        if pos + entry.size > end:
            return
        yield entry
        pos += entry.size


def _inner_entries(inner_bytes: bytes, wrapper_magic: int) -> list[LegacyEntry]:
    """A wrapper's decompressed message set, which must hold whole, valid, plain messages."""
    inner = list(iter_entries(inner_bytes))
    if not inner:
        raise CorruptRecordError("compressed wrapper holds no messages")
    last = inner[-1]
    if last.pos + last.size != len(inner_bytes):
        raise CorruptRecordError("compressed wrapper ends with a partial message")
    for entry in inner:
        _check_inner(entry, wrapper_magic)
    return inner


def _check_inner(entry: LegacyEntry, wrapper_magic: int) -> None:
    if entry.magic != wrapper_magic:
        raise CorruptRecordError(
            f"inner message magic {entry.magic} differs from wrapper magic {wrapper_magic}"
        )
    if entry.compression != compression.NONE:
        raise CorruptRecordError("nested compression")
    entry.validate()  # the wrapper's CRC covers only the compressed bytes


def encode_message(
    offset: int,
    magic: int,
    key: bytes | None,
    value: bytes | bytearray | None,
    *,
    attributes: int = 0,
    timestamp: int = NO_TIMESTAMP,
) -> bytes:
    body = bytearray([magic, attributes])
    if magic == 1:
        body += V1_TIMESTAMP.pack(timestamp)
    for field in (key, value):
        if field is None:
            body += _I32.pack(-1)
        else:
            body += _I32.pack(len(field)) + field
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, len(body) + 4, crc) + bytes(body)


def build_message_set(
    records: Sequence[SimpleRecord],
    *,
    magic: int,
    base_offset: int = 0,
    compression_type: int = compression.NONE,
    timestamp_type: int = CREATE_TIME,
) -> bytes:
    """Encode records as a v0/v1 message set, one wrapper when compressed."""
    if magic not in (0, 1):
        raise ValueError("legacy message sets have magic 0 or 1")
    if not records:
        return b""  # a wrapper must hold at least one message
    stamps = [r.timestamp if r.timestamp is not None else NO_TIMESTAMP for r in records]
    if compression_type == compression.NONE:
        ts_attr = TIMESTAMP_TYPE_MASK if magic == 1 and timestamp_type == LOG_APPEND_TIME else 0
        return b"".join(
            encode_message(base_offset + i, magic, r.key, r.value, attributes=ts_attr, timestamp=ts)
            for i, (r, ts) in enumerate(zip(records, stamps, strict=True))
        )
    inner = b"".join(
        encode_message(i if magic == 1 else base_offset + i, magic, r.key, r.value, timestamp=ts)
        for i, (r, ts) in enumerate(zip(records, stamps, strict=True))
    )
    attributes = compression_type
    if magic == 1 and timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    wrapper_value = compression.compress(compression_type, inner, magic)
    return encode_message(
        base_offset + len(records) - 1,
        magic,
        None,
        wrapper_value,
        attributes=attributes,
        timestamp=max(stamps) if stamps else NO_TIMESTAMP,
    )


class MessageTooLargeError(ValueError):
    """A legacy entry larger than the topic's max.message.bytes (MESSAGE_TOO_LARGE)."""


def up_convert(
    message_set: bytes | bytearray | memoryview,
    max_entry_bytes: int | None = None,
    max_decompressed_bytes: int = compression.MAX_DECOMPRESSED_BYTES,
) -> bytearray:
    """A produced v0/v1 message set as one v2 batch (same codec; zstd cannot occur).

    Checked as Kafka checks a produced message set before converting it: each entry's size
    (`max_entry_bytes`, max.message.bytes) and CRC, one magic for all entries, wrappers
    holding whole, valid, uncompressed messages of that magic (else CorruptRecordError).
    Messages are encoded into the v2 payload as they are read (no Python object per message
    is kept), and all wrappers together decompress to at most `max_decompressed_bytes`."""
    codec = compression.NONE
    magic = None
    budget = max_decompressed_bytes
    payload = bytearray()
    count = 0
    first_timestamp = max_timestamp = NO_TIMESTAMP
    for entry in iter_entries(message_set):
        if max_entry_bytes is not None and entry.size > max_entry_bytes:
            raise MessageTooLargeError(
                f"message of {entry.size} bytes exceeds max.message.bytes {max_entry_bytes}"
            )
        entry.validate()
        if magic is None:
            magic = entry.magic
        elif entry.magic != magic:
            # Kafka says INVALID_RECORD; v0-v2 clients predate that code (KIP-467).
            raise CorruptRecordError(
                f"message magic {entry.magic} is not the same as the first message's {magic}"
            )
        if entry.compression == compression.NONE:
            messages: Iterable[LegacyEntry] = (entry,)
        else:
            codec = entry.compression
            inner_bytes = entry.decompressed_value(budget)
            budget -= len(inner_bytes)
            messages = _iter_inner_entries(inner_bytes, magic)
        wrapper_time = entry.timestamp if entry.timestamp_type == LOG_APPEND_TIME else None
        for message in messages:
            key, value = message.key_value()
            timestamp = message.timestamp if wrapper_time is None else wrapper_time
            if count == 0:
                first_timestamp = max_timestamp = timestamp
            elif timestamp > max_timestamp:
                max_timestamp = timestamp
            payload += encode_record(count, wrap_int64(timestamp - first_timestamp), key, value)
            count += 1
    if not count:
        raise CorruptRecordError("empty message set")
    return batch_of_payload(
        payload,
        count,
        first_timestamp=first_timestamp,
        max_timestamp=max_timestamp,
        compression_type=codec,
    )


def _iter_inner_entries(inner_bytes: bytes, wrapper_magic: int) -> Iterator[LegacyEntry]:
    """`_inner_entries` without the list: one view at a time."""
    end = 0
    for entry in iter_entries(inner_bytes):
        _check_inner(entry, wrapper_magic)
        end = entry.pos + entry.size
        yield entry
    if end == 0:
        raise CorruptRecordError("compressed wrapper holds no messages")
    if end != len(inner_bytes):
        raise CorruptRecordError("compressed wrapper ends with a partial message")
