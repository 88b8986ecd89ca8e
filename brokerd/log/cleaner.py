"""Log compaction (cleanup.policy=compact): keep only the latest record of every key.

A compacted log has a clean head (below the cleaner checkpoint, compacted before) and a dirty
tail. One pass, as Kafka's Cleaner does it:
1. build an `OffsetMap` (key hash -> latest offset) over the dirty range
   [first dirty offset, first uncleanable offset); the map has a fixed memory budget and a
   pass that fills it stops early: the new checkpoint is where the map got to;
2. delete horizon = mtime of the last clean segment - delete.retention.ms: tombstones in
   segments last modified at or before it are dropped, others kept (consumers that were
   behind must still see the delete);
3. group the segments from the log start up to the map's end into groups of at most
   segment.bytes (small cleaned segments merge), each group spanning < 2^31 offsets;
4. copy each group into `<base>.log.cleaned`, keeping a record only when no later record of
   its key is in the map; batches keep their base offset, last offset delta, producer id,
   epoch and base sequence, codec, timestamp type, leader epoch and flags, so offsets keep
   their gaps and idempotent producer state can be rebuilt from the log. A batch whose
   records all go stays as an empty batch when it is its producer's last batch;
5. swap: `.cleaned` -> `.swap` (after noting the group's extent, see swap.py), then
   `Log.replace_segments` puts the new segment in the group's place (old files become
   `.deleted`) and renames `.swap` -> final name. A crash leaves either a `.cleaned` file
   (deleted at load) or a complete `.swap` that load puts in place of the whole group.
The active segment is never touched, and readers keep reading the old segment objects until
the swap.
"""

from __future__ import annotations

import hashlib
import logging
import os
import struct
import time
from array import array
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

from ..records import compression as codecs
from ..records import read_entry
from ..records.batch import (
    LOG_APPEND_TIME,
    RecordBatch,
    SimpleRecord,
    build_batch,
)
from ..records.control import ABORT, COMMIT, decode_key
from ..records.legacy import LegacyEntry
from .log import Log
from .segment import (
    CLEANED_SUFFIX,
    SWAP_SUFFIX,
    EntryHeader,
    LogSegment,
    parse_entry_header,
)
from .swap import remove_swap_group, write_swap_group

log = logging.getLogger(__name__)

DEFAULT_DEDUPE_BUFFER_SIZE = 128 * 1024 * 1024  # log.cleaner.dedupe.buffer.size
DEFAULT_LOAD_FACTOR = 0.9  # log.cleaner.io.buffer.load.factor
READ_CHUNK = 4 << 20
WRITE_CHUNK = 1 << 20
MAX_RELATIVE_OFFSET = 0x7FFFFFFF

_HASH_HALVES = struct.Struct(">qq")
_ATTRIBUTES = struct.Struct(">h")
_TRANSACTIONAL = 0x10
_CONTROL = 0x20
_PRODUCER_ID = struct.Struct(">q")


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    if n % 2 == 0:
        return n == 2
    divisor = 3
    while divisor * divisor <= n:
        if n % divisor == 0:
            return False
        divisor += 2
    return True


