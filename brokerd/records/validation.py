"""The records inside a produced v2 batch, walked without building them.

A record is
    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value | headerCount varint |
    headerCount x (headerKeyLength varint | headerKey | headerValueLength varint | headerValue)
with zigzag varints. Kafka's broker reads every produced record (DefaultRecord.readFrom
under LogValidator) so that a batch whose header lies about its records never reaches the
log: the declared count must be the number of records, each length must match the fields
it holds, and the records must fill the batch exactly. The offset deltas must also be
0..count-1 in order: consumers compute offsets from them, so any other value makes
offsets overlap or skip.

`walk_records` runs on the produce path of every batch, so it reads only the length and
delta fields (keys, values and headers are skipped by their lengths). Two implementations
give the same answer for every input: `walk_records_python` here, the reference, with the
common short varints decoded inline (about half a microsecond per record in CPython, most
of the produce path's cost for small records), and its compiled twin in `_walk.pyx`
(Cython, about 10 ns per record), built by platform/setup; `record_facts`, what the
record rules of compacted and timestamp-checked topics read, likewise. The compiled ones
are used when they are built from the current `_walk.pyx`, else the references; which is
logged once. The walks raise only RecordStructureError (InvalidRecordError, as Kafka's
InvalidRecordException: INVALID_RECORD), built by the helpers below so that their messages
are the same; `record_index` names the record when one is at fault.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from .batch import InvalidRecordError
from .varint import decode_varint

# attributes, timestampDelta, offsetDelta, keyLength, valueLength, headerCount: one byte each
MIN_RECORD_BODY = 6
_VARINT_BYTES = 5  # an int32 varint
_VARLONG_BYTES = 10


class _BadVarint(ValueError):
    pass


class RecordStructureError(InvalidRecordError):
    """A record (or the record count) that does not match the bytes of its batch."""

    def __init__(self, message: str, record_index: int | None = None):
        super().__init__(message)
        self.record_index = record_index


def _slow_varint(buf, pos: int, limit: int) -> tuple[int, int]:
    """The raw (still zigzagged) varint of up to `limit` bytes at pos and the position
    after it, refused where it overflows its int32 (5 bytes) or int64 (10 bytes), as the
    broker's own decoder would refuse it when reading the record back."""
    raw = 0
    shift = 0
    for i in range(limit):
        b = buf[pos + i]
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            if raw >> (32 if limit == _VARINT_BYTES else 64):
                raise _BadVarint(_overflow_message(i + 1))
            return raw, pos + i + 1
        shift += 7
    raise _BadVarint(_too_long_message(limit))


