"""Log: one partition's log, coordinating its parts (Kafka's UnifiedLog).

- `LocalLog` (local_log.py): the segment files, log end offset, recovery point, rolls,
  reads of file regions, truncation and removal of segments;
- `validator`: what a produced record set must satisfy before offsets are assigned;
- `ProducerStateManager` and `LeaderEpochFileCache`: idempotence, transactions and epoch
  history;
- here: the log start offset, high watermark and last stable offset, offset assignment,
  transaction markers and the aborted-transaction index (`.txnindex`, txn_index.py), and
  keeping all of the above consistent with each other on every append, truncation and
  deletion.

Thread-safety: every change holds `_lock` (an RLock), so appends (the event loop), the
cleaner, retention, flushes and truncations (worker threads) may call in from any thread.
Reads take the current segment view without locking: it is copy-on-write, so a read never
sees a half-made change; a read racing a change retries on the new view (`read`).
"""

from __future__ import annotations

import logging
import os
import struct
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ..config import LogConfig
from ..records import iter_entries, read_entry
from ..records.batch import (
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_POS,
    NO_PRODUCER_ID,
    CorruptRecordError,
    RecordBatch,
)
from ..records.control import ABORT, COMMIT, build_end_txn_marker
from . import errors
from .checkpoints import fsync_file
from .leader_epochs import LeaderEpochFileCache
from .local_log import FetchDataInfo, LocalLog, OwnedRegion
from .producer_state import ProducerStateEntry, ProducerStateManager
from .segment import EntryHeader, LogSegment
from .txn_index import AbortedTxn
from .validator import (
    check_batch_crc,
    check_single_batch,
    up_convert_legacy,
    validate_record_set,
)

log = logging.getLogger(__name__)

# Background fsync of rolled segments, so that a roll never stalls the event loop.
_flusher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="log-flush")

# baseOffset, batchLength, partitionLeaderEpoch: the bytes of a batch outside its CRC.
_BATCH_PREFIX = struct.Struct(">qii")

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3


class AppendInfo(NamedTuple):
    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time: int  # -1 under CreateTime
    log_start_offset: int
    record_count: int
    valid_bytes: int
    duplicate: bool = False
    # With append_as_leader(defer_flush=True): flush.messages/flush.ms are due, and the
    # caller must run flush(last_offset + 1) (off the event loop) before acknowledging.
    flush_needed: bool = False


# AppendInfo from all nine fields in order, without the generated __new__'s Python frame
# (what NamedTuple._make does): a third of the cost, on the path of every produced batch.
_new_tuple = tuple.__new__


@dataclass(slots=True)
class TimestampOffset:
    timestamp: int
    offset: int
    leader_epoch: int | None = None


@dataclass(slots=True)
class DeletedSegments:
    count: int = 0
    bytes: int = 0