class OffsetMap:
    """key -> latest offset in a fixed amount of memory (Kafka's SkimpyOffsetMap).

    Keys are stored as their 16-byte MD5 (two int64 halves) next to an int64 offset, 24
    bytes a slot, in flat arrays sized once from the memory budget; keys themselves are never
    kept. Open addressing with double hashing over a prime number of slots, so a probe
    sequence visits every slot. Like Kafka, an MD5 collision is accepted as negligible.
    """

    BYTES_PER_ENTRY = 24

    def __init__(self, memory_bytes: int = DEFAULT_DEDUPE_BUFFER_SIZE):
        slots = max(memory_bytes // self.BYTES_PER_ENTRY, 2)
        while not _is_prime(slots):
            slots -= 1
        self.slots = slots
        self._high = array("q", bytes(8 * slots))
        self._low = array("q", bytes(8 * slots))
        self._offsets = array("q", [-1]) * slots  # -1 marks an empty slot
        self.size = 0
        self.latest_offset = -1
        self.lookups = 0
        self.probes = 0

    @property
    def memory_bytes(self) -> int:
        return self.slots * self.BYTES_PER_ENTRY

    def clear(self) -> None:
        if self.size:
            self._offsets = array("q", [-1]) * self.slots
        self.size = 0
        self.latest_offset = -1

    @property
    def utilization(self) -> float:
        return self.size / self.slots

    def _slot_of(self, key: bytes, insert: bool) -> int:
        high, low = _HASH_HALVES.unpack(hashlib.md5(key, usedforsecurity=False).digest())
        slots = self.slots
        slot = high % slots
        step = 1 + low % (slots - 1)
        offsets, highs, lows = self._offsets, self._high, self._low
        self.lookups += 1
        for _ in range(slots):
            self.probes += 1
            if offsets[slot] < 0:
                if insert:
                    highs[slot] = high
                    lows[slot] = low
                return slot
            if highs[slot] == high and lows[slot] == low:
                return slot
            slot = (slot + step) % slots
        return -1  # full table and key absent

    def put(self, key: bytes, offset: int) -> None:
        slot = self._slot_of(key, insert=True)
        if slot < 0:
            raise OverflowError("offset map is full")
        if self._offsets[slot] < 0:
            self.size += 1
        self._offsets[slot] = offset
        self.latest_offset = max(self.latest_offset, offset)

    def get(self, key: bytes) -> int:
        """The latest offset of `key`, or -1 when the map has not seen it."""
        slot = self._slot_of(key, insert=False)
        return self._offsets[slot] if slot >= 0 else -1

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = max(self.latest_offset, offset)


@dataclass
class CleanReport:
    """What one pass did; `end_offset` is the new cleaner checkpoint."""

    topic: str
    partition: int
    first_dirty_offset: int = 0
    first_uncleanable_offset: int = 0
    end_offset: int = 0
    delete_horizon_ms: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    records_read: int = 0
    records_kept: int = 0
    batches_read: int = 0
    batches_kept: int = 0
    empty_batches_kept: int = 0
    tombstones_removed: int = 0
    aborted_records_removed: int = 0
    markers_removed: int = 0
    segments_before: int = 0
    segments_after: int = 0
    map_records_read: int = 0
    map_utilization: float = 0.0
    partial: bool = False
    aborted_groups: int = 0
    started_ms: int = 0
    duration_ms: float = 0.0
    skipped: str | None = None
    group_bases: list[int] = field(default_factory=list)

    @property
    def bytes_removed(self) -> int:
        return self.bytes_before - self.bytes_after

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the abort marker's offset


class _TransactionTracker:
    """Follows transactions through one ordered read of the log (Kafka's
    CleanedTransactionMetadata): says which data batches belong to aborted transactions
    and which markers no longer guard any data."""

    def __init__(self, aborted: list[AbortedTxn]):
        self._pending = sorted(aborted, key=lambda txn: txn.first_offset)
        self._next = 0
        self._ongoing_aborted: dict[int, bool] = {}  # pid -> saw a batch of the txn
        self._ongoing_committed: set[int] = set()

    def _start_aborted_up_to(self, offset: int) -> None:
        while self._next < len(self._pending) and self._pending[self._next].first_offset <= offset:
            self._ongoing_aborted.setdefault(self._pending[self._next].producer_id, False)
            self._next += 1

    def on_data_batch(self, batch: RecordBatch) -> bool:
        """True when the batch belongs to an aborted transaction (its records go)."""
        self._start_aborted_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        if batch.producer_id in self._ongoing_aborted:
            self._ongoing_aborted[batch.producer_id] = True
            return True
        self._ongoing_committed.add(batch.producer_id)
        return False

    def on_control_batch(self, batch: RecordBatch, records: list) -> bool:
        """True when the marker may go: no data of its transaction is left before it."""
        self._start_aborted_up_to(batch.last_offset)
        if not records:
            return True  # an empty control batch was cleaned before
        try:
            marker_type = decode_key(records[0].key).type
        except ValueError:
            return False
        producer_id = batch.producer_id
        if marker_type == ABORT:
            saw_data = self._ongoing_aborted.pop(producer_id, False)
            return not saw_data  # keep it one more pass while aborted data was just removed
        if marker_type == COMMIT:
            if producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(producer_id)
                return False
            return True
        return False


def _iter_entries(
    segment: LogSegment, start: int = 0, end: int | None = None
) -> Iterator[tuple[EntryHeader, memoryview]]:
    """Every entry of a segment with its bytes, read in large chunks."""
    fd = segment.file.fileno()
    end = segment.size if end is None else end
    chunk = b""
    chunk_start = start
    position = start
    while end - position >= 17:
        offset = position - chunk_start
        if offset + 61 > len(chunk) and chunk_start + len(chunk) < end:
            chunk = os.pread(fd, min(READ_CHUNK, end - position), position)
            chunk_start, offset = position, 0
        try:
            header = parse_entry_header(chunk, offset, position)
        except (struct.error, ValueError):
            return  # garbage at the tail: recovery owns it
        if header.size > end - position:
            return  # a torn tail: recovery owns it
        if offset + header.size > len(chunk):
            chunk = os.pread(fd, max(READ_CHUNK, header.size), position)
            chunk_start, offset = position, 0
        yield header, memoryview(chunk)[offset : offset + header.size]
        position += header.size


def collect_aborted_transactions(segments: list[LogSegment]) -> list[AbortedTxn]:
    """Aborted transactions of the given segments, found from their markers. Kafka keeps a
    transaction index for this; here only transactional batches are looked into."""
    open_txns: dict[int, int] = {}
    aborted = []
    for segment in segments:
        for header, data in _iter_entries(segment):
            if header.magic != 2:
                continue
            (attributes,) = _ATTRIBUTES.unpack_from(data, 21)
            if not attributes & _TRANSACTIONAL:
                continue
            (producer_id,) = _PRODUCER_ID.unpack_from(data, 43)
            if not attributes & _CONTROL:
                open_txns.setdefault(producer_id, header.base_offset)
                continue
            first = open_txns.pop(producer_id, None)
            records = RecordBatch(data).records()
            if first is not None and records and decode_key(records[0].key).type == ABORT:
                aborted.append(AbortedTxn(producer_id, first, header.last_offset))
    return aborted


def aborted_transactions_below(log: Log, end: int) -> list[AbortedTxn]:
    """The aborted transactions with data below `end`: from the markers of the segments
    there (a segment written by the cleaner keeps no `.txnindex`) and, for a transaction
    whose ABORT marker lies at or past `end` (its data cleanable, its marker not yet), from
    the `.txnindex` of the later segments, as Kafka's cleaner finds them."""
    found = collect_aborted_transactions(log.segments_overlapping(0, end))
    known = {(txn.producer_id, txn.first_offset) for txn in found}
    for txn in log.collect_aborted_transactions(end, end):
        if txn.last_offset >= end and (txn.producer_id, txn.first_offset) not in known:
            found.append(AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset))
    return found