def walk_records_python(buf, pos: int, end: int, count: int) -> None:
    """Check that buf[pos:end] holds exactly `count` well-formed records whose offset
    deltas are 0..count-1.

    Loops are bounded by the bytes (each record takes at least 7, each header 2). Varints
    of up to three bytes (lengths below 1 MiB) are decoded inline, and only the fields
    that locate the next one are decoded at all: a call per field would cost more than
    the rest of the walk."""
    if count < 0:
        raise _count_error(count)
    if end > len(buf):
        raise _buffer_error()
    expected = 0  # zigzag of the offset delta record i must have: 2i
    start = pos
    try:
        for expected in range(0, count << 1, 2):
            start = pos
            # length (varint), which must be positive (even once zigzagged)
            b = buf[pos]
            if b < 0x80:
                raw = b
                pos += 1
            else:
                b1 = buf[pos + 1]
                if b1 < 0x80:
                    raw = (b & 0x7F) | (b1 << 7)
                    pos += 2
                else:
                    b2 = buf[pos + 2]
                    if b2 < 0x80:
                        raw = (b & 0x7F) | ((b1 & 0x7F) << 7) | (b2 << 14)
                        pos += 3
                    else:
                        raw, pos = _slow_varint(buf, pos, _VARINT_BYTES)
            record_end = pos + (raw >> 1)
            if raw & 1 or raw < MIN_RECORD_BODY << 1 or record_end > end:
                raise _size_error(expected >> 1, count, start, end, _unzigzag(raw))
            # attributes (unused in v2), then timestampDelta (varlong): skipped
            if buf[pos + 1] < 0x80:
                pos += 2
            elif buf[pos + 2] < 0x80:
                pos += 3
            else:
                pos = _slow_varint(buf, pos + 1, _VARLONG_BYTES)[1]
            # offsetDelta (varint)
            b = buf[pos]
            if b == expected and b < 0x80:
                pos += 1
            elif b >= 0x80 and buf[pos + 1] < 0x80 and (b & 0x7F) | (buf[pos + 1] << 7) == expected:
                pos += 2
            else:
                raw, pos = _slow_varint(buf, pos, _VARINT_BYTES)
                if raw != expected:
                    raise _offset_delta_error(expected >> 1, _unzigzag(raw))
            # key: null (zigzag 1), or a length and its bytes
            b = buf[pos]
            if b < 0x80:
                if b & 1:
                    if b != 1:
                        raise _length_error(expected >> 1, "key", b)
                    pos += 1
                else:
                    pos += 1 + (b >> 1)
            else:
                raw, pos = _slow_varint(buf, pos, _VARINT_BYTES)
                if raw & 1:
                    raise _length_error(expected >> 1, "key", raw)
                pos += raw >> 1
            # value, the same way
            b = buf[pos]
            if b < 0x80:
                if b & 1:
                    if b != 1:
                        raise _length_error(expected >> 1, "value", b)
                    pos += 1
                else:
                    pos += 1 + (b >> 1)
            else:
                b1 = buf[pos + 1]
                if b1 < 0x80:
                    raw = (b & 0x7F) | (b1 << 7)
                    pos += 2
                else:
                    b2 = buf[pos + 2]
                    if b2 < 0x80:
                        raw = (b & 0x7F) | ((b1 & 0x7F) << 7) | (b2 << 14)
                        pos += 3
                    else:
                        raw, pos = _slow_varint(buf, pos, _VARINT_BYTES)
                if raw & 1:
                    raise _length_error(expected >> 1, "value", raw)
                pos += raw >> 1
            # headers: usually none
            if buf[pos] == 0:
                pos += 1
            else:
                pos = _walk_headers(buf, pos, record_end, expected >> 1)
            if pos != record_end:
                raise _fields_end_error(expected >> 1, pos - record_end)
    except IndexError:
        raise _past_end_error(expected >> 1, count, start, end) from None
    except _BadVarint as exc:
        raise _malformed_error(expected >> 1, str(exc)) from None
    if pos != end:
        raise _remaining_error(end - pos, count)


# The errors of both walks, built here so that their messages are the same.


def _count_error(count: int) -> RecordStructureError:
    return RecordStructureError(f"invalid record count {count}")


def _buffer_error() -> RecordStructureError:
    return RecordStructureError("records section runs past the buffer")


def _size_error(i: int, count: int, start: int, end: int, length: int) -> RecordStructureError:
    if start >= end:
        return _declared_count_error(i, count)
    return RecordStructureError(
        f"invalid record size {length} for record {i}: {end - start} bytes left in the batch", i
    )


def _declared_count_error(found: int, count: int) -> RecordStructureError:
    return RecordStructureError(
        f"incorrect declared batch size: {count} records declared, the batch holds {found}"
    )


def _length_error(i: int, field: str, raw: int) -> RecordStructureError:
    return RecordStructureError(f"record {i} has {field} length {_unzigzag(raw)}", i)


def _offset_delta_error(i: int, delta: int) -> RecordStructureError:
    return RecordStructureError(f"record {i} has offset delta {delta}, expected {i}", i)


def _fields_end_error(i: int, overshoot: int) -> RecordStructureError:
    return RecordStructureError(
        f"invalid record size: record {i}'s fields end {overshoot:+d} bytes "
        "from its declared length",
        i,
    )


