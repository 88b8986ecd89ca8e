"""LogSegment: one `.log` file with its `.index`, `.timeindex` and (once a transaction is
aborted in it) `.txnindex`, named by base offset.

Appends go to the end of the active segment with one write; offset and time index entries
are added every `index.interval.bytes`. Reads return file regions (position, length) of
whole batches for `sendfile`, never the bytes themselves.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol

import crc32c

from ..config import LogConfig
from ..records import LogEntry, read_entry
from ..records.batch import (
    ATTRIBUTES_POS,
    HEADER_SIZE,
    LOG_APPEND_TIME,
    CorruptRecordError,
    RecordBatch,
    check_crc_value,
)
from ..records.validation import record_facts
from ..records.varint import VarintError, wrap_int64
from .index import OffsetIndex, TimeIndex
from .txn_index import TXN_INDEX_SUFFIX, AbortedTxn, TransactionIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"

ENTRY_PREFIX = struct.Struct(">qiib")  # baseOffset/offset, size, (epoch|crc), magic
_V2_TAIL = struct.Struct(">hiqq")  # attributes, lastOffsetDelta, firstTimestamp, maxTimestamp
_V1_TIMESTAMP = struct.Struct(">q")
_CRC = struct.Struct(">I")
# What recovery reads of a v2 header: baseOffset, batchLength, partitionLeaderEpoch, crc,
# lastOffsetDelta, maxTimestamp, producerId (magic, attributes, firstTimestamp skipped).
_V2_RECOVERY = struct.Struct(">qiixI2xi8xqq")
_EPOCH = struct.Struct(">i")
SCAN_CHUNK = 1 << 20
# A large produced batch is checksummed and written in chunks this size (well inside L2).
CRC_WRITE_CHUNK = 256 << 10
# Lookups read only a few headers near an index entry: a small read each, not a whole
# SCAN_CHUNK, whose copy and page faults would cost far more than the lookup.
LOOKUP_CHUNK = 8 << 10


def filename_prefix(offset: int) -> str:
    return f"{offset:020d}"


def offset_from_filename(name: str) -> int:
    return int(name.split(".", 1)[0])


class EntryHeader(NamedTuple):
    """What the log needs to know of a batch without decoding its records."""

    position: int
    size: int
    base_offset: int  # for a legacy wrapper: its (last) offset; see LegacyEntry.base_offset
    last_offset: int
    max_timestamp: int
    magic: int


class RegionFile(Protocol):
    """The binary file object under a region (a segment's, or a dup of its descriptor)."""

    def fileno(self) -> int: ...
    def close(self) -> None: ...


@dataclass(slots=True)
class FileRegion:
    """A slice of a segment file, sent to a client with sendfile."""

    file: RegionFile
    position: int
    length: int

    def read(self) -> bytes:
        """Materialise the bytes (tests, the cleaner, replication in-process)."""
        return os.pread(self.file.fileno(), self.length, self.position)


def parse_entry_header(buf: bytes | memoryview, pos: int, position: int) -> EntryHeader:
    """Header of the entry at buf[pos:], which sits at `position` in its file."""
    offset, length, _, magic = ENTRY_PREFIX.unpack_from(buf, pos)
    size = length + 12
    if magic == 2:
        if length < HEADER_SIZE - 12:
            raise CorruptRecordError(f"batch length {length} at {position} is too small")
        _, last_delta, _, max_ts = _V2_TAIL.unpack_from(buf, pos + 21)
        return EntryHeader(position, size, offset, offset + last_delta, max_ts, 2)
    if magic in (0, 1):
        if length < 14:
            raise CorruptRecordError(f"message size {length} at {position} is too small")
        timestamp = _V1_TIMESTAMP.unpack_from(buf, pos + 18)[0] if magic == 1 else -1
        return EntryHeader(position, size, offset, offset, timestamp, magic)
    raise CorruptRecordError(f"unknown magic {magic} at position {position}")


class _ChunkReader:
    """Reads a file forward in large chunks so that scanning costs few system calls."""

    HEADER_NEEDS = 43  # bytes of an entry that parse_entry_header reads at most

    def __init__(self, fd: int, end: int, chunk_size: int = SCAN_CHUNK):
        self.fd = fd
        self.end = end
        self.chunk_size = chunk_size
        self.chunk = b""
        self.chunk_start = 0

    def view(self, position: int, size: int) -> memoryview:
        """`size` bytes at `position` (the caller checked they lie before `end`)."""
        offset = position - self.chunk_start
        if position < self.chunk_start or offset + size > len(self.chunk):
            self.chunk = os.pread(self.fd, max(self.chunk_size, size), position)
            self.chunk_start = position
            offset = 0
        return memoryview(self.chunk)[offset : offset + size]

    def header_at(self, position: int) -> EntryHeader | None:
        """The entry header at `position`, or None at the end, a torn tail or garbage."""
        available = self.end - position
        if available < ENTRY_PREFIX.size:
            return None
        buf = self.view(position, min(self.HEADER_NEEDS, available))
        try:
            header = parse_entry_header(buf, 0, position)
        except (struct.error, CorruptRecordError):
            return None
        if header.size > available:
            return None
        return header


class LogSegment:
    def __init__(
        self,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        *,
        suffix: str = "",
        created_ms: int | None = None,
        active: bool = True,
    ):
        self.dir = Path(directory)
        self.base_offset = base_offset
        self.config = config
        # Opened to take appends (its indexes mapped at their preallocated size when
        # opened); a roll or a rebuild seals it.
        self.active = active
        prefix = filename_prefix(base_offset)
        self.log_path = self.dir / f"{prefix}{LOG_SUFFIX}{suffix}"
        # Not O_APPEND: appends go to `size` with pwrite, which a preallocated file needs
        # (its end is past the data), and pwrite ignores the offset under O_APPEND.
        fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        self.file = os.fdopen(fd, "r+b", buffering=0)
        self.size = os.fstat(fd).st_size
        if active and config.preallocate and self.size == 0:
            # log.preallocate: reserve segment.bytes now; the zero tail is trimmed at roll
            # and close, and recovery after a crash stops at its first (zero) header.
            os.posix_fallocate(fd, 0, config.segment_bytes)
        self.offset_index = OffsetIndex(
            self.dir / f"{prefix}{INDEX_SUFFIX}{suffix}",
            base_offset,
            config.segment_index_bytes,
            preallocate=active,
        )
        self.time_index = TimeIndex(
            self.dir / f"{prefix}{TIME_INDEX_SUFFIX}{suffix}",
            base_offset,
            config.segment_index_bytes,
            preallocate=active,
        )
        self.txn_index = TransactionIndex(
            base_offset, self.dir / f"{prefix}{TXN_INDEX_SUFFIX}{suffix}"
        )
        self.created_ms = created_ms if created_ms is not None else int(time.time() * 1000)
        self.bytes_since_last_index_entry = 0
        # The largest timestamp so far and its offset: read from the time index and the
        # tail of the segment on first use (Kafka's lazy maxTimestampAndOffsetSoFar), so a
        # loaded segment's indexes stay closed until something needs them: a broker loading
        # 10,000 logs with data mapped both indexes of each and ran out of descriptors.
        self._max_timestamp: int | None = None if self.size else -1
        self._offset_of_max_timestamp = base_offset
        self._rolling_based_timestamp: int | None = None

    # Naming --------------------------------------------------------------------------
    @property
    def index_path(self) -> Path:
        return self.offset_index.path

    @property
    def time_index_path(self) -> Path:
        return self.time_index.path

    def change_file_suffixes(self, old: str, new: str) -> None:
        """Rename all its files (`.deleted`, `.cleaned`, `.swap` transitions)."""

        def renamed(path: Path) -> Path:
            name = path.name[: -len(old)] if old and path.name.endswith(old) else path.name
            return path.with_name(name + new)

        new_log = renamed(self.log_path)
        os.replace(self.log_path, new_log)
        self.log_path = new_log
        self.offset_index.rename_to(renamed(self.offset_index.path))
        self.time_index.rename_to(renamed(self.time_index.path))
        self.txn_index.rename_to(renamed(self.txn_index.path))

    def update_parent_dir(self, directory: Path) -> None:
        """Its directory was renamed (a future replica swapped in, AlterReplicaLogDirs):
        the open files stay as they are, only their paths change (Kafka's
        LogSegment.updateParentDir)."""
        self.dir = Path(directory)
        self.log_path = self.dir / self.log_path.name
        for index in (self.offset_index, self.time_index, self.txn_index):
            index.path = self.dir / index.path.name

    # Appends -------------------------------------------------------------------------
    def append(self, data: bytes | bytearray | memoryview, headers: list[EntryHeader]) -> int:
        """Write `data` (whole entries whose headers are given, positions relative to data)
        at the end of the file with one write, then index it. Returns the file position."""
        position = self.size
        written = os.pwrite(self.file.fileno(), data, position)
        if written != len(data):
            raise OSError(f"short write to {self.log_path}: {written} of {len(data)}")
        self.size = position + written
        for header in headers:
            self._index_appended(
                position + header.position, header.size, header.last_offset, header.max_timestamp
            )
        return position

    def append_batch(
        self, prefix: bytes, rest: memoryview, size: int, last_offset: int, max_timestamp: int
    ) -> int:
        """The produce path: write one v2 batch given as its rewritten 16-byte prefix and
        the producer's bytes after it (one vectored write, no copy), then index it."""
        position = self.size
        written = os.pwritev(self.file.fileno(), (prefix, rest), position)
        if written != size:
            raise OSError(f"short write to {self.log_path}: {written} of {size}")
        self.size = position + size
        # `_index_appended`, inlined: this runs for every produced batch.
        largest = self._max_timestamp
        if largest is None:  # not read since the segment was loaded
            largest = self.max_timestamp_so_far
        if max_timestamp > largest:
            largest = self._max_timestamp = max_timestamp
            self._offset_of_max_timestamp = last_offset
        since_index_entry = self.bytes_since_last_index_entry
        if since_index_entry > self.config.index_interval_bytes:
            # In order and with room: the log assigned the offsets, should_roll checked.
            base = self.base_offset
            self.offset_index.append_in_order(last_offset - base, position)
            self.time_index.append_if_later(largest, self._offset_of_max_timestamp - base)
            self.bytes_since_last_index_entry = size
        else:
            self.bytes_since_last_index_entry = since_index_entry + size
        return position

    def append_batch_checking_crc(
        self,
        prefix: bytes,
        batch: memoryview,
        stored_crc: int,
        last_offset: int,
        max_timestamp: int,
    ) -> int:
        """append_batch for a large batch whose CRC-32C is not checked yet: each chunk is
        checksummed and then written while it is still in the CPU cache, so the batch is
        read from memory once, not twice. Nothing becomes visible unless the whole CRC
        matches: on a mismatch the bytes written are undone and CorruptRecordError raised
        (size, indexes and the file's contents as before)."""
        position = self.size
        size = len(batch)
        fd = self.file.fileno()
        end = min(CRC_WRITE_CHUNK, size)
        computed = crc32c.crc32c(batch[ATTRIBUTES_POS:end])
        written = os.pwritev(fd, (prefix, batch[len(prefix) : end]), position)
        while end < size:
            start, end = end, min(end + CRC_WRITE_CHUNK, size)
            chunk = batch[start:end]
            computed = crc32c.crc32c(chunk, computed)
            written += os.pwrite(fd, chunk, position + start)
        if computed != stored_crc:
            self._undo_unindexed_write(position, written)
            check_crc_value(stored_crc, computed)
        if written != size:
            raise OSError(f"short write to {self.log_path}: {written} of {size}")
        self.size = position + size
        self._index_appended(position, size, last_offset, max_timestamp)
        return position

    def _undo_unindexed_write(self, position: int, written: int) -> None:
        """Erase bytes written past `size`: zeros inside a preallocated extent (recovery
        reads them as the end of the data), else cut the file back."""
        fd = self.file.fileno()
        if os.fstat(fd).st_size > position + written:
            os.pwrite(fd, bytes(written), position)
        else:
            os.ftruncate(fd, position)

    def _index_appended(self, position: int, size: int, last_offset: int, max_timestamp: int):
        """Track the max timestamp and add the offset and time index entries (together)
        once index.interval.bytes have been appended since the last ones."""
        if max_timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far = max_timestamp
            self.offset_of_max_timestamp_so_far = last_offset
        if self.bytes_since_last_index_entry > self.config.index_interval_bytes:
            self.offset_index.append(last_offset, position)
            self.time_index.maybe_append(
                self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far
            )
            self.bytes_since_last_index_entry = size
        else:
            self.bytes_since_last_index_entry += size

    def can_convert_to_relative_offset(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= 0x7FFFFFFF

    def should_roll(
        self, messages_size: int, max_timestamp: int, max_offset: int, now_ms: int
    ) -> bool:
        config = self.config
        size = self.size
        if size > config.segment_bytes - messages_size:
            return True
        offsets, times = self.offset_index, self.time_index
        if offsets.entries >= offsets.max_entries or times.entries >= times.max_entries:
            return True  # a full index (`is_full`, without the property calls)
        if not 0 <= max_offset - self.base_offset <= 0x7FFFFFFF:
            return True  # the relative offset would overflow the indexes' 32 bits
        if size == 0:
            return False
        rolling = self._rolling_based_timestamp
        if rolling is not None and rolling >= 0:  # time_waited_for_roll, inlined
            waited = max_timestamp - rolling
        else:
            waited = self.time_waited_for_roll(now_ms, max_timestamp)
        return waited > config.segment_ms - config.segment_jitter_ms

    def time_waited_for_roll(self, now_ms: int, message_timestamp: int) -> int:
        """Kafka rolls on the first batch's timestamp when it has one, else on creation."""
        if self._rolling_based_timestamp is None and self.size > 0:
            first = next(self.scan_headers(0, self.size, LOOKUP_CHUNK), None)
            self._rolling_based_timestamp = first.max_timestamp if first else -1
        rolling = self._rolling_based_timestamp
        if rolling is not None and rolling >= 0:
            return message_timestamp - rolling
        return now_ms - self.created_ms

    # Reads ---------------------------------------------------------------------------
    def scan_headers(
        self, start: int = 0, end: int | None = None, chunk_size: int = SCAN_CHUNK
    ) -> Iterator[EntryHeader]:
        """Entry headers from `start` to `end`, read in chunks; stops at a torn tail."""
        reader = _ChunkReader(self.file.fileno(), self.size if end is None else end, chunk_size)
        position = start
        while True:
            header = reader.header_at(position)
            if header is None:
                return
            yield header
            position += header.size

    def translate_offset(self, offset: int, starting_position: int = 0) -> EntryHeader | None:
        """The first entry whose last offset is >= offset (the batch holding it)."""
        mapping = self.offset_index.lookup(offset)
        start = max(mapping.position, starting_position)
        for header in self.scan_headers(start, chunk_size=LOOKUP_CHUNK):
            if header.last_offset >= offset:
                return header
        return None

    def read(
        self,
        start_offset: int,
        max_size: int,
        max_position: int | None = None,
        min_one_message: bool = False,
    ) -> tuple[EntryHeader, FileRegion] | None:
        """The region from the batch holding start_offset, at most max_size bytes (at
        least the first batch when min_one_message), ending at max_position."""
        first = self.translate_offset(start_offset)
        if first is None:
            return None
        max_position = self.size if max_position is None else max_position
        if first.position >= max_position:
            return first, FileRegion(self.file, first.position, 0)
        limit = max(max_size, first.size) if min_one_message else max_size
        length = min(max_position - first.position, limit)
        return first, FileRegion(self.file, first.position, max(length, 0))

    def fetch_upper_bound_offset(self, end_position: int) -> int | None:
        """An offset above every batch that starts before `end_position` (Kafka's
        fetchUpperBoundOffset): that of the first offset-index entry at or past it (an
        entry names its batch's last offset), else None (also when the position is the
        segment's end: the next segment's base bounds it)."""
        if end_position >= self.size:
            return None
        return self.offset_index.offset_at_or_after_position(end_position)

    def read_entry_bytes(self, header: EntryHeader) -> bytes:
        return os.pread(self.file.fileno(), header.size, header.position)

    def read_next_offset(self) -> int:
        """The offset after the last entry (the segment's contribution to the LEO)."""
        last = self.offset_index.lookup_once(0x7FFFFFFFFFFFFFFF)
        next_offset = self.base_offset
        for header in self.scan_headers(last.position):
            next_offset = header.last_offset + 1
        return next_offset

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int = 0):
        """(timestamp, offset) of the first record with timestamp >= target, else None."""
        entry = self.time_index.lookup(timestamp)
        start = self.offset_index.lookup(max(entry.offset, starting_offset)).position
        for header in self.scan_headers(start, chunk_size=LOOKUP_CHUNK):
            if header.max_timestamp < timestamp or header.last_offset < starting_offset:
                continue
            found = first_record_at_or_after(
                read_entry(self.read_entry_bytes(header)), timestamp, starting_offset
            )
            if found is not None:
                return found
        return None

    # Recovery and truncation -------------------------------------------------------
    def recover(
        self,
        on_epoch: Callable[[int, int], None] | None = None,
        on_producer_batch: Callable[[memoryview, int, int], None] | None = None,
    ) -> int:
        """Validate every entry, rebuild both indexes, truncate at the first invalid
        byte (or trim a preallocated zero tail). Returns the number of invalid bytes cut.

        One pass: `on_epoch(epoch, base_offset)` hears each v2 batch whose partition leader
        epoch differs from the previous one's, and `on_producer_batch(bytes, base, last)`
        each v2 batch with a producer id (its producer state is rebuilt from these, not
        from a second read of the log)."""
        self.offset_index.reset()
        self.time_index.reset()
        fd = self.file.fileno()
        file_size = os.fstat(fd).st_size
        base_offset = self.base_offset
        interval = self.config.index_interval_bytes
        # Index entries are packed here as the files hold them (one pack per entry) and
        # written once at the end (a rebuild).
        offset_entries = bytearray()
        pack_offset_entry = self.offset_index.entry.pack
        time_entries = bytearray()
        pack_time_entry = self.time_index.entry.pack
        last_indexed_timestamp: int | None = None
        since_index_entry = 0
        max_timestamp = -1
        offset_of_max_timestamp = base_offset
        last_epoch: int | None = None
        valid = 0
        previous_last = base_offset - 1
        unpack_header = _V2_RECOVERY.unpack_from
        checksum = crc32c.crc32c
        header_size = _V2_RECOVERY.size
        # The file is read in large chunks into one reused buffer (a fresh 1 MiB object per
        # read would page-fault all its pages again); v2 batches are checked straight from
        # their header bytes in the buffer (no objects, CRCs over memoryview slices, no
        # copies), legacy entries take the general path. This loop is the recovery scan's
        # whole cost. (Mapping the file costs more here: its page faults outweigh the copy.)
        chunk = bytearray(SCAN_CHUNK)
        view = memoryview(chunk)
        chunk_start = chunk_length = 0
        while valid < file_size:
            at = valid - chunk_start
            if at + header_size > chunk_length:
                chunk_start, at, chunk_length = valid, 0, os.preadv(fd, (chunk,), valid)
                if chunk_length < ENTRY_PREFIX.size:
                    break
            if at + header_size <= chunk_length and chunk[at + 16] == 2:
                base, length, epoch, crc, last_delta, batch_max_ts, producer_id = unpack_header(
                    chunk, at
                )
                size = length + 12
                if length < HEADER_SIZE - 12 or valid + size > file_size:
                    break
                last = base + last_delta
                if base <= previous_last or last < base:
                    break  # offsets only grow within a log; anything else is garbage
                if at + size > chunk_length:
                    if size > len(chunk):  # a batch larger than the buffer
                        chunk = bytearray(size)
                        view = memoryview(chunk)
                    chunk_start, at, chunk_length = valid, 0, os.preadv(fd, (chunk,), valid)
                if crc != checksum(view[at + ATTRIBUTES_POS : at + size]):
                    break
                if epoch != last_epoch and epoch >= 0 and on_epoch is not None:
                    on_epoch(epoch, base)
                    last_epoch = epoch
                if producer_id != -1 and on_producer_batch is not None:
                    on_producer_batch(view[at : at + size], base, last)
            else:
                header = _ChunkReader(fd, file_size).header_at(valid)
                if header is None or header.magic == 2:
                    break
                entry = memoryview(os.pread(fd, header.size, valid))
                try:
                    read_entry(entry).validate()
                except CorruptRecordError:
                    break
                last = header.last_offset
                size = header.size
                batch_max_ts = header.max_timestamp
            # Indexing as `_index_appended` does it, into the buffers.
            if batch_max_ts > max_timestamp:
                max_timestamp = batch_max_ts
                offset_of_max_timestamp = last
            if since_index_entry > interval:
                offset_entries += pack_offset_entry(last - base_offset, valid)
                if last_indexed_timestamp is None or max_timestamp > last_indexed_timestamp:
                    time_entries += pack_time_entry(
                        max_timestamp, offset_of_max_timestamp - base_offset
                    )
                    last_indexed_timestamp = max_timestamp
                since_index_entry = 0
            since_index_entry += size
            previous_last = last
            valid += size
        self.offset_index.append_packed(offset_entries)
        self.time_index.append_packed(time_entries)
        self.bytes_since_last_index_entry = since_index_entry
        self.max_timestamp_so_far = max_timestamp
        self.offset_of_max_timestamp_so_far = offset_of_max_timestamp
        truncated = file_size - valid
        if truncated:
            # A preallocated segment's data ends at its first zero header (as Kafka reads a
            # zero-length batch): the zeros after it are room, not invalid bytes.
            end_of_data = self.config.preallocate and os.pread(fd, 12, valid) == bytes(12)
            self.file.truncate(valid)
            if end_of_data:
                truncated = 0
        self.size = valid
        self.time_index.maybe_append(
            self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far, skip_full_check=True
        )
        self._rolling_based_timestamp = None
        return truncated

    def update_txn_index(self, aborted: AbortedTxn) -> None:
        """An abort marker appended to this segment completed `aborted` (Kafka's
        updateTxnIndex: committed transactions need no entry)."""
        self.txn_index.append(aborted)

    def append_index_only(self, header: EntryHeader) -> None:
        """Index an entry that is already in the file (recovery and rebuilds)."""
        self._index_appended(header.position, header.size, header.last_offset, header.max_timestamp)

    def truncate_to(self, offset: int) -> int:
        """Remove every entry holding offsets >= offset; returns bytes removed."""
        header = self.translate_offset(offset)
        if header is None:
            return 0
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        removed = self.size - header.position
        self.file.truncate(header.position)
        self.size = header.position
        self.bytes_since_last_index_entry = 0
        self._rolling_based_timestamp = None
        self._max_timestamp = None if self.size else -1  # read again on first use
        self._offset_of_max_timestamp = self.base_offset
        if self.size == 0:
            self.created_ms = int(time.time() * 1000)
        return removed

    @property
    def max_timestamp_so_far(self) -> int:
        largest = self._max_timestamp
        if largest is None:
            largest = self._load_largest_timestamp()
        return largest

    @max_timestamp_so_far.setter
    def max_timestamp_so_far(self, timestamp: int) -> None:
        self._max_timestamp = timestamp

    @property
    def offset_of_max_timestamp_so_far(self) -> int:
        if self._max_timestamp is None:
            self._load_largest_timestamp()
        return self._offset_of_max_timestamp

    @offset_of_max_timestamp_so_far.setter
    def offset_of_max_timestamp_so_far(self, offset: int) -> None:
        self._offset_of_max_timestamp = offset

    def _load_largest_timestamp(self) -> int:
        last = self.time_index.last_entry
        largest, offset = last.timestamp, last.offset
        start = self.offset_index.lookup_once(last.offset).position
        for header in self.scan_headers(start):
            if header.max_timestamp > largest:
                largest, offset = header.max_timestamp, header.last_offset
        self._max_timestamp, self._offset_of_max_timestamp = largest, offset
        return largest

    # Lifecycle -----------------------------------------------------------------------
    @property
    def last_modified_ms(self) -> int:
        return int(os.stat(self.log_path).st_mtime * 1000)

    @property
    def largest_timestamp(self) -> int:
        """Retention's clock: the max record timestamp, else the file's mtime."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        return self.last_modified_ms

    def _keeps_final_time_entry(self) -> bool:
        """Whether a close appends the largest timestamp to the time index: not to one with
        no file yet of a segment too short for an entry (an idle log's: its largest
        timestamp is read from its few batches on first use), so that closing 10,000 idle
        logs makes no files; the loader takes such a segment's missing index as empty."""
        return self.time_index.file_made or self.size > self.config.index_interval_bytes

    def on_become_inactive(self) -> None:
        """At roll: a final time index entry, then trim both indexes to their entries (a
        sealed segment has both files, as Kafka's, even one too short for an entry)."""
        self.time_index.maybe_append(
            self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far, skip_full_check=True
        )
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self.trim()
        self.active = False

    def trim(self) -> None:
        """Cut a preallocated file to its data (Kafka's FileRecords.trim)."""
        fd = self.file.fileno()
        if os.fstat(fd).st_size > self.size:
            os.ftruncate(fd, self.size)

    def flush(self) -> None:
        os.fsync(self.file.fileno())
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        # (_max_timestamp None: never read since loading, the index has it)
        if self._max_timestamp is not None and self._keeps_final_time_entry():
            self.time_index.maybe_append(
                self._max_timestamp, self._offset_of_max_timestamp, skip_full_check=True
            )
        if not self.file.closed:
            self.trim()
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        self.file.close()

    def delete(self) -> None:
        self.offset_index.delete()
        self.time_index.delete()
        self.txn_index.delete()
        self.file.close()
        self.log_path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size})"