def first_uncleanable_offset(log: Log, now_ms: int) -> int:
    """Where the dirty range must stop: the active segment, the high watermark, the first
    open transaction (the last stable offset) and records younger than
    min.compaction.lag.ms all bound it; the result is rounded down to a segment base."""
    segments = log.segments
    active = segments[-1]
    bound = min(active.base_offset, log.high_watermark)
    open_txn_starts = log.open_transaction_starts()
    if open_txn_starts:
        bound = min(bound, min(open_txn_starts))
    lag = log.config.min_compaction_lag_ms
    if lag > 0:
        for segment in segments[:-1]:
            if segment.largest_timestamp > now_ms - lag:
                bound = min(bound, segment.base_offset)
                break
    holding = log.segment_for(bound)
    return holding.base_offset if holding is not None else bound


class Cleaner:
    """Cleans one log at a time with its own offset map (one per cleaner thread)."""

    def __init__(
        self,
        dedupe_buffer_size: int = DEFAULT_DEDUPE_BUFFER_SIZE,
        load_factor: float = DEFAULT_LOAD_FACTOR,
    ):
        self.offset_map = OffsetMap(dedupe_buffer_size)
        self.max_map_entries = int(self.offset_map.slots * load_factor)
        if self.max_map_entries < 1:
            raise ValueError(
                "the dedupe buffer cannot hold a single key: raise log.cleaner.dedupe.buffer.size"
            )

    # The pass -------------------------------------------------------------------------
    def clean(self, log: Log, first_dirty_offset: int, now_ms: int | None = None) -> CleanReport:
        started = time.monotonic()
        now = log.now_ms() if now_ms is None else now_ms
        report = CleanReport(log.topic, log.partition, started_ms=now)
        first_dirty = max(first_dirty_offset, log.log_start_offset)
        uncleanable = first_uncleanable_offset(log, now)
        report.first_dirty_offset = first_dirty
        report.first_uncleanable_offset = uncleanable
        report.end_offset = first_dirty
        if first_dirty >= uncleanable:
            report.skipped = "no dirty data below the first uncleanable offset"
            return self._finish(report, started)

        aborted = aborted_transactions_below(log, uncleanable)
        end_offset, report.partial = self.build_offset_map(
            log, first_dirty, uncleanable, aborted, report
        )
        if end_offset <= first_dirty:
            report.skipped = "the offset map could not take a single batch"
            return self._finish(report, started)
        report.end_offset = end_offset
        report.map_utilization = self.offset_map.utilization

        clean_segments = log.segments_overlapping(0, first_dirty)
        if clean_segments:
            report.delete_horizon_ms = (
                clean_segments[-1].last_modified_ms - log.config.delete_retention_ms
            )
        last_batches = _last_batches_of_producers(log)
        tracker = _TransactionTracker(aborted)
        to_clean = [
            s for s in log.segments_overlapping(0, end_offset) if s is not log.active_segment
        ]
        for group in group_segments_by_size(
            to_clean, log.config.segment_bytes, log.config.segment_index_bytes, uncleanable
        ):
            if not self._clean_group(log, group, tracker, last_batches, report):
                # The log changed under the pass (retention, truncation): the next pass
                # maps the dirty range again.
                report.aborted_groups += 1
                report.partial = True
                report.end_offset = first_dirty
                break
        return self._finish(report, started)

    @staticmethod
    def _finish(report: CleanReport, started: float) -> CleanReport:
        report.duration_ms = (time.monotonic() - started) * 1000
        return report

    # 1. The offset map ------------------------------------------------------------------
    def build_offset_map(
        self,
        log: Log,
        start: int,
        end: int,
        aborted: list[AbortedTxn] | None = None,
        report: CleanReport | None = None,
    ) -> tuple[int, bool]:
        """Map every key of the dirty range [start, end) to its latest offset. Returns the
        map's end offset and whether the map filled up first (a partial pass: it then ends
        after the last batch it mapped whole)."""
        if aborted is None:
            aborted = aborted_transactions_below(log, end)
        if report is None:
            report = CleanReport(log.topic, log.partition)
        partial = self._fill_offset_map(
            log.segments_overlapping(start, end), start, aborted, report
        )
        return self.offset_map.latest_offset + 1, partial

    def _fill_offset_map(
        self,
        dirty: list[LogSegment],
        start: int,
        aborted: list[AbortedTxn],
        report: CleanReport,
    ) -> bool:
        offset_map = self.offset_map
        offset_map.clear()
        tracker = _TransactionTracker(aborted)
        limit = self.max_map_entries
        for segment in dirty:
            position = segment.offset_index.lookup(start).position
            for header, data in _iter_entries(segment, position):
                if header.last_offset < start:
                    continue
                entry = read_entry(data)
                if isinstance(entry, RecordBatch) and entry.is_control:
                    tracker.on_control_batch(entry, entry.records())
                elif not (isinstance(entry, RecordBatch) and tracker.on_data_batch(entry)):
                    for record in entry.records():
                        if record.key is None or record.offset < start:
                            continue
                        if offset_map.size >= limit:
                            return True
                        offset_map.put(record.key, record.offset)
                        report.map_records_read += 1
                offset_map.update_latest_offset(header.last_offset)
        return False

    # 4-5. Copying a group and swapping it in --------------------------------------------
    def _clean_group(
        self,
        log: Log,
        group: list[LogSegment],
        tracker: _TransactionTracker,
        last_batches: dict[int, tuple[int, int]],
        report: CleanReport,
    ) -> bool:
        cleaned = self.write_cleaned_segment(log, group, tracker, last_batches, report)
        return self.swap_in(log, cleaned, group, report)

    def write_cleaned_segment(
        self,
        log: Log,
        group: list[LogSegment],
        tracker: _TransactionTracker | None = None,
        last_batches: dict[int, tuple[int, int]] | None = None,
        report: CleanReport | None = None,
        delete_horizon_ms: int | None = None,
    ) -> LogSegment:
        """Copy the group's surviving records into a complete, flushed `.cleaned` segment."""
        if tracker is None:
            tracker = _TransactionTracker([])
        if last_batches is None:
            last_batches = _last_batches_of_producers(log)
        if report is None:
            report = CleanReport(log.topic, log.partition)
        horizon = report.delete_horizon_ms if delete_horizon_ms is None else delete_horizon_ms
        base = group[0].base_offset
        for stale in log.dir.glob(f"{base:020d}.*{CLEANED_SUFFIX}"):
            stale.unlink()  # left by an earlier pass that failed
        cleaned = LogSegment(log.dir, base, log.config, suffix=CLEANED_SUFFIX, active=True)
        try:
            for segment in group:
                retain_deletes = segment.last_modified_ms > horizon
                self._copy_segment(segment, cleaned, retain_deletes, tracker, last_batches, report)
            cleaned.on_become_inactive()
            cleaned.flush()
            # Keep the group's mtime: the delete horizon of later passes is computed from it.
            modified_ns = max(os.stat(s.log_path).st_mtime_ns for s in group)
            os.utime(cleaned.log_path, ns=(modified_ns, modified_ns))
        except BaseException:
            cleaned.delete()
            raise
        report.segments_before += len(group)
        report.segments_after += 1
        report.bytes_after += cleaned.size
        report.group_bases.append(base)
        return cleaned

    def swap_in(
        self, log: Log, cleaned: LogSegment, group: list[LogSegment], report: CleanReport
    ) -> bool:
        """Replace the group by the cleaned segment, in an order that a crash at any point
        leaves loadable. False (and nothing changed) when the log changed under us."""
        self.mark_as_swap(log, cleaned, group)
        swapped = log.replace_segments([cleaned], group)
        if not swapped:
            # Retention, truncation or a close replaced these segments meanwhile.
            cleaned.delete()
        remove_swap_group(log.dir, cleaned.base_offset)
        if swapped:
            log.remove_deleted_segments()
        return swapped

    @staticmethod
    def mark_as_swap(log: Log, cleaned: LogSegment, group: list[LogSegment]) -> None:
        """`.cleaned` -> `.swap`: from here on a crash completes the swap at load, for the
        whole group (`swap.py` says why the group's extent is written down first)."""
        write_swap_group(log.dir, cleaned.base_offset, group[-1].base_offset)
        cleaned.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)

    def _copy_segment(
        self,
        source: LogSegment,
        dest: LogSegment,
        retain_deletes: bool,
        tracker: _TransactionTracker,
        last_batches: dict[int, tuple[int, int]],
        report: CleanReport,
    ) -> None:
        offset_map = self.offset_map
        latest = offset_map.latest_offset
        out = bytearray()
        headers: list[EntryHeader] = []
        report.bytes_before += source.size

        def keep_record(record) -> bool:
            if record.offset > latest:
                return True  # beyond the map: nothing newer is known
            if record.key is None:
                return False  # a compacted log cannot keep a record without a key
            found = offset_map.get(record.key)
            if 0 <= found and record.offset < found:
                return False
            if record.value is None and not retain_deletes:
                report.tombstones_removed += 1
                return False
            return True

        for header, data in _iter_entries(source):
            report.batches_read += 1
            entry = read_entry(data)
            if isinstance(entry, LegacyEntry):
                records = entry.records()
                report.records_read += len(records)
                kept = sum(1 for r in records if keep_record(r))
                if kept:  # a partly obsolete legacy wrapper is kept whole
                    report.records_kept += len(records)
                    self._add(out, headers, bytes(data), header)
                continue
            batch = entry
            records = batch.records()
            report.records_read += len(records)
            if batch.is_control:
                discard = tracker.on_control_batch(batch, records) and not retain_deletes
                survivors = [] if discard else records
                if discard:
                    report.markers_removed += 1
            else:
                discard = tracker.on_data_batch(batch)
                if discard:
                    survivors = []
                    report.aborted_records_removed += len(records)
                else:
                    survivors = [r for r in records if keep_record(r)]
            retain_empty = batch.has_producer_id and self._is_last_of_producer(batch, last_batches)
            if not discard and len(survivors) == len(records):
                report.records_kept += len(records)
                self._add(out, headers, bytes(data), header)
            elif survivors or retain_empty:
                report.records_kept += len(survivors)
                if not survivors:
                    report.empty_batches_kept += 1
                rebuilt = _rebuild_batch(batch, survivors)
                new = RecordBatch(rebuilt)
                self._add(
                    out,
                    headers,
                    rebuilt,
                    EntryHeader(
                        0, new.size, new.base_offset, new.last_offset, new.max_timestamp, 2
                    ),
                )
            if len(out) >= WRITE_CHUNK:
                report.batches_kept += len(headers)
                dest.append(out, headers)
                out, headers = bytearray(), []
        if headers:
            report.batches_kept += len(headers)
            dest.append(out, headers)

    @staticmethod
    def _add(out: bytearray, headers: list[EntryHeader], data, header: EntryHeader) -> None:
        headers.append(header._replace(position=len(out)))
        out += data

    @staticmethod
    def _is_last_of_producer(batch: RecordBatch, last_batches: dict[int, tuple[int, int]]) -> bool:
        """Kafka keeps the batch holding a live producer's last sequence (else the producer
        gets OutOfOrderSequence after a reload), or, when its last entry is a marker, the
        marker that carries its latest epoch (fencing)."""
        last = last_batches.get(batch.producer_id)
        if last is None:
            return False
        last_data_offset, epoch = last
        if last_data_offset >= 0:
            return batch.last_offset == last_data_offset
        return batch.is_control and batch.producer_epoch == epoch