def _past_end_error(i: int, count: int, start: int, end: int) -> RecordStructureError:
    if start >= end:
        return _declared_count_error(i, count)
    return RecordStructureError(f"record {i} runs past the end of the batch", i)


def _malformed_error(i: int, detail: str) -> RecordStructureError:
    return RecordStructureError(f"record {i} is malformed: {detail}", i)


def _remaining_error(remaining: int, count: int) -> RecordStructureError:
    return RecordStructureError(
        f"incorrect declared batch size: {remaining} bytes remain after {count} records"
    )


def _overflow_message(size: int) -> str:
    return f"a varint of {size} bytes overflows its type"


def _too_long_message(limit: int) -> str:
    return f"a varint is longer than {limit} bytes"


def _header_count_error(index: int, count: int) -> RecordStructureError:
    return RecordStructureError(f"record {index} has an invalid header count {count}", index)


def _header_key_error(index: int, raw: int) -> RecordStructureError:
    return RecordStructureError(
        f"record {index} has a header key of length {_unzigzag(raw)}", index
    )


def _header_value_error(index: int, raw: int) -> RecordStructureError:
    return RecordStructureError(
        f"record {index} has a header value of length {_unzigzag(raw)}", index
    )


def record_facts_python(buf, pos: int, count: int) -> list[tuple[int, bool]]:
    """(timestampDelta, has a key) of each record, for records `walk_records` accepted
    (the reference; `record_facts` is its compiled twin when built)."""
    facts = []
    for _ in range(count):
        length, body = decode_varint(buf, pos)
        timestamp_delta, at = decode_varint(buf, body + 1)
        _, at = decode_varint(buf, at)  # offsetDelta
        key_length, _ = decode_varint(buf, at)
        facts.append((timestamp_delta, key_length >= 0))
        pos = body + length
    return facts


def _unzigzag(raw: int) -> int:
    return (raw >> 1) ^ -(raw & 1)


def _walk_headers(buf, pos: int, record_end: int, index: int) -> int:
    raw, pos = _slow_varint(buf, pos, _VARINT_BYTES)
    count = _unzigzag(raw)
    if count < 0 or count > (record_end - pos) // 2:
        raise _header_count_error(index, count)
    for _ in range(count):
        raw, pos = _slow_varint(buf, pos, _VARINT_BYTES)
        if raw & 1:
            raise _header_key_error(index, raw)
        pos += raw >> 1
        raw, pos = _slow_varint(buf, pos, _VARINT_BYTES)
        if raw & 1:
            if raw != 1:
                raise _header_value_error(index, raw)
        else:
            pos += raw >> 1
        if pos > record_end:
            break  # the caller reports the size mismatch
    return pos


# Which walk runs: the compiled one when it was built from this very _walk.pyx (a build of
# another version could check by other rules), else the reference. Said once, at import.
_log = logging.getLogger(__name__)
_WALK_SOURCE = Path(__file__).with_name("_walk.pyx")


def _compiled_walk():
    """The compiled module and None, or None and why it is not used."""
    try:
        from . import _walk
    except ImportError as exc:
        return None, f"not built ({exc})"
    try:
        source = _WALK_SOURCE.read_bytes()
    except OSError:
        return _walk, None  # installed without its source: nothing to compare
    if _walk.SOURCE_SHA256 != hashlib.sha256(source).hexdigest():
        return None, "built from another version of _walk.pyx"
    return _walk, None


_compiled, _not_compiled_because = _compiled_walk()
WALK_IMPLEMENTATION = "python" if _compiled is None else "compiled"
walk_records = walk_records_python if _compiled is None else _compiled.walk_records
record_facts = record_facts_python if _compiled is None else _compiled.record_facts
if _compiled is None:
    _log.warning(
        "record walk: the compiled walk is %s; produced batches are walked in pure Python "
        "(about 50 times slower per record; platform/setup builds it)",
        _not_compiled_because,
    )
else:
    _log.info("record walk: produced batches are walked by the compiled walk (Cython)")