class Log:
    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        *,
        segments: list[LogSegment],
        log_start_offset: int,
        recovery_point: int,
        leader_epoch_cache: LeaderEpochFileCache,
        producer_state: ProducerStateManager,
        clock: Callable[[], float] = time.time,
    ):
        """Built by `recovery.load_log`, which opens and recovers the segments."""
        self.dir = Path(directory)
        self.topic, self.partition = parse_dir_name(self.dir.name)
        self.config = config
        self._lock = threading.RLock()
        # (config, plain appends?, flush.messages/flush.ms ever due on append?)
        self._plain_appends_for: tuple[LogConfig | None, bool, bool] = (None, False, True)
        self._local = LocalLog(self.dir, config, segments, recovery_point)
        self.log_start_offset = log_start_offset
        self.leader_epoch_cache = leader_epoch_cache
        self.producer_state = producer_state
        self._clock = clock
        self.high_watermark = min(self._local.log_end_offset, max(log_start_offset, 0))
        self._unflushed_messages = 0
        self.last_flush_ms = self.now_ms()
        # Counts truncations, so that a flush that overlapped one does not advance the
        # recovery point past data it never fsynced.
        self._truncations = 0
        self.closed = False

    # Segments ------------------------------------------------------------------------
    @property
    def segments(self) -> list[LogSegment]:
        return self._local.segments.all()

    @property
    def active_segment(self) -> LogSegment:
        return self._local.segments.active

    def segment_for(self, offset: int) -> LogSegment | None:
        """The segment with the largest base offset <= offset."""
        return self._local.segments.floor(offset)

    def segments_from(self, offset: int) -> list[LogSegment]:
        return self._local.segments.from_offset(offset)

    def segments_overlapping(self, start: int, end: int) -> list[LogSegment]:
        """Segments holding offsets in [start, end) (Kafka's logSegments(from, to))."""
        return self._local.segments.overlapping(start, end)

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    # Offsets ---------------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        return self._local.log_end_offset

    @property
    def recovery_point(self) -> int:
        return self._local.recovery_point

    @recovery_point.setter
    def recovery_point(self, offset: int) -> None:
        self._local.recovery_point = offset

    @property
    def size(self) -> int:
        return self._local.segments.size

    @property
    def latest_epoch(self) -> int | None:
        epoch = self.leader_epoch_cache.latest_epoch
        return None if epoch < 0 else epoch

    def update_high_watermark(self, offset: int) -> int:
        """Clamp to [log start, LEO]; the replication layer decides when it moves. Under
        the lock: a truncation on another thread must not be overtaken by a clamp to the
        log end it removed."""
        with self._lock:
            end = self._local.log_end_offset
            self.high_watermark = max(self.log_start_offset, min(offset, end))
            self.producer_state.on_high_watermark_updated(self.high_watermark)
            return self.high_watermark

    @property
    def last_stable_offset(self) -> int:
        """The offset below which every transaction is decided and its marker replicated
        (Kafka's lastStableOffset): the HW, or the first unstable offset when below it.
        read_committed fetches and ListOffsets read up to here."""
        high_watermark = self.high_watermark
        first_unstable = self.producer_state.first_unstable_offset
        if first_unstable is not None and first_unstable < high_watermark:
            return max(first_unstable, self.log_start_offset)
        return high_watermark

    def assign_epoch_start(self, leader_epoch: int, sync: bool = True) -> bool:
        """Record that `leader_epoch` starts at the log end (Kafka's
        maybeAssignEpochStartOffset, on becoming leader). It writes (sync: and fsyncs) the
        leader-epoch checkpoint, so the replication layer calls it on a worker thread; under
        the lock, as appends also assign epochs. True if the checkpoint was written (with
        sync=False the caller makes it durable: checkpoints.sync_filesystems)."""
        with self._lock:
            if leader_epoch >= 0 and leader_epoch != self.leader_epoch_cache.latest_epoch:
                return self.leader_epoch_cache.assign(
                    leader_epoch, self._local.log_end_offset, sync
                )
            return False

    # Producer state read by the cleaner ----------------------------------------------
    def open_transaction_starts(self) -> list[int]:
        """First offsets of the transactions still open (bounding the last stable offset)."""
        with self._lock:
            return [
                entry.current_txn_first_offset
                for entry in self.producer_state.active_producers.values()
                if entry.current_txn_first_offset is not None
            ]

    def active_producers(self) -> dict[int, ProducerStateEntry]:
        """producer id -> its state, copied under the lock (appends change it)."""
        with self._lock:
            return dict(self.producer_state.active_producers)

    # Transactions -------------------------------------------------------------------
    def append_end_txn_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        leader_epoch: int,
        now_ms: int | None = None,
        defer_flush: bool = False,
        transaction_version: int = 0,
    ) -> AppendInfo:
        """Write a COMMIT or ABORT marker for the producer's transaction as leader (the
        coordinator's WriteTxnMarkers; Kafka's appendAsLeader with the coordinator origin):
        one control batch with one control record. It ends the producer's open transaction;
        an abort adds its entry to the active segment's `.txnindex`. Raises
        InvalidProducerEpochError for an epoch older than the producer's and
        TransactionCoordinatorFencedError for an older coordinator epoch."""
        now = self.now_ms() if now_ms is None else now_ms
        with self._lock:
            self._check_open()
            self.producer_state.check_end_txn_marker(
                producer_id, producer_epoch, coordinator_epoch, transaction_version
            )
            first_offset = self._local.log_end_offset
            buf = build_end_txn_marker(
                COMMIT if commit else ABORT,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                coordinator_epoch=coordinator_epoch,
                base_offset=first_offset,
                timestamp=now,
                partition_leader_epoch=leader_epoch,
            )
            batch = RecordBatch(buf)
            log_append = self.config.message_timestamp_type == "LogAppendTime"
            if log_append:
                batch.set_log_append_time(now)
            header = EntryHeader(0, len(buf), first_offset, first_offset, now, 2)
            self._append(buf, [header], now, now)
            if leader_epoch >= 0 and leader_epoch != self.leader_epoch_cache.latest_epoch:
                self.leader_epoch_cache.assign(leader_epoch, first_offset)
            aborted = self.producer_state.update(batch, first_offset, first_offset)
            if aborted is not None:
                self.active_segment.update_txn_index(aborted)
            self.producer_state.update_map_end_offset(first_offset + 1)
            flush_due = self._after_append(1, defer_flush)
            return AppendInfo(
                first_offset,
                first_offset,
                now,
                now if log_append else -1,
                self.log_start_offset,
                1,
                len(buf),
                flush_needed=flush_due,
            )

    def collect_aborted_transactions(
        self, start_offset: int, upper_bound_offset: int, from_segment: LogSegment | None = None
    ) -> list[AbortedTxn]:
        """Aborted transactions overlapping [start_offset, upper_bound_offset), from the
        `.txnindex` of the segment holding start_offset (or `from_segment`) and the later
        ones, until an entry shows the LSO had reached the bound (Kafka's
        collectAbortedTransactions)."""
        view = self._local.segments.view
        first = from_segment.base_offset if from_segment is not None else start_offset
        found: list[AbortedTxn] = []
        for segment in view.segments[max(view.floor_index(first), 0) :]:
            result = segment.txn_index.collect_aborted_txns(start_offset, upper_bound_offset)
            found.extend(result.aborted)
            if result.is_complete:
                break
        return found

    def aborted_transactions_for_read(self, data: FetchDataInfo) -> list[AbortedTxn]:
        """The aborted transactions a read_committed fetch that got `data` must be told of
        (Kafka's addAbortedTransactions): from the fetch offset up to an offset above the
        last batch the region holds (the first offset-index entry at or past its end, else
        the next segment's base, else the log end)."""
        region = data.region
        if region is None or data.first_entry_offset is None:
            return []
        view = self._local.segments.view
        index = view.floor_index(data.first_entry_offset)
        if index < 0:
            return []
        segment = view.segments[index]
        try:
            upper = segment.fetch_upper_bound_offset(region.position + region.length)
        except ValueError:
            upper = None  # its index closed under us (retention, the cleaner): bound wider
        if upper is None:
            next_base = view.next_base(index)
            upper = next_base if next_base is not None else self._local.log_end_offset
        return self.collect_aborted_transactions(data.fetch_offset, upper, segment)

    # Appends --------------------------------------------------------------------------
    def append_as_leader(
        self,
        records: bytes | bytearray,
        leader_epoch: int,
        now_ms: int | None = None,
        defer_flush: bool = False,
    ) -> AppendInfo:
        """Validate a produced record set and assign its offsets in place, then write it.

        With defer_flush, a due fsync (flush.messages / flush.ms) is left to the caller
        (`AppendInfo.flush_needed`), so an event loop need not block on it.
        Raises the typed errors of `errors` (each carries its Kafka error code).

        The common request, one v2 batch under CreateTime with no per-record rules (keys,
        timestamp range), takes `_append_single_batch` (no copy); the rest is copied and
        patched in place. Either way the records are checked against their header first
        (`validator`), so nothing is appended unless the whole record set is valid."""
        plain = self._plain_appends_for
        if plain[0] is not self.config:
            plain = self._check_plain_appends()
        if plain[1] and len(records) >= HEADER_SIZE and records[MAGIC_POS] == 2:
            header = HEADER.unpack_from(records, 0)
            if header[1] + LOG_OVERHEAD == len(records):
                return self._append_single_batch(records, header, leader_epoch, now_ms, defer_flush)
        buf = bytearray(records)
        if len(buf) > 16 and buf[16] in (0, 1):
            buf = up_convert_legacy(buf, self.config.max_message_bytes)
        now = self.now_ms() if now_ms is None else now_ms
        batches = validate_record_set(buf, self.config, self.dir.name, now)

        with self._lock:
            self._check_open()
            for batch in batches:
                if not batch.has_producer_id:
                    continue
                duplicate = self.producer_state.check(batch)
                if duplicate is not None:
                    if len(batches) > 1:
                        raise errors.DuplicateSequenceError("duplicate batch inside a request")
                    return self._duplicate_info(duplicate, batch.max_timestamp)
            first_offset = self._local.log_end_offset
            next_offset = first_offset
            headers: list[EntryHeader] = []
            log_append = self.config.message_timestamp_type == "LogAppendTime"
            max_timestamp = -1
            for batch in batches:
                batch.set_base_offset(next_offset)
                batch.set_partition_leader_epoch(leader_epoch)
                if log_append:
                    batch.set_log_append_time(now)
                headers.append(
                    EntryHeader(
                        batch.pos,
                        batch.size,
                        next_offset,
                        batch.last_offset,
                        batch.max_timestamp,
                        2,
                    )
                )
                max_timestamp = max(max_timestamp, batch.max_timestamp)
                next_offset = batch.last_offset + 1
            self._append(buf, headers, max_timestamp, now)
            if leader_epoch >= 0 and leader_epoch != self.leader_epoch_cache.latest_epoch:
                self.leader_epoch_cache.assign(leader_epoch, first_offset)
            count = 0
            for batch in batches:
                count += batch.record_count
                if batch.has_producer_id:
                    self.producer_state.update(batch, batch.base_offset, batch.last_offset)
            self.producer_state.update_map_end_offset(next_offset)
            flush_due = self._after_append(count, defer_flush)
            return AppendInfo(
                first_offset,
                next_offset - 1,
                max_timestamp,
                now if log_append else -1,
                self.log_start_offset,
                count,
                len(buf),
                flush_needed=flush_due,
            )

    def _check_plain_appends(self) -> tuple[LogConfig, bool, bool]:
        """Whether this config makes appends plain, cached per config object: CreateTime
        and no per-record rules, so a produced batch is written as it came but for the
        prefix outside its CRC. Also whether an append can ever make a flush due (Kafka's
        defaults never flush on append, so the hot path then only counts records)."""
        config = self.config
        plain = (
            config.message_timestamp_type != "LogAppendTime"
            and not config.compact
            and config.message_timestamp_difference_max_ms >= (1 << 62)
        )
        flushes = config.flush_messages < (1 << 62) or config.flush_ms < (1 << 62)
        self._plain_appends_for = (config, plain, flushes)
        return self._plain_appends_for

    def _append_single_batch(
        self,
        records: bytes | bytearray | memoryview,
        header: tuple,
        leader_epoch: int,
        now_ms: int | None,
        defer_flush: bool,
    ) -> AppendInfo:
        """append_as_leader's hot path: validate from the header tuple, then write the
        rebuilt prefix (assigned baseOffset, leader epoch) and the producer's bytes after it
        with one vectored write. The same checks and effects as the general path.

        A large batch's CRC may be left for the write (`validator.check_single_batch`):
        whatever would answer before that write (a duplicate, a sequence error) or change
        the log (a roll) checks the CRC first."""
        now = self.now_ms() if now_ms is None else now_ms
        crc_pending = check_single_batch(records, header, self.config, self.dir.name, now)
        size = len(records)
        max_timestamp = header[8]
        count = header[12]
        with self._lock:
            # Read under the lock: a replica moved to another log dir swaps it (AlterReplicaLogDirs).
            local = self._local
            self._check_open()
            batch = None
            if header[9] != NO_PRODUCER_ID:
                batch = RecordBatch(records)
                try:
                    duplicate = self.producer_state.check(batch)
                except errors.LogError:
                    if crc_pending:
                        check_batch_crc(records, header)
                    raise
                if duplicate is not None:
                    if crc_pending:
                        check_batch_crc(records, header)
                    return self._duplicate_info(duplicate, max_timestamp)
            first_offset = local.log_end_offset
            last_offset = first_offset + header[6]
            segment = local.segments.active
            if segment.should_roll(size, max_timestamp, last_offset, now):
                if crc_pending:
                    check_batch_crc(records, header)
                    crc_pending = False
                segment = self.roll(first_offset)
            prefix = _BATCH_PREFIX.pack(first_offset, header[1], leader_epoch)
            if crc_pending:
                try:
                    segment.append_batch_checking_crc(
                        prefix, memoryview(records), header[4], last_offset, max_timestamp
                    )
                except CorruptRecordError as exc:
                    raise errors.CorruptMessageError(str(exc)) from exc
            else:
                rest = memoryview(records)[_BATCH_PREFIX.size :]
                segment.append_batch(prefix, rest, size, last_offset, max_timestamp)
            local.log_end_offset = last_offset + 1
            if leader_epoch >= 0 and leader_epoch != self.leader_epoch_cache.latest_epoch:
                self.leader_epoch_cache.assign(leader_epoch, first_offset)
            if batch is not None:
                self.producer_state.update(batch, first_offset, last_offset)
            self.producer_state.update_map_end_offset(last_offset + 1)
            if self._plain_appends_for[2]:
                flush_due = self._after_append(count, defer_flush)
            else:
                self._unflushed_messages += count
                flush_due = False
            return _new_tuple(
                AppendInfo,
                (
                    first_offset,
                    last_offset,
                    max_timestamp,
                    -1,  # log_append_time
                    self.log_start_offset,
                    count,
                    size,
                    False,  # duplicate
                    flush_due,
                ),
            )

    def _duplicate_info(self, duplicate, max_timestamp: int) -> AppendInfo:
        """A retried batch already in the log: its original offsets, nothing written."""
        return AppendInfo(
            duplicate.first_offset,
            duplicate.last_offset,
            max_timestamp,
            -1,
            self.log_start_offset,
            0,
            0,
            duplicate=True,
        )

    def append_as_follower(self, records: bytes | bytearray) -> AppendInfo | None:
        """Append batches whose offsets the leader assigned (replication)."""
        buf = bytearray(records)
        batches = []
        try:
            for batch in _iter_complete_batches(buf):
                batch.validate()
                batches.append(batch)
        except CorruptRecordError as exc:
            raise errors.CorruptMessageError(str(exc)) from exc
        if not batches:
            return None
        with self._lock:
            self._check_open()
            end_offset = self._local.log_end_offset
            if batches[0].base_offset < end_offset:
                raise errors.OffsetOutOfRangeError(
                    f"follower append at {batches[0].base_offset} below LEO {end_offset}"
                )
            headers = [
                EntryHeader(b.pos, b.size, b.base_offset, b.last_offset, b.max_timestamp, 2)
                for b in batches
            ]
            end = batches[-1].pos + batches[-1].size
            self._append(memoryview(buf)[:end], headers, max(h.max_timestamp for h in headers))
            segment = self.active_segment  # all of them went there (a roll comes first)
            for batch in batches:
                if batch.partition_leader_epoch >= 0:
                    self.leader_epoch_cache.assign(batch.partition_leader_epoch, batch.base_offset)
                if batch.has_producer_id:
                    aborted = self.producer_state.update(
                        batch, batch.base_offset, batch.last_offset
                    )
                    if aborted is not None:
                        segment.update_txn_index(aborted)
            self.producer_state.update_map_end_offset(batches[-1].last_offset + 1)
            count = sum(b.record_count for b in batches)
            self._after_append(count)
            return AppendInfo(
                batches[0].base_offset,
                batches[-1].last_offset,
                max(h.max_timestamp for h in headers),
                -1,
                self.log_start_offset,
                count,
                end,
            )

    def _append(
        self,
        data: bytes | bytearray | memoryview,
        headers: list[EntryHeader],
        max_timestamp: int,
        now: int | None = None,
    ) -> None:
        now = self.now_ms() if now is None else now
        if self.active_segment.should_roll(len(data), max_timestamp, headers[-1].last_offset, now):
            self.roll(self._local.log_end_offset)
        self._local.append(data, headers)

    def _after_append(self, count: int, defer_flush: bool = False) -> bool:
        """Count the records; flush when flush.messages / flush.ms say so (or, deferred,
        return True for the caller to do it)."""
        self._unflushed_messages += count
        due = self._unflushed_messages >= self.config.flush_messages or (
            self.config.flush_ms < (1 << 62)
            and self.now_ms() - self.last_flush_ms >= self.config.flush_ms
        )
        if due and not defer_flush:
            self.flush()
            return False
        return due

    def _check_open(self) -> None:
        if self.closed:
            raise errors.KafkaStorageError(f"log {self.dir.name} is closed")

    # Rolling and flushing ------------------------------------------------------------
    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at the log end offset (or `expected_next_offset`,
        when above it), with a producer-state snapshot at its base; the sealed segments
        are fsynced in the background."""
        with self._lock:
            local = self._local
            new_base = max(expected_next_offset or 0, local.log_end_offset)
            active = local.segments.active
            if active.base_offset == new_base and active.size == 0:
                return active  # already rolled to this offset
            segment = local.roll(new_base, self.now_ms())
            # Loading restores producer state from the snapshot at a segment's base. Its
            # fsync waits for the background flush, as Kafka's roll does: a roll may run on
            # the event loop, and a snapshot lost in a crash is rebuilt from the log.
            snapshot = self.producer_state.take_snapshot(new_base, sync=False)
            _flusher.submit(self._flush_after_roll, snapshot, new_base)
            return segment

    def _flush_after_roll(self, snapshot: Path, offset: int) -> None:
        """The roll's snapshot, then the sealed segments; the recovery point moves only
        once both are durable."""
        try:
            fsync_file(snapshot)
        except FileNotFoundError:
            pass  # deleted meanwhile (truncation, retention): nothing left to make durable
        except OSError as exc:
            log.warning("%s: fsync of %s failed: %s", self.dir.name, snapshot.name, exc)
            return
        try:
            self.flush(offset)
        except (OSError, ValueError) as exc:  # closed or deleted meanwhile
            log.debug("background flush of %s stopped: %s", self.dir.name, exc)

    def flush(self, offset: int | None = None) -> None:
        """fsync segments holding offsets below `offset` (default: all) and advance the
        recovery point: recovery after a crash starts there.

        The fsyncs run without `_lock`, so appends (on the event loop) never wait for a
        disk flush running on another thread. A truncation meanwhile (a follower, on a
        worker thread) may have replaced what they fsynced: the recovery point then stays
        where the truncation put it. An offset past the log end (a roll's background flush
        that a truncation overtook) flushes only what exists."""
        local = self._local
        with self._lock:
            end = local.log_end_offset
            offset = end if offset is None else min(offset, end)
            if offset <= local.recovery_point:
                return
            segments = local.segments_to_flush(offset)
            flushed_messages = self._unflushed_messages if offset >= local.log_end_offset else 0
            truncations = self._truncations
        local.flush_segments(segments)
        with self._lock:
            if truncations != self._truncations:
                return
            local.recovery_point = max(local.recovery_point, offset)
            if flushed_messages or offset >= local.log_end_offset:
                self._unflushed_messages = max(0, self._unflushed_messages - flushed_messages)
                self.last_flush_ms = self.now_ms()

    # Reads ----------------------------------------------------------------------------
    def read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_message: bool = True,
        owned: bool = False,
    ) -> FetchDataInfo:
        """Whole batches from the one holding start_offset, up to max_bytes (at least one
        batch when min_one_message), and nothing at or above max_offset (e.g. the HW).

        `owned`: the region is an OwnedRegion with its own descriptor, safe to send later
        even if the segment is deleted meanwhile; the caller must release() it."""
        while True:
            view_before = self._local.segments.view
            try:
                return self._read(start_offset, max_bytes, max_offset, min_one_message, owned)
            except ValueError:
                # A segment file closed under us (retention, the cleaner): if the segment
                # list changed, read again from the new one (which may now say the
                # offset is out of range); otherwise it is a real error.
                if self._local.segments.view is view_before:
                    raise

    def _read(
        self,
        start_offset: int,
        max_bytes: int,
        max_offset: int | None,
        min_one_message: bool,
        owned: bool,
    ) -> FetchDataInfo:
        end_offset = self._local.log_end_offset
        if start_offset == end_offset:
            return FetchDataInfo(start_offset, None)
        if start_offset > end_offset or start_offset < self.log_start_offset:
            raise errors.OffsetOutOfRangeError(
                f"offset {start_offset} is outside [{self.log_start_offset}, {end_offset}] "
                f"of {self.dir.name}"
            )
        if max_offset is not None and start_offset >= max_offset:
            return FetchDataInfo(start_offset, None)
        return self._local.read(start_offset, max_bytes, max_offset, min_one_message, owned)

    def read_batches(self, start_offset: int = 0, max_offset: int | None = None):
        """Decoded entries from start_offset (loading __consumer_offsets, recovery, tools).
        Each chunk is read through its own descriptor: a truncation or retention on
        another thread may close the segment's file between the lookup and the read."""
        offset = max(start_offset, self.log_start_offset)
        while offset < (self._local.log_end_offset if max_offset is None else max_offset):
            region = self.read(offset, 1 << 20, max_offset, True, owned=True).region
            if not isinstance(region, OwnedRegion):
                return
            try:
                data = region.read()
            finally:
                region.release()
            progressed = False
            for entry in iter_entries(data):
                if entry.last_offset >= offset:
                    yield entry
                    offset = entry.last_offset + 1
                    progressed = True
            if not progressed:
                return

    def fetch_offset_by_timestamp(self, target: int) -> TimestampOffset | None:
        """ListOffsets: earliest (-2), latest (-1), max timestamp (-3), or the first
        record whose timestamp is >= target."""
        if target == EARLIEST_TIMESTAMP:
            epoch = self.leader_epoch_cache.epoch_for_offset(self.log_start_offset)
            return TimestampOffset(-1, self.log_start_offset, epoch)
        if target == LATEST_TIMESTAMP:
            return TimestampOffset(-1, self._local.log_end_offset, self.latest_epoch)
        while True:
            view_before = self._local.segments.view
            try:
                if target == MAX_TIMESTAMP:
                    return self._max_timestamp_offset()
                return self._first_offset_at_or_after(target)
            except ValueError:
                # A segment closed under the lookup (as in `read`): look again in the new
                # segment list; with the list unchanged it is a real error.
                if self._local.segments.view is view_before:
                    raise

    def _first_offset_at_or_after(self, target: int) -> TimestampOffset | None:
        for segment in self.segments:
            if segment.largest_timestamp < target:
                continue
            found = segment.find_offset_by_timestamp(target, self.log_start_offset)
            if found is not None:
                ts, offset = found
                return TimestampOffset(ts, offset, self.leader_epoch_cache.epoch_for_offset(offset))
        return None

    def _max_timestamp_offset(self) -> TimestampOffset:
        best = TimestampOffset(-1, -1)
        for segment in self.segments:
            if segment.size and segment.max_timestamp_so_far > best.timestamp:
                best = TimestampOffset(
                    segment.max_timestamp_so_far, segment.offset_of_max_timestamp_so_far
                )
        if best.offset < 0:
            return best
        # The segment tracks the batch's last offset; Kafka reports the record's own.
        holding = self.segment_for(best.offset)
        header = holding.translate_offset(best.offset) if holding is not None else None
        if holding is not None and header is not None:
            for record in read_entry(holding.read_entry_bytes(header)).records():
                if record.timestamp == best.timestamp:
                    best = TimestampOffset(record.timestamp, record.offset)
                    break
        best.leader_epoch = self.leader_epoch_cache.epoch_for_offset(best.offset)
        return best

    # Log start offset, truncation, deletion -------------------------------------------
    def maybe_increment_log_start_offset(self, new_start: int) -> int:
        """DeleteRecords: move the log start offset up (never past the HW)."""
        with self._lock:
            if new_start > self.high_watermark:
                raise errors.OffsetOutOfRangeError(
                    f"cannot delete records up to {new_start}: high watermark is "
                    f"{self.high_watermark}"
                )
            if new_start > self.log_start_offset:
                self.log_start_offset = new_start
                self.leader_epoch_cache.truncate_from_start(new_start)
                self.producer_state.delete_snapshots_before(self.active_segment.base_offset)
            return self.log_start_offset

    def truncate_to(self, offset: int) -> bool:
        """Remove everything at or above `offset` (a follower matching its leader).

        Deletes files and fsyncs the leader-epoch checkpoint: call it off the event loop;
        it is safe from any thread (it holds the log's lock)."""
        with self._lock:
            local = self._local
            if offset >= local.log_end_offset:
                return False
            if offset < self.log_start_offset or offset < local.segments.first.base_offset:
                self.truncate_fully_and_start_at(offset)
                return True
            self._truncations += 1
            local.truncate_to(offset)
            self.high_watermark = min(self.high_watermark, offset)
            self.leader_epoch_cache.truncate_from_end(offset)
            self.producer_state.truncate_and_reload(self.log_start_offset, offset)
            self._rebuild_producer_state(offset)
            self.producer_state.on_high_watermark_updated(self.high_watermark)
            return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete the whole log and start it empty at `offset` (a follower far behind its
        leader's log start). Deletes files and fsyncs checkpoints: call it off the event
        loop; it is safe from any thread (it holds the log's lock)."""
        with self._lock:
            self._truncations += 1
            self._local.truncate_fully_and_start_at(offset, self.now_ms())
            self.log_start_offset = offset
            self.high_watermark = offset
            self.leader_epoch_cache.clear_and_flush()
            self.producer_state.truncate_and_reload(offset, offset)

    def _rebuild_producer_state(self, end_offset: int) -> None:
        # The markers replayed here are below the truncation point: their `.txnindex`
        # entries are kept (segment truncation drops only those at or above it).
        start = self.producer_state.map_end_offset
        for entry in self.read_batches(start, end_offset):
            if isinstance(entry, RecordBatch) and entry.has_producer_id:
                self.producer_state.update(entry, entry.base_offset, entry.last_offset)
        self.producer_state.update_map_end_offset(end_offset)

    def delete_segments(self, doomed: list[LogSegment], reason: str) -> DeletedSegments:
        """Remove whole old segments: rename to `.deleted` now, delete the files after
        file.delete.delay.ms (readers may still hold them). Rolls first when every
        segment goes, so the log always has an active segment."""
        report = DeletedSegments()
        if not doomed:
            return report
        with self._lock:
            if self.closed:
                return report  # closed or deleted meanwhile: its files are not ours any more
            local = self._local
            current = local.segments.all()
            # Chosen outside the lock: a concurrent retention run or cleaning may have
            # removed some already. Only segments still in the log go.
            present = {id(s) for s in current}
            doomed = [s for s in doomed if id(s) in present]
            if not doomed:
                return report
            if len(doomed) >= len(current) and doomed[-1] is current[-1]:
                self.roll(local.log_end_offset)
                current = local.segments.all()
            doomed_ids = {id(s) for s in doomed}
            first_base = next(s.base_offset for s in current if id(s) not in doomed_ids)
            self.log_start_offset = max(self.log_start_offset, first_base)
            self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
            self.producer_state.delete_snapshots_before(first_base)
            for segment in doomed:
                report.count += 1
                report.bytes += segment.size
            local.remove_segments(doomed, self.now_ms() + self.config.file_delete_delay_ms)
            log.info(
                "%s: deleted %d segments (%d bytes) for %s; log start offset %d",
                self.dir.name,
                report.count,
                report.bytes,
                reason,
                self.log_start_offset,
            )
        self.remove_deleted_segments()
        return report

    def remove_deleted_segments(self, now_ms: int | None = None, force: bool = False) -> int:
        """Delete the `.deleted` files whose delay has passed; returns how many went."""
        now = self.now_ms() if now_ms is None else now_ms
        return self._local.remove_deleted_segments(now, force)

    def replace_segments(self, new: list[LogSegment], old: list[LogSegment]) -> bool:
        """The cleaner's swap (Kafka's replaceSegments): `new`, complete on disk with the
        `.swap` suffix, takes the place of `old` in one change readers see at once; `old`
        becomes `.deleted` and `new` gets its final names. False, and nothing changed,
        when the log is closed or any of `old` has left it (retention, truncation)."""
        with self._lock:
            if self.closed or not self._local.segments.contains_all(old):
                return False
            due = self.now_ms() + self.config.file_delete_delay_ms
            self._local.replace_segments(new, old, due)
            return True

    def update_config(self, config: LogConfig) -> None:
        self.config = config
        self._local.update_config(config)

    def close(self) -> None:
        """Clean close: a final snapshot, trimmed indexes, flushed files."""
        with self._lock:
            if self.closed:
                return
            self.flush()
            end = self._local.log_end_offset
            # Kafka's takeSnapshot: none for an empty log, nor again at an offset that has
            # one (an idle log closed twice): two fsyncs fewer per log at shutdown.
            if end > 0 and not self.producer_state.snapshot_path(end).exists():
                self.producer_state.take_snapshot(end)
            self.leader_epoch_cache.flush_if_changed()
            self._local.close()
            self.closed = True

    def delete(self) -> None:
        """Release a deleted partition's files, without the flush, snapshot and checkpoint
        of `close`: the log manager renames the directory and removes it."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            self._local.release()

    def rename_dir(self, directory: Path) -> None:
        """Rename the log's directory without closing it (Kafka's UnifiedLog.renameDir):
        a future replica taking its partition's name, or an old replica its `-delete` name
        (AlterReplicaLogDirs). The open files stay open, only the paths change, so the
        swap costs a rename, not a reopen of every segment. The directory keeps its
        partition: `<topic>-<partition>`, `.<uuid>-future` or `.<uuid>-delete`."""
        directory = Path(directory)
        with self._lock:
            self._check_open()
            # `.deleted` segments waiting for file.delete.delay.ms would be looked for
            # under the old name: they go now.
            self._local.remove_deleted_segments(0, True)
            os.replace(self.dir, directory)
            self.dir = directory
            self._local.update_parent_dir(directory)
            self.producer_state.partition_dir = directory
            checkpoint = self.leader_epoch_cache.checkpoint
            if checkpoint is not None:
                checkpoint.path = directory / checkpoint.path.name

    def exchange_contents(self, other: Log) -> None:
        """Swap everything but the lock with `other`, under both logs' locks: a future
        replica (AlterReplicaLogDirs) takes the place of this log in the one object that
        partitions, fetchers and the cleaner hold, and `other` keeps the old files for the
        log manager to release and delete."""
        with self._lock, other._lock:
            mine = {k: v for k, v in vars(self).items() if k != "_lock"}
            theirs = {k: v for k, v in vars(other).items() if k != "_lock"}
            vars(self).update(theirs)
            vars(other).update(mine)

    @property
    def lock(self) -> threading.RLock:
        """The log's lock, for a caller that must see no change between two steps (the log
        manager's check that a future replica caught up, then the swap)."""
        return self._lock

    def __repr__(self) -> str:
        return (
            f"Log({self.dir.name}, start={self.log_start_offset}, "
            f"end={self._local.log_end_offset}, segments={len(self._local.segments)})"
        )


def _iter_complete_batches(buf: bytearray):
    pos = 0
    while len(buf) - pos >= HEADER_SIZE:
        batch = RecordBatch(buf, pos)
        if pos + batch.size > len(buf):
            return  # a fetch may end with a partial batch
        yield batch
        pos += batch.size


FUTURE_DIR_SUFFIX = "-future"


def parse_dir_name(name: str) -> tuple[str, int]:
    """`<topic>-<partition>`; topics may contain dashes, the partition is after the last.
    A future replica's `<topic>-<partition>.<uuid>-future` (AlterReplicaLogDirs) names its
    partition the same way."""
    if name.endswith(FUTURE_DIR_SUFFIX):
        stem, dot, unique = name[: -len(FUTURE_DIR_SUFFIX)].rpartition(".")
        if dot and len(unique) == 32 and all(c in "0123456789abcdef" for c in unique):
            name = stem
    topic, sep, partition = name.rpartition("-")
    if not sep or not topic or not partition.isdigit():
        raise ValueError(f"{name!r} is not a <topic>-<partition> directory")
    return topic, int(partition)


def dir_name(topic: str, partition: int) -> str:
    return f"{topic}-{partition}"
