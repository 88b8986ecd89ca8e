"""Kafka's record formats: batch v2, legacy v0/v1 message sets, codecs, control records.

`read_entry` reads whatever sits at a position of a log: the magic byte is at offset 16
in all three formats, so it is read first.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from .batch import HEADER_SIZE, LOG_OVERHEAD, CorruptRecordError, RecordBatch
from .legacy import RECORD_OVERHEAD_V0, RECORD_OVERHEAD_V1, LegacyEntry

MAGIC_POS = 16
MIN_ENTRY_HEADER = 17  # enough to read the magic byte
SIZE_POS = 8

LogEntry = RecordBatch | LegacyEntry

_I32 = struct.Struct(">i")
# Smallest size field (bytes after offset + size) of a well-formed entry of each magic.
_MIN_SIZE_FIELD = {
    0: RECORD_OVERHEAD_V0,
    1: RECORD_OVERHEAD_V1,
    2: HEADER_SIZE - LOG_OVERHEAD,
}


def read_entry(buf: bytes | bytearray | memoryview, pos: int = 0) -> LogEntry:
    if len(buf) - pos < MIN_ENTRY_HEADER:
        raise CorruptRecordError("entry header is truncated")
    magic = buf[pos + MAGIC_POS]
    if magic == 2:
        if len(buf) - pos < HEADER_SIZE:
            raise CorruptRecordError("batch header is truncated")
        return RecordBatch(buf, pos)
    if magic in (0, 1):
        return LegacyEntry(buf, pos)
    raise CorruptRecordError(f"unknown magic {magic}")


def iter_entries(buf: bytes | bytearray | memoryview, pos: int = 0) -> Iterator[LogEntry]:
    """Consecutive entries of any magic; stops at a trailing partial entry.

    As Kafka's log input stream does, the size field is judged before the magic byte: an entry
    that is entirely present must be well formed, while a tail shorter than its size field
    claims is a partial entry (a fetch cut it, or a crash did), not an error.
    """
    end = len(buf)
    while end - pos >= LOG_OVERHEAD:
        (size_field,) = _I32.unpack_from(buf, pos + SIZE_POS)
        if size_field < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(f"entry size {size_field} at {pos} is too small")
        if pos + LOG_OVERHEAD + size_field > end:
            return
        entry = read_entry(buf, pos)
        if size_field < _MIN_SIZE_FIELD[entry.magic]:
            raise CorruptRecordError(
                f"size {size_field} at {pos} is below the magic {entry.magic} minimum"
            )
        yield entry
        pos += entry.size