def _last_batches_of_producers(log: Log) -> dict[int, tuple[int, int]]:
    """producer id -> (last data offset or -1, epoch)."""
    return {
        pid: (entry.last_data_offset, entry.producer_epoch)
        for pid, entry in log.active_producers().items()
    }


def _rebuild_batch(batch: RecordBatch, survivors: list) -> bytearray:
    """A new batch of the survivors with the original's identity: base offset, last offset
    delta, producer id/epoch/base sequence, codec, timestamp type, leader epoch, flags."""
    log_append_time = batch.timestamp_type == LOG_APPEND_TIME
    if not survivors:
        # Kafka's empty batch: uncompressed, both timestamps the original max timestamp.
        codec = codecs.NONE
        first_ts = batch.max_timestamp
    else:
        codec = batch.compression
        first_ts = None
    base = batch.base_offset
    return build_batch(
        [
            SimpleRecord(r.value, r.key, [(h.key, h.value) for h in r.headers], r.timestamp)
            for r in survivors
        ],
        base_offset=base,
        compression_type=codec,
        timestamp_type=batch.timestamp_type,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        partition_leader_epoch=batch.partition_leader_epoch,
        is_transactional=batch.is_transactional,
        is_control=batch.is_control,
        offset_deltas=[r.offset - base for r in survivors],
        last_offset_delta=batch.last_offset_delta,
        first_timestamp=first_ts,
        max_timestamp=batch.max_timestamp if (log_append_time or not survivors) else None,
    )