def first_record_at_or_after(
    entry: LogEntry, timestamp: int, starting_offset: int
) -> tuple[int, int] | None:
    """(timestamp, offset) of the entry's first record with timestamp >= `timestamp` and
    offset >= `starting_offset`, else None.

    A v2 batch whose offsets are contiguous (last offset delta = count - 1: every batch a
    producer appended, validated so, and every uncompacted one) is searched through the
    compiled walk of its records' timestamp deltas (about 10 ns a record) with the offset of
    record i being base + i; a batch of 5,000 records decoded record by record in Python took
    ~100 ms, which a by-time lookup (ListOffsets, the console's "from a time") paid for each
    answer. Other entries (compacted batches, the old formats) are decoded record by record,
    stopping at the first match."""
    if isinstance(entry, RecordBatch) and entry.record_count > 0:
        count = entry.record_count
        base = entry.base_offset
        if entry.last_offset_delta == count - 1:
            first = max(0, starting_offset - base)
            if entry.timestamp_type == LOG_APPEND_TIME:  # every record has the batch's time
                stamped = entry.max_timestamp
                return (stamped, base + first) if stamped >= timestamp and first < count else None
            try:
                facts = record_facts(entry.records_payload(), 0, count)
            except (VarintError, CorruptRecordError):
                facts = None  # decoded below, which reports the corruption as before
            if facts is not None:
                first_timestamp = entry.first_timestamp
                for index in range(first, count):
                    stamped = wrap_int64(first_timestamp + facts[index][0])
                    if stamped >= timestamp:
                        return stamped, base + index
                return None
    for record in entry:
        if record.timestamp >= timestamp and record.offset >= starting_offset:
            return record.timestamp, record.offset
    return None
