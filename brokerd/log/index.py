"""Sparse, memory-mapped segment indexes in Kafka's on-disk format.

`.index`     8-byte entries: relative offset int32, file position int32
`.timeindex` 12-byte entries: timestamp int64, relative offset int32

Offsets are stored relative to the segment's base offset. A new index file is preallocated
to `segment.index.bytes` (rounded down to a whole entry) and trimmed to its entries when
the segment rolls or the log closes. Lookups binary-search the mapping in place; an index is
never loaded into a Python list.

An index is neither opened nor mapped until something reads it or writes it (as Kafka's
LazyIndex), and a new one has no file until its segment's first entries are due: a loaded
index's entries are counted from its size, its last entry (a log's end) and the load's
sanity check read with a pread. An idle partition holds one descriptor, its .log, and a
mapped index one (its mapping's own: the index keeps no file open and writes through a
descriptor held for the write), so 10,000 partitions with data fit a broker's open-files
limit, and a new log maps no 10 MiB preallocation. A missing index file is an empty index.

A new log is made with one file, its .log: creating a file costs 0.5-0.8 ms of kernel time
on this project's VMs (opening one ~3 us), so the two index files were two thirds of a
10,000-partition topic's creation. A new index's first entry asks for its file, made on a
background thread; until it exists the entries stay pending in memory (reads find them
there), so no append or read on the event loop waits for a file to be made.
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

log = logging.getLogger(__name__)

# Index files asked for by the produce path are made here, one at a time, off the event loop.
_file_maker: ThreadPoolExecutor | None = None
_file_maker_lock = threading.Lock()


def _make_in_background(work: Callable[[], None]) -> None:
    global _file_maker
    with _file_maker_lock:
        if _file_maker is None:
            _file_maker = ThreadPoolExecutor(1, thread_name_prefix="index-files")
        maker = _file_maker
    maker.submit(work)


# Appends kept back before one write of them all (see `_Index._write_pending`).
PENDING_ENTRIES = 32


class CorruptIndexError(ValueError):
    """An index file that cannot be trusted; the log rebuilds it from the segment."""


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class _Index:
    entry = struct.Struct(">ii")

    def __init__(
        self,
        path: Path | str,
        base_offset: int,
        max_index_size: int = 10485760,
        writable: bool = True,
        preallocate: bool = True,
    ):
        self.path = Path(path)
        self.base_offset = base_offset
        self.writable = writable
        self.entry_size = self.entry.size
        self.max_index_size = max_index_size
        self._mmap: mmap.mmap | None = None
        self._last_raw: tuple[int, tuple[int, int]] | None = None
        # Appended entries not yet written (from slot `_pending_from`): written together
        # every PENDING_ENTRIES appends, and before anything reads or resizes the index.
        self._pending = bytearray()
        self._pending_from = 0
        self._pending_limit = PENDING_ENTRIES * self.entry_size
        self._pack = self.entry.pack  # bound once: appends are on the produce path
        # Readers on other threads write the pending entries too (before reading).
        self._pending_lock = threading.Lock()
        # A lazy index is opened by whichever comes first: a reader, a flush of pending
        # entries, a roll's trim, a rebuild. Only one of them may open and map the file.
        self._open_lock = threading.Lock()
        self._opened = False
        self._closed = False
        # Whether the file exists; a new index's is made by `_open` or `make_file`.
        self.file_made = True
        self._file_requested = False
        try:
            on_disk = os.stat(self.path).st_size
        except FileNotFoundError:
            if not writable:
                raise
            self.file_made = False
            on_disk = 0
        self._size_on_disk = on_disk  # until opened: what the sanity check looks at
        self.entries = on_disk // self.entry_size
        if writable and preallocate:
            # The active segment's index is mapped at its full preallocated size (a file
            # left preallocated by a crash keeps its size); a sealed one keeps its trimmed
            # size until a rebuild resets it.
            self._length = max(self._round(max_index_size), self._round(on_disk))
        else:
            self._length = on_disk
        self.max_entries = self._length // self.entry_size

    def _open(self) -> None:
        """Map the index at its (preallocated) length: the first read, flush, trim or
        rebuild does, not the load (as Kafka's LazyIndex). The mapping keeps its own
        descriptor and the index none: a mapped index costs one."""
        if self._opened:
            return
        with self._open_lock:
            if self._opened:
                return
            if self._closed:
                raise ValueError(f"{self.path} is closed")
            if self.file_made:
                fd = self._open_descriptor(os.O_RDWR if self.writable else os.O_RDONLY)
            else:  # a new index's first write or read (a rebuild's, a flush's): made now
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
                self.file_made = True
            try:
                if self.writable and os.fstat(fd).st_size != self._length:
                    os.ftruncate(fd, self._length)
                self._map(fd)
            finally:
                os.close(fd)
            self._opened = True

    def _request_file(self) -> None:
        """A new index's first entry: its file is made on the background thread."""
        if not self._file_requested and not self._closed:
            self._file_requested = True
            _make_in_background(self._make_requested_file)

    def _make_requested_file(self) -> None:
        try:
            self.make_file()
        except OSError as exc:  # its dir deleted meanwhile, a disk failing
            self._file_requested = False  # asked again by the next entry
            if not self._closed:
                log.warning("making %s failed: %s", self.path, exc)

    def make_file(self) -> None:
        """Make a new index's (empty) file now, unless it exists or the index is closed."""
        with self._open_lock:
            if not self.file_made and not self._closed:
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644))
                self.file_made = True

    def _open_descriptor(self, flags: int) -> int:
        """A descriptor on the index file (made by `_open` or `make_file`, never here: a
        path renamed under a reader must not come back as a new file). A rename by another
        thread (a segment's deletion, a cleaner's swap) is followed once."""
        path = self.path
        try:
            return os.open(path, flags)
        except FileNotFoundError:
            if self._closed:  # deleted meanwhile: as for a closed file, readers retry
                raise ValueError(f"{path} is closed") from None
            if self.path == path:
                raise
            return os.open(self.path, flags)

    def _round(self, size: int) -> int:
        return size - size % self.entry_size

    def _map(self, fd: int) -> None:
        # A plain attribute, not a property: checked on every append and roll check.
        self.max_entries = self._length // self.entry_size
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None
        if self._length > 0:
            access = mmap.ACCESS_WRITE if self.writable else mmap.ACCESS_READ
            self._mmap = mmap.mmap(fd, self._length, access=access)

    def _mapping(self) -> mmap.mmap:
        """The mapping to read, made now if the index was never opened."""
        if self._pending:
            self._write_pending()
        mapped = self._mmap
        if mapped is None and not self._opened and not self._closed:
            self._open()
            mapped = self._mmap
        if mapped is None:  # ValueError, as for a closed file: readers retry on it
            raise ValueError(f"{self.path} is closed")
        return mapped

    def _peek(self, *slots: int) -> list[tuple[int, int]]:
        """Entries at `slots` without opening the index: read from the mapping if there is
        one, else with a pread each on a descriptor held for this call only (a log's end
        is found at load from its last entry, and the load's sanity check reads two)."""
        if self._opened or self._pending:
            return [self._read(n) for n in slots]
        fd = self._open_descriptor(os.O_RDONLY)
        try:
            return [self._pread_entry(fd, n) for n in slots]
        finally:
            os.close(fd)

    def _pread_entry(self, fd: int, n: int) -> tuple[int, int]:
        size = self.entry_size
        raw = os.pread(fd, size, n * size)
        if len(raw) < size:
            raise CorruptIndexError(f"{self.path}: entry {n} is past the end of the file")
        return self.entry.unpack(raw)

    def _floor_entry_unopened(self, target: int) -> tuple[int, int] | None:
        """The raw entry of `_floor_slot(target)` for a one-off reader (a segment's largest
        timestamp, which retention asks of every log): an index never opened is searched
        with preads on a descriptor held for this call instead of being mapped for good.
        None: no entry's key is <= target."""
        if self._opened or self._pending:
            slot = self._floor_slot(target)
            return self._read(slot) if slot >= 0 else None
        if not self.entries:
            return None
        fd = self._open_descriptor(os.O_RDONLY)
        try:
            slot = self._floor_slot(target, lambda n: self._pread_entry(fd, n)[0])
            return self._pread_entry(fd, slot) if slot >= 0 else None
        finally:
            os.close(fd)

    def _file_size(self) -> int:
        return os.stat(self.path).st_size if self._opened else self._size_on_disk

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    @property
    def size_in_bytes(self) -> int:
        return self.entries * self.entry_size

    def _read(self, n: int) -> tuple[int, int]:
        mapped = self._mmap
        if mapped is None or self._pending:
            if not self.file_made:
                return self._read_pending(n)
            mapped = self._mapping()
        return self.entry.unpack_from(mapped, n * self.entry_size)

    def _read_pending(self, n: int) -> tuple[int, int]:
        """Entry n of a new index whose file is still being made: it is pending (unless
        the file was made and the entries written meanwhile: then from the mapping)."""
        with self._pending_lock:
            position = (n - self._pending_from) * self.entry_size
            if self._pending and 0 <= position < len(self._pending):
                return self.entry.unpack_from(self._pending, position)
        return self.entry.unpack_from(self._mapping(), n * self.entry_size)

    def _pwrite(self, data: bytes | bytearray, position: int) -> None:
        """A write through the file, not a store into the mapping, which faults once
        writeback has cleaned the page and may then sleep on the filesystem's journal
        (hundreds of µs under a heavy write load). Readers of the mapping see the same
        page cache. The descriptor lives for the write only (see `_open`)."""
        self._open()
        fd = self._open_descriptor(os.O_WRONLY)
        try:
            os.pwrite(fd, data, position)
        finally:
            os.close(fd)

    def _write_pending(self) -> None:
        """Write the appended entries kept back so far, in one pwrite."""
        with self._pending_lock:
            pending = self._pending
            if pending:
                self._pwrite(pending, self._pending_from * self.entry_size)
                pending.clear()

    def _key(self, n: int) -> int:
        raise NotImplementedError

    def _floor_slot(self, target: int, key: Callable[[int], int] | None = None) -> int:
        """Slot of the largest entry whose key is <= target, or -1 (`key`: how slot n's key
        is read, the mapping's `_key` unless given)."""
        key = key or self._key
        if self.entries == 0 or key(0) > target:
            return -1
        lo, hi = 0, self.entries - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if key(mid) <= target:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _ceiling_slot(self, target: int) -> int:
        """Slot of the smallest entry whose key is >= target, or -1."""
        if self.entries == 0 or self._key(self.entries - 1) < target:
            return -1
        lo, hi = 0, self.entries - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if self._key(mid) >= target:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _append_raw(self, packed_a: int, packed_b: int) -> None:
        if not self.writable:
            raise PermissionError(f"{self.path} is read-only")
        if self.entries >= self.max_entries:
            raise CorruptIndexError(f"index {self.path} is full ({self.entries} entries)")
        self.append_in_order(packed_a, packed_b)

    def append_in_order(self, packed_a: int, packed_b: int) -> None:
        """Keep back one entry (written with the next PENDING_ENTRIES). Called directly by
        the segment's produce path, which already guarantees what `_append_raw` checks: the
        log assigns offsets and positions in increasing order, and the segment rolls before
        an index fills (`LogSegment.should_roll`)."""
        with self._pending_lock:
            pending = self._pending
            if not pending:
                self._pending_from = self.entries
            pending += self._pack(packed_a, packed_b)
            self.entries += 1
            full = len(pending) >= self._pending_limit
        if not self.file_made:
            self._request_file()  # the entries wait in memory meanwhile
        elif full:
            self._write_pending()

    def append_packed(self, packed: bytes | bytearray) -> None:
        """Append entries already packed and in order (an index rebuild): one write."""
        count = len(packed) // self.entry_size
        if not count:
            return
        if not self.writable:
            raise PermissionError(f"{self.path} is read-only")
        if self.entries + count > self.max_entries:
            raise CorruptIndexError(f"index {self.path} is full ({self.max_entries} entries)")
        self._write_pending()
        self._pwrite(packed, self.entries * self.entry_size)
        self.entries += count

    def _last(self) -> tuple[int, int]:
        """The raw last entry: from the pending entries when there are some (appends check
        it every time; reading the mapping would write them first), else cached per entry
        count."""
        tail = self._pending[-self.entry_size :]  # one copy: a flush may clear it meanwhile
        if tail:
            return self.entry.unpack(tail)
        cached = self._last_raw
        if cached is None or cached[0] != self.entries:
            cached = (self.entries, self._peek(self.entries - 1)[0])
            self._last_raw = cached
        return cached[1]

    def truncate_to_entries(self, entries: int) -> None:
        if not self.file_made:  # every entry is pending (a follower's truncation on the loop)
            with self._pending_lock:
                if not self.file_made:
                    self.entries = max(0, min(entries, self.entries))
                    kept = max(0, self.entries - self._pending_from) * self.entry_size
                    del self._pending[kept:]
                    self._last_raw = None
                    return
        self._write_pending()
        self.entries = max(0, min(entries, self.entries))
        self._last_raw = None  # appends may bring the count back with other entries

    def reset(self) -> None:
        """Drop every entry and map the full preallocated size again (for a rebuild)."""
        self._pending.clear()
        self.entries = 0
        self._last_raw = None
        if self.writable:
            self.resize(self.max_index_size)

    def resize(self, new_size: int) -> None:
        self._write_pending()
        size = self._round(new_size)
        if not self._opened:  # lazy: the file takes this length when it is opened
            self._length = size
            self.max_entries = size // self.entry_size
            self.entries = min(self.entries, self.max_entries)
            return
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None
        fd = self._open_descriptor(os.O_RDWR)
        try:
            os.ftruncate(fd, size)
            self._length = size
            self.entries = min(self.entries, size // self.entry_size)
            self._map(fd)
        finally:
            os.close(fd)

    def trim_to_valid_size(self) -> None:
        """Cut the preallocated tail: a sealed index holds only its entries (and has its
        file, as Kafka's, even with none). One never opened is cut on disk without being
        mapped (entries dropped meanwhile by a truncation or a reset go with the tail)."""
        if self.writable and not self.file_made:
            self.make_file()
        self._trim()

    def _trim(self) -> None:
        if not self.writable:
            return
        if self._opened or self._pending:
            self._open()
            self.resize(self.size_in_bytes)
            return
        size = self.size_in_bytes
        if size != self._size_on_disk:
            try:
                os.truncate(self.path, size)
            except FileNotFoundError:
                if size:
                    raise
            self._size_on_disk = size
        self._length = size
        self.max_entries = self.entries

    def flush(self) -> None:
        if self.writable:
            self._write_pending()  # (a lazy index's first entries make its file)
            if self._mmap is not None:
                self._mmap.flush()

    def close(self) -> None:
        if self.writable and not self._closed:
            self._trim()  # an idle new index is left without a file (an empty one at load)
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None
        self._closed = True
        self.writable = False

    def rename_to(self, path: Path) -> None:
        # Under the open lock: a file being made in the background is made at one name.
        with self._open_lock:
            if self.file_made:
                os.replace(self.path, path)
            self.path = path

    def delete(self) -> None:
        self._pending.clear()
        with self._open_lock:
            if self._mmap is not None:
                self._mmap.close()
                self._mmap = None
            self._closed = True
            self.writable = False
            self.path.unlink(missing_ok=True)


class OffsetIndex(_Index):
    """Maps offsets to file positions in the segment's .log."""

    entry = struct.Struct(">ii")

    def _key(self, n: int) -> int:
        mapped = self._mmap
        if mapped is None or self._pending:
            return self._read(n)[0]  # (maps the index, or reads a new one's pending entries)
        return self.entry.unpack_from(mapped, n * 8)[0]

    def entry_at(self, n: int) -> OffsetPosition:
        return self._entry(self._read(n))

    def _entry(self, raw: tuple[int, int]) -> OffsetPosition:
        return OffsetPosition(self.base_offset + raw[0], raw[1])

    def __iter__(self) -> Iterator[OffsetPosition]:
        for n in range(self.entries):
            yield self.entry_at(n)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self._last()[0] if self.entries else self.base_offset

    def lookup(self, offset: int) -> OffsetPosition:
        """The largest entry <= offset, else (base offset, 0): where a scan starts."""
        if offset <= self.base_offset:  # a read from the segment's start maps nothing
            return OffsetPosition(self.base_offset, 0)
        slot = self._floor_slot(offset - self.base_offset)
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        return self.entry_at(slot)

    def lookup_once(self, offset: int) -> OffsetPosition:
        """`lookup` for a one-off reader: does not map an index never opened."""
        found = self._floor_entry_unopened(offset - self.base_offset)
        if found is None:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(self.base_offset + found[0], found[1])

    def offset_at_or_after_position(self, position: int) -> int | None:
        """The offset of the first entry whose position is >= `position` (entries'
        positions ascend), else None: a binary search straight over the mapping."""
        if not self.entries:
            return None
        mapped = self._mapping()
        unpack = self.entry.unpack_from
        low, high = 0, self.entries
        while low < high:
            middle = (low + high) // 2
            if unpack(mapped, middle * 8)[1] < position:
                low = middle + 1
            else:
                high = middle
        return self.base_offset + unpack(mapped, low * 8)[0] if low < self.entries else None

    def append(self, offset: int, position: int) -> None:
        relative = offset - self.base_offset
        if self.entries and relative <= self._last()[0]:
            raise CorruptIndexError(
                f"offset {offset} is not larger than the last entry {self.last_offset}"
            )
        if not 0 <= relative <= 0x7FFFFFFF:
            raise CorruptIndexError(f"offset {offset} does not fit relative to {self.base_offset}")
        self._append_raw(relative, position)

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= offset."""
        slot = self._ceiling_slot(offset - self.base_offset)
        if slot >= 0:
            self.truncate_to_entries(slot)

    def sanity_check(self, log_size: int | None = None) -> None:
        """Cheap checks Kafka makes when it opens an index; O(1)."""
        length = self._file_size()
        if length % self.entry_size:
            raise CorruptIndexError(f"{self.path}: size {length} is not a multiple of 8")
        if self.entries:
            first, last = map(self._entry, self._peek(0, self.entries - 1))
            if first.offset < self.base_offset or last.offset < first.offset:
                raise CorruptIndexError(f"{self.path}: entries are out of order")
            if log_size is not None and last.position > log_size:
                raise CorruptIndexError(f"{self.path}: position {last.position} past the log")

    def verify(self, log_size: int | None = None) -> None:
        """Every entry strictly increasing in offset and position (used by dump-log)."""
        previous = None
        for entry in self:
            if previous is not None and (
                entry.offset <= previous.offset or entry.position < previous.position
            ):
                raise CorruptIndexError(f"{self.path}: {entry} after {previous}")
            if log_size is not None and entry.position > log_size:
                raise CorruptIndexError(f"{self.path}: {entry} points past the log")
            previous = entry


class TimeIndex(_Index):
    """Maps timestamps to offsets: each entry is the max timestamp so far and its offset."""

    entry = struct.Struct(">qi")

    def _key(self, n: int) -> int:
        mapped = self._mmap
        if mapped is None or self._pending:
            return self._read(n)[0]  # (maps the index, or reads a new one's pending entries)
        return self.entry.unpack_from(mapped, n * 12)[0]

    def entry_at(self, n: int) -> TimestampOffset:
        return self._entry(self._read(n))

    def _entry(self, raw: tuple[int, int]) -> TimestampOffset:
        return TimestampOffset(raw[0], self.base_offset + raw[1])

    def __iter__(self) -> Iterator[TimestampOffset]:
        for n in range(self.entries):
            yield self.entry_at(n)

    @property
    def last_entry(self) -> TimestampOffset:
        if not self.entries:
            return TimestampOffset(-1, self.base_offset)
        timestamp, relative = self._last()
        return TimestampOffset(timestamp, self.base_offset + relative)

    def lookup(self, timestamp: int) -> TimestampOffset:
        """The largest entry with timestamp <= target, else (-1, base offset)."""
        slot = self._floor_slot(timestamp)
        if slot < 0:
            return TimestampOffset(-1, self.base_offset)
        return self.entry_at(slot)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Append only a larger timestamp at a larger offset (entries stay monotonic)."""
        full = self.entries >= self.max_entries
        if full and not skip_full_check:
            raise CorruptIndexError(f"time index {self.path} is full")
        if self.entries:
            last_timestamp, last_relative = self._last()
            if offset < self.base_offset + last_relative:
                raise CorruptIndexError(f"offset {offset} is before the last entry")
            if timestamp <= last_timestamp:
                return
        elif timestamp < 0:
            return  # Kafka's empty index's last entry is (-1, base): no timestamp is no entry
        if full:
            return
        self._append_raw(timestamp, offset - self.base_offset)

    def append_if_later(self, timestamp: int, relative_offset: int) -> None:
        """maybe_append for the segment's produce path, whose offsets only grow and which
        rolls before the index fills: only the timestamp needs checking."""
        if self.entries and timestamp <= self._last()[0]:
            return
        self.append_in_order(timestamp, relative_offset)

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= offset."""
        lo, hi = 0, self.entries  # entries are monotonic in offset too: binary search
        while lo < hi:
            mid = (lo + hi) // 2
            if self.entry_at(mid).offset >= offset:
                hi = mid
            else:
                lo = mid + 1
        self.truncate_to_entries(lo)

    def sanity_check(self) -> None:
        length = self._file_size()
        if length % self.entry_size:
            raise CorruptIndexError(f"{self.path}: size {length} is not a multiple of 12")
        if self.entries:
            first, last = map(self._entry, self._peek(0, self.entries - 1))
            if first.offset < self.base_offset or last.offset < first.offset:
                raise CorruptIndexError(f"{self.path}: entries are out of order")
            if last.timestamp < first.timestamp:
                raise CorruptIndexError(f"{self.path}: timestamps are out of order")

    def verify(self) -> None:
        previous = None
        for entry in self:
            if previous is not None and (
                entry.timestamp <= previous.timestamp or entry.offset < previous.offset
            ):
                raise CorruptIndexError(f"{self.path}: {entry} after {previous}")
            previous = entry