def group_segments_by_size(
    segments: list[LogSegment], max_size: int, max_index_size: int, first_uncleanable: int
) -> list[list[LogSegment]]:
    """Consecutive segments merged while the group's log stays <= segment.bytes, its
    indexes <= segment.index.bytes and its offsets fit a 32-bit relative offset."""
    groups = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        log_size = segments[i].size
        index_size = segments[i].offset_index.size_in_bytes
        time_index_size = segments[i].time_index.size_in_bytes
        i += 1
        while i < len(segments):
            candidate = segments[i]
            # The candidate's last offset is bounded by the next base (or the dirty end).
            upper = (
                segments[i + 1].base_offset - 1 if i + 1 < len(segments) else first_uncleanable - 1
            )
            if (
                log_size + candidate.size > max_size
                or index_size + candidate.offset_index.size_in_bytes > max_index_size
                or time_index_size + candidate.time_index.size_in_bytes > max_index_size
                or upper - group[0].base_offset > MAX_RELATIVE_OFFSET
            ):
                break
            group.append(candidate)
            log_size += candidate.size
            index_size += candidate.offset_index.size_in_bytes
            time_index_size += candidate.time_index.size_in_bytes
            i += 1
        groups.append(group)
    return groups


__all__ = [
    "CleanReport",
    "Cleaner",
    "OffsetMap",
    "first_uncleanable_offset",
    "group_segments_by_size",
]
