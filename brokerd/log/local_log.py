"""A partition's segment files on disk (Kafka's LocalLog).

LocalLog owns the directory, the ordered segments (`LogSegments`), the log end offset and
the recovery point; it rolls, reads file regions, truncates, and removes segments (renamed
`.deleted` at once, their files deleted after file.delete.delay.ms, since readers may still
hold them). What the offsets mean beyond the files (log start offset, high watermark),
producer state, leader epochs and validation belong to `Log`, which coordinates this.

Locking: LocalLog is changed only by `Log`, under the Log's lock. It locks only for what
readers and the deletion queue share: `_file_lock` is held while a read dups a segment's
descriptor and while a segment's file is closed, so a read never dups a closed (or already
reused) descriptor number; `_pending_lock` guards the queue of `.deleted` segments, which
is drained without the Log's lock. Reads take the current `segments.view` without locking.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..config import LogConfig
from . import errors
from .segment import DELETED_SUFFIX, SWAP_SUFFIX, EntryHeader, FileRegion, LogSegment
from .segments import LogSegments


@dataclass(slots=True)
class OwnedRegion(FileRegion):
    """A region with its own descriptor (a dup of the segment's): it stays readable after
    retention or the cleaner closes and deletes the segment. Send it, then `release()`."""

    def release(self) -> None:
        self.file.close()


@dataclass(slots=True)
class FetchDataInfo:
    """What a fetch sends: a file region of whole batches (possibly empty)."""

    fetch_offset: int
    region: FileRegion | None
    first_entry_offset: int | None = None

    @property
    def size(self) -> int:
        return self.region.length if self.region else 0

    def read(self) -> bytes:
        return self.region.read() if self.region else b""


class LocalLog:
    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        segments: Iterable[LogSegment],
        recovery_point: int,
    ):
        self.dir = Path(directory)
        self.config = config
        self.segments = LogSegments(segments)
        if not len(self.segments):
            raise ValueError(f"{self.dir.name}: a log needs at least one segment")
        self.log_end_offset = self.segments.active.read_next_offset()
        self.recovery_point = recovery_point
        self._file_lock = threading.Lock()
        self._pending_lock = threading.Lock()
        self._pending_deletes: list[tuple[int, LogSegment]] = []

    @property
    def name(self) -> str:
        return self.dir.name

    def update_config(self, config: LogConfig) -> None:
        self.config = config
        for segment in self.segments:
            segment.config = config

    # Appends and rolls (under the Log's lock) ------------------------------------------
    def append(self, data: bytes | bytearray | memoryview, headers: list[EntryHeader]) -> None:
        """Write whole entries with assigned offsets to the active segment (the Log has
        rolled when due); the log end offset moves past the last entry."""
        self.segments.active.append(data, headers)
        self.log_end_offset = headers[-1].last_offset + 1

    def roll(self, new_base: int, now_ms: int) -> LogSegment:
        """Seal the active segment and start a new one at `new_base` (at or above the log
        end offset, and above the active segment's base)."""
        active = self.segments.active
        if active.base_offset >= new_base:
            raise errors.KafkaStorageError(
                f"cannot roll to {new_base}: active segment starts at {active.base_offset}"
            )
        active.on_become_inactive()
        segment = LogSegment(self.dir, new_base, self.config, created_ms=now_ms)
        self.segments.add(segment)
        return segment

    # Flushing (fsyncs run without the Log's lock) ------------------------------------
    def segments_to_flush(self, offset: int) -> list[LogSegment]:
        """Segments holding offsets in [recovery point, offset): what a flush must fsync."""
        return [s for s in self.segments.from_offset(self.recovery_point) if s.base_offset < offset]

    def flush_segments(self, segments: Iterable[LogSegment]) -> None:
        """fsync each; one closed meanwhile because retention, the cleaner or a truncation
        removed it has nothing left to flush (its closed file gives ValueError, or EBADF
        when it closed between fileno() and fsync), but a live segment's failure is raised."""
        for segment in segments:
            try:
                segment.flush()
            except (ValueError, OSError):
                if segment in self.segments:
                    raise

    # Reads (no lock) -------------------------------------------------------------------
    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None,
        min_one_message: bool,
        owned: bool,
    ) -> FetchDataInfo:
        """Whole batches from the segment holding start_offset (or, when it was compacted
        away, the next one holding data), bounded by max_bytes and max_offset."""
        view = self.segments.view
        bases, segments = view
        i = max(view.floor_index(start_offset), 0)
        while i < len(segments):
            segment = segments[i]
            next_base = view.next_base(i)
            max_position = segment.size
            if max_offset is not None and (next_base is None or max_offset < next_base):
                bound = segment.translate_offset(max_offset)
                if bound is not None:
                    max_position = bound.position
            with self._file_lock:
                found = segment.read(start_offset, max_bytes, max_position, min_one_message)
                if found is not None and found[1].length and owned:
                    first, region = found
                    own_file = os.fdopen(os.dup(region.file.fileno()), "rb", buffering=0)
                    found = first, OwnedRegion(own_file, region.position, region.length)
            if found is not None:
                first, region = found
                if region.length == 0:
                    return FetchDataInfo(start_offset, None)
                return FetchDataInfo(start_offset, region, first.base_offset)
            i += 1
        return FetchDataInfo(start_offset, None)

    # Truncation (under the Log's lock) -----------------------------------------------
    def truncate_to(self, offset: int) -> list[LogSegment]:
        """Remove everything at or above `offset`, which must be at or above the first
        segment's base. Returns the segments deleted whole."""
        doomed = [s for s in self.segments if s.base_offset > offset]
        self.segments.remove(doomed)
        for segment in doomed:
            self.close_file(segment)
            segment.delete()
        self.segments.active.truncate_to(offset)
        self.log_end_offset = offset
        self.recovery_point = min(self.recovery_point, offset)
        return doomed

    def truncate_fully_and_start_at(self, offset: int, now_ms: int) -> None:
        """Delete every segment and start empty at `offset`."""
        old = self.segments.all()
        self.segments.set([LogSegment(self.dir, offset, self.config, created_ms=now_ms)])
        for segment in old:
            # A segment at `offset` shares its file names with the new one, which has
            # just taken them over.
            if segment.base_offset != offset:
                self.close_file(segment)
                segment.delete()
        self.log_end_offset = offset
        self.recovery_point = offset

    # Removing segments -----------------------------------------------------------------
    def remove_segments(self, doomed: list[LogSegment], due_ms: int) -> None:
        """Take segments out of the log (under the Log's lock): their files are renamed
        `.deleted` now and deleted by `remove_deleted_segments` from `due_ms` on."""
        self.segments.remove(doomed)
        self._schedule_deletion(doomed, due_ms)

    def replace_segments(self, new: list[LogSegment], old: list[LogSegment], due_ms: int) -> None:
        """Swap `new` (files with the `.swap` suffix) in for `old` in one change readers
        see at once, then give `new` its final names (Kafka's replaceSegments order, so a
        crash at any point leaves a log that loading completes or undoes)."""
        self.segments.replace(new, old)
        self._schedule_deletion(old, due_ms)
        for segment in new:
            if segment.log_path.name.endswith(SWAP_SUFFIX):
                segment.change_file_suffixes(SWAP_SUFFIX, "")

    def _schedule_deletion(self, segments: Iterable[LogSegment], due_ms: int) -> None:
        for segment in segments:
            if segment.log_path.exists():
                segment.change_file_suffixes("", DELETED_SUFFIX)
            with self._pending_lock:
                self._pending_deletes.append((due_ms, segment))

    def remove_deleted_segments(self, now_ms: int, force: bool = False) -> int:
        """Delete the `.deleted` files whose delay has passed; returns how many went."""
        with self._pending_lock:
            due = [(t, s) for t, s in self._pending_deletes if force or t <= now_ms]
            self._pending_deletes = [
                (t, s) for t, s in self._pending_deletes if not (force or t <= now_ms)
            ]
        for _, segment in due:
            self.close_file(segment)
            segment.delete()
        return len(due)

    @property
    def pending_deletes(self) -> int:
        with self._pending_lock:
            return len(self._pending_deletes)

    def close_file(self, segment: LogSegment) -> None:
        """Close a segment's log file under the file lock (see the module docstring);
        closing the rest (indexes, unlinks) needs no lock and may take longer."""
        with self._file_lock:
            segment.file.close()

    def update_parent_dir(self, directory: Path) -> None:
        """After the directory was renamed (under the Log's lock): the paths of every
        segment follow, the open files are kept."""
        self.dir = Path(directory)
        for segment in self.segments:
            segment.update_parent_dir(self.dir)

    # Closing ---------------------------------------------------------------------------
    def close(self) -> None:
        """Trim and close every segment (a preallocated file keeps only its data), and
        delete the `.deleted` files now."""
        for segment in self.segments:
            segment.trim()
            self.close_file(segment)
            segment.close()  # seals the indexes (the file is already closed)
        self.remove_deleted_segments(0, force=True)

    def release(self) -> None:
        """Close every file without trimming (the directory is about to be removed)."""
        for segment in self.segments:
            self.close_file(segment)
            segment.close()
        self.remove_deleted_segments(0, force=True)
