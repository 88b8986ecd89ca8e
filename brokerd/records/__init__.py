"""Kafka's record formats: batch v2, legacy v0/v1 message sets, codecs, control records.

`read_entry` reads whatever sits at a position of a log: the magic byte is at offset 16
in all three formats, so it is read first.
"""

from __future__ import annotations

from collections.abc import Iterator

from .batch import HEADER_SIZE, CorruptRecordError, RecordBatch
from .legacy import LegacyEntry

MAGIC_POS = 16
MIN_ENTRY_HEADER = 17  # enough to read the magic byte

LogEntry = RecordBatch | LegacyEntry


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
    """Consecutive entries of any magic; stops at a trailing partial entry."""
    end = len(buf)
    while end - pos >= MIN_ENTRY_HEADER:
        try:
            entry = read_entry(buf, pos)
        except CorruptRecordError:
            if end - pos < HEADER_SIZE:
                return  # a partial header at the end of a fetch
            raise
        if entry.size < MIN_ENTRY_HEADER:
            raise CorruptRecordError(f"entry size {entry.size} at {pos} is too small")
        if pos + entry.size > end:
            return
        yield entry
        pos += entry.size
