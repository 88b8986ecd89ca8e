"""Idempotent-producer state of one partition, and its `.snapshot` files (Kafka's format).

For each producer id the partition keeps the epoch and the metadata of the last 5 batches it
appended. The leader uses it to
- acknowledge a retried batch (same epoch, same first and last sequence as one of those 5)
  with its original offsets, without writing it again;
- reject a stale epoch (INVALID_PRODUCER_EPOCH), a sequence gap (OUT_OF_ORDER_SEQUENCE_NUMBER)
  and a non-zero first sequence from a producer it has no state for (UNKNOWN_PRODUCER_ID, as
  Kafka 2.0-2.4 answer; clients reset their sequence on it).

Sequences are per record, non-negative int32, and wrap from 2^31-1 to 0.

State is rebuilt at load from the newest snapshot at or below the log end offset plus a replay
of the log after it (`update` never validates). A snapshot is `<20-digit offset>.snapshot`:
    version int16 (1) | crc uint32 (CRC-32C of everything after it) | count int32 |
    count x (producerId int64, epoch int16, lastSequence int32, lastOffset int64,
             offsetDelta int32, timestamp int64, coordinatorEpoch int32,
             currentTxnFirstOffset int64)
It keeps only each producer's last batch, as Kafka's does.

Transactions (KIP-98): a producer's first transactional batch opens its transaction
(`current_txn_first_offset`), its COMMIT or ABORT marker (a control batch) ends it. The
manager keeps, as Kafka's does, the open transactions by first offset and the completed
ones whose marker is not yet below the high watermark ("unreplicated"): the first offset of
the oldest of either is the first unstable offset, which bounds the last stable offset.
`update` of an abort marker returns the `AbortedTxn` entry the segment's `.txnindex` takes.
Snapshots keep each producer's open transaction (`currentTxnFirstOffset`), so loading one
restores the open transactions.
"""

from __future__ import annotations

import logging
import os
import re
import struct
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Protocol

import crc32c

from .checkpoints import write_atomically
from .errors import (
    InvalidProducerEpochError,
    LogError,
    OutOfOrderSequenceError,
    UnknownProducerIdError,
)
from .txn_index import AbortedTxn

log = logging.getLogger(__name__)

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
NUM_BATCHES_TO_RETAIN = 5
MAX_SEQUENCE = 0x7FFFFFFF
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000  # producer.id.expiration.ms

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_SNAPSHOT_HEADER = struct.Struct(">hIi")  # version, crc, entry count
_SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")
_CRC_START = 6  # the CRC covers the entry count and the entries
_SNAPSHOT_NAME = re.compile(r"^(\d+)\.snapshot$")
_MARKER_VALUE = struct.Struct(">hi")  # end-transaction marker: version, coordinatorEpoch
_MARKER_KEY = struct.Struct(">hh")  # control record key: version, type (0 abort, 1 commit)
ABORT_MARKER = 0


class InvalidTxnStateError(LogError):
    """A non-transactional batch from a producer with an open transaction (Kafka's
    InvalidTxnStateException from ProducerAppendInfo)."""

    error_code = 48  # INVALID_TXN_STATE


class TransactionCoordinatorFencedError(LogError):
    """A marker from a coordinator epoch older than the partition has seen (a zombie
    coordinator)."""

    error_code = 52  # TRANSACTION_COORDINATOR_FENCED


class CorruptSnapshotError(ValueError):
    """A snapshot file with a bad size, version or CRC; load skips and deletes it."""


class ProducerBatch(Protocol):
    """What the manager reads from a batch (brokerd.records.batch.RecordBatch fits)."""

    @property
    def producer_id(self) -> int: ...
    @property
    def producer_epoch(self) -> int: ...
    @property
    def base_sequence(self) -> int: ...
    @property
    def last_sequence(self) -> int: ...
    @property
    def max_timestamp(self) -> int: ...
    @property
    def is_transactional(self) -> bool: ...
    @property
    def is_control(self) -> bool: ...


def increment_sequence(sequence: int, increment: int) -> int:
    return (sequence + increment) & MAX_SEQUENCE


def decrement_sequence(sequence: int, decrement: int) -> int:
    return (sequence - decrement) & MAX_SEQUENCE


def in_sequence(last_sequence: int, next_sequence: int) -> bool:
    return next_sequence == last_sequence + 1 or (
        next_sequence == 0 and last_sequence == MAX_SEQUENCE
    )


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int

    @property
    def offset_delta(self) -> int:
        return self.last_offset - self.first_offset


@dataclass(slots=True)
class ProducerStateEntry:
    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=deque)
    coordinator_epoch: int = -1
    current_txn_first_offset: int | None = None
    last_timestamp: int = NO_TIMESTAMP

    @property
    def is_empty(self) -> bool:
        return not self.batches

    @property
    def first_seq(self) -> int:
        return self.batches[0].first_seq if self.batches else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def maybe_update_epoch(self, epoch: int) -> None:
        # Batches of an older epoch can never be retried under the new one.
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch

    def add_batch(self, epoch: int, batch: BatchMetadata) -> None:
        self.maybe_update_epoch(epoch)
        while len(self.batches) >= NUM_BATCHES_TO_RETAIN:
            self.batches.popleft()
        self.batches.append(batch)
        self.last_timestamp = batch.timestamp


class ProducerStateManager:
    def __init__(
        self,
        partition_dir: Path | str,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    ):
        self.partition_dir = Path(partition_dir)  # reassign when the directory is renamed
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._producers: dict[int, ProducerStateEntry] = {}
        self._map_end_offset = 0
        # Open transactions: first offset -> producer id (Kafka's ongoingTxns).
        # Completed transactions whose marker is not below the high watermark yet:
        # first offset -> marker offset (Kafka's unreplicatedTxns).
        # Both are replaced, never changed in place, so the last stable offset can be
        # read from any thread without the log's lock.
        self._ongoing: dict[int, int] = {}
        self._unreplicated: dict[int, int] = {}

    # State ---------------------------------------------------------------------------
    @property
    def active_producers(self) -> Mapping[int, ProducerStateEntry]:
        return MappingProxyType(self._producers)

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    @property
    def map_end_offset(self) -> int:
        """The offset up to which (exclusive) the log has been applied to this state."""
        return self._map_end_offset

    def update_map_end_offset(self, offset: int) -> None:
        self._map_end_offset = offset

    # Leader validation -----------------------------------------------------------------
    def check(self, batch: ProducerBatch) -> BatchMetadata | None:
        """Validate a client's batch before it is appended; nothing changes here.

        Returns the metadata of the batch it duplicates (answer with those offsets and do not
        append), else None. Raises the error the produce response must carry.
        """
        producer_id = batch.producer_id
        if producer_id == NO_PRODUCER_ID or batch.is_control:
            return None
        entry = self._producers.get(producer_id)
        epoch = batch.producer_epoch
        first_seq = batch.base_sequence
        if entry is not None:
            duplicate = entry.find_duplicate(epoch, first_seq, batch.last_sequence)
            if duplicate is not None:
                return duplicate
        current_epoch = entry.producer_epoch if entry is not None else NO_PRODUCER_EPOCH
        if epoch < current_epoch:
            raise InvalidProducerEpochError(
                f"producer {producer_id} epoch {epoch} is older than the current epoch {current_epoch}"
            )
        if (
            entry is not None
            and entry.current_txn_first_offset is not None
            and not batch.is_transactional
        ):
            raise InvalidTxnStateError(
                f"expected a transactional write from producer {producer_id}: its transaction "
                f"open since offset {entry.current_txn_first_offset} has not ended"
            )
        if epoch != current_epoch:
            if first_seq != 0:
                if current_epoch != NO_PRODUCER_EPOCH:
                    raise OutOfOrderSequenceError(
                        f"producer {producer_id} started epoch {epoch} at sequence {first_seq}, "
                        f"expected 0 (current epoch {current_epoch})"
                    )
                raise UnknownProducerIdError(
                    f"no state for producer {producer_id} (its data may have been deleted by "
                    f"retention or it expired); first sequence {first_seq} is not 0"
                )
            return None
        if entry is None or current_epoch == NO_PRODUCER_EPOCH:
            return None  # nothing to compare with, as Kafka accepts
        last_seq = entry.last_seq
        if not in_sequence(last_seq, first_seq):
            raise OutOfOrderSequenceError(
                f"producer {producer_id} epoch {epoch}: sequence {first_seq} does not follow "
                f"the last appended sequence {last_seq}"
            )
        return None

    def check_end_txn_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        transaction_version: int = 0,
    ) -> None:
        """Validate a marker the coordinator asks for (WriteTxnMarkers) before it is
        appended: Kafka's appendEndTxnMarker checks for the coordinator origin. Under
        transaction version 2 (KIP-890) the coordinator bumps the epoch for every marker, so
        the marker's epoch must be above the producer's, but for a retry of a marker already
        written (same epoch, no transaction open)."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return
        current = entry.producer_epoch
        if transaction_version >= 2:
            retry = producer_epoch == current and entry.current_txn_first_offset is None
            invalid = producer_epoch <= current and not retry
        else:
            invalid = producer_epoch < current
        if invalid:
            relation = "<=" if transaction_version >= 2 else "<"
            raise InvalidProducerEpochError(
                f"marker for producer {producer_id} has epoch {producer_epoch}, which is "
                f"{relation} the last seen epoch {current} (TV{transaction_version})"
            )
        if entry.coordinator_epoch > coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"invalid coordinator epoch for producer {producer_id}: {coordinator_epoch} "
                f"(zombie), {entry.coordinator_epoch} (current)"
            )

    # Transactions ----------------------------------------------------------------------
    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest transaction that is open or whose marker is not
        yet below the high watermark (Kafka's firstUnstableOffset); None when none is."""
        ongoing, unreplicated_txns = self._ongoing, self._unreplicated
        first = min(ongoing, default=None)
        unreplicated = min(unreplicated_txns, default=None)
        if unreplicated is not None and (first is None or unreplicated < first):
            return unreplicated
        return first

    @property
    def ongoing_transactions(self) -> dict[int, int]:
        """First offset -> producer id of every open transaction (a copy)."""
        return dict(self._ongoing)

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Completed transactions whose marker is now below the HW stop bounding the LSO."""
        if self._unreplicated:
            self._unreplicated = {
                first: last for first, last in self._unreplicated.items() if last >= high_watermark
            }

    def _last_stable_offset_after(self, producer_id: int, marker_offset: int) -> int:
        """Kafka's lastStableOffset(completedTxn): the first offset of the oldest other open
        transaction, else the offset after the marker."""
        others = [first for first, pid in self._ongoing.items() if pid != producer_id]
        return min(others) if others else marker_offset + 1

    # Updates -------------------------------------------------------------------------
    def update(
        self, batch: ProducerBatch, first_offset: int, last_offset: int
    ) -> AbortedTxn | None:
        """Apply an appended (or replayed) batch at its assigned offsets; never validates.

        Also moves the map end offset past the batch, so calling this for every batch of the
        log (producer or not) keeps `map_end_offset` right. An ABORT marker that ends an open
        transaction returns its aborted-transaction index entry (the caller's segment
        appends it when the marker is new to the log).
        """
        self._map_end_offset = max(self._map_end_offset, last_offset + 1)
        producer_id = batch.producer_id
        if producer_id == NO_PRODUCER_ID:
            return None
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = self._producers[producer_id] = ProducerStateEntry(producer_id)
        if batch.is_control:
            return self._apply_end_txn_marker(entry, batch, first_offset)
        entry.add_batch(
            batch.producer_epoch,
            BatchMetadata(
                batch.base_sequence,
                batch.last_sequence,
                first_offset,
                last_offset,
                batch.max_timestamp,
            ),
        )
        if batch.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = first_offset
            self._ongoing = {**self._ongoing, first_offset: producer_id}
        return None

    def _apply_end_txn_marker(
        self, entry: ProducerStateEntry, batch: ProducerBatch, offset: int
    ) -> AbortedTxn | None:
        records = batch.records() if hasattr(batch, "records") else []
        if not records:
            return None  # an empty control batch: the cleaner removed its whole transaction
        record = records[0]
        aborted = None
        first = entry.current_txn_first_offset
        if first is not None:
            key = record.key
            is_abort = (
                key is not None
                and len(key) >= _MARKER_KEY.size
                and _MARKER_KEY.unpack_from(key)[1] == ABORT_MARKER
            )
            if is_abort:
                aborted = AbortedTxn(
                    entry.producer_id,
                    first,
                    offset,
                    self._last_stable_offset_after(entry.producer_id, offset),
                )
            self._ongoing = {k: v for k, v in self._ongoing.items() if k != first}
            self._unreplicated = {**self._unreplicated, first: offset}
        entry.maybe_update_epoch(batch.producer_epoch)
        entry.current_txn_first_offset = None
        entry.last_timestamp = batch.max_timestamp
        if record.value is not None and len(record.value) >= _MARKER_VALUE.size:
            _, entry.coordinator_epoch = _MARKER_VALUE.unpack_from(record.value)
        return aborted

    def remove_expired(self, now_ms: int | None = None) -> list[int]:
        """Forget producers idle longer than producer.id.expiration.ms; returns their ids."""
        now_ms = _now_ms() if now_ms is None else now_ms
        expired = [pid for pid, entry in self._producers.items() if self._is_expired(entry, now_ms)]
        for pid in expired:
            del self._producers[pid]
        return expired

    def _is_expired(self, entry: ProducerStateEntry, now_ms: int) -> bool:
        return (
            entry.current_txn_first_offset is None
            and now_ms - entry.last_timestamp >= self.producer_id_expiration_ms
        )

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop all state and snapshots (the log was emptied or replaced)."""
        self._producers.clear()
        self._ongoing = {}
        self._unreplicated = {}
        for snapshot_offset in self.snapshot_offsets():
            self._delete_snapshot(snapshot_offset)
        self._map_end_offset = offset

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        self._map_end_offset = max(self._map_end_offset, log_start_offset)

    # Snapshots -----------------------------------------------------------------------
    def snapshot_path(self, offset: int) -> Path:
        return self.partition_dir / f"{offset:020d}{SNAPSHOT_SUFFIX}"

    def snapshot_offsets(self) -> list[int]:
        try:
            # scandir's entries know their type from the listing: no stat per file.
            with os.scandir(self.partition_dir) as entries:
                names = [entry.name for entry in entries if entry.is_file()]
        except FileNotFoundError:
            return []
        return sorted(int(m.group(1)) for name in names if (m := _SNAPSHOT_NAME.match(name)))

    @property
    def latest_snapshot_offset(self) -> int | None:
        offsets = self.snapshot_offsets()
        return offsets[-1] if offsets else None

    @property
    def oldest_snapshot_offset(self) -> int | None:
        offsets = self.snapshot_offsets()
        return offsets[0] if offsets else None

    def take_snapshot(self, next_offset: int | None = None, sync: bool = True) -> Path:
        """Write the current state as `<next_offset>.snapshot` (default: the map end offset).
        sync=False leaves the fsync to the caller (`checkpoints.fsync_file`)."""
        offset = self._map_end_offset if next_offset is None else next_offset
        path = self.snapshot_path(offset)
        write_snapshot(path, self._producers.values(), sync)
        return path

    def delete_snapshots_before(self, offset: int) -> None:
        for snapshot_offset in self.snapshot_offsets():
            if snapshot_offset < offset:
                self._delete_snapshot(snapshot_offset)

    def _delete_snapshot(self, offset: int) -> None:
        self.snapshot_path(offset).unlink(missing_ok=True)

    def load(
        self,
        log_start_offset: int,
        log_end_offset: int,
        now_ms: int | None = None,
        upto: int | None = None,
    ) -> int:
        """Rebuild state from the newest usable snapshot (at or below `upto` when given);
        returns where to replay the log from.

        Snapshots above the log end offset (written before a truncation) and at or below the
        log start offset are deleted, as Kafka's truncateAndReload does; corrupt ones are
        logged, deleted and the next older one is tried. The caller then feeds every batch in
        [returned offset, log_end_offset) to `update`.
        """
        now_ms = _now_ms() if now_ms is None else now_ms
        kept = self._delete_out_of_range_snapshots(log_start_offset, log_end_offset)
        self._producers.clear()
        self._ongoing = {}
        self._unreplicated = {}
        for offset in reversed(kept):
            if upto is not None and offset > upto:
                continue
            path = self.snapshot_path(offset)
            try:
                entries = read_snapshot(path)
            except (CorruptSnapshotError, OSError) as exc:
                log.warning("skipping producer snapshot %s: %s", path, exc)
                self._delete_snapshot(offset)
                continue
            self._ongoing = {
                entry.current_txn_first_offset: entry.producer_id
                for entry in entries
                if entry.current_txn_first_offset is not None
                and not self._is_expired(entry, now_ms)
            }
            for entry in entries:
                if not self._is_expired(entry, now_ms):
                    self._producers[entry.producer_id] = entry
            self._map_end_offset = offset
            return offset
        self._map_end_offset = log_start_offset
        return log_start_offset

    def truncate_and_reload(
        self, log_start_offset: int, log_end_offset: int, now_ms: int | None = None
    ) -> int:
        """After the log was truncated to `log_end_offset`: reload unless already there.

        Returns the offset to replay the log from (the map end offset when nothing changed).
        """
        if log_end_offset != self._map_end_offset:
            return self.load(log_start_offset, log_end_offset, now_ms)
        self._delete_out_of_range_snapshots(log_start_offset, log_end_offset)
        self.on_log_start_offset_incremented(log_start_offset)
        return self._map_end_offset

    def _delete_out_of_range_snapshots(
        self, log_start_offset: int, log_end_offset: int
    ) -> list[int]:
        """Delete the snapshots outside (log start, log end]; returns the others' offsets."""
        kept = []
        for offset in self.snapshot_offsets():
            if offset > log_end_offset or offset <= log_start_offset:
                self._delete_snapshot(offset)
            else:
                kept.append(offset)
        return kept

    def __repr__(self) -> str:
        return (
            f"ProducerStateManager({self.partition_dir}, producers={len(self._producers)}, "
            f"map_end_offset={self._map_end_offset})"
        )


def _now_ms() -> int:
    return int(time.time() * 1000)


def write_snapshot(
    path: Path | str, entries: Iterable[ProducerStateEntry], sync: bool = True
) -> None:
    """Write entries in Kafka's snapshot format (sorted by producer id), atomically."""
    ordered = sorted(entries, key=lambda entry: entry.producer_id)
    body = bytearray(_SNAPSHOT_HEADER.size + _SNAPSHOT_ENTRY.size * len(ordered))
    _SNAPSHOT_HEADER.pack_into(body, 0, SNAPSHOT_VERSION, 0, len(ordered))
    position = _SNAPSHOT_HEADER.size
    for entry in ordered:
        _SNAPSHOT_ENTRY.pack_into(
            body,
            position,
            entry.producer_id,
            entry.producer_epoch,
            entry.last_seq,
            entry.last_data_offset,
            entry.last_offset_delta,
            entry.last_timestamp,
            entry.coordinator_epoch,
            -1 if entry.current_txn_first_offset is None else entry.current_txn_first_offset,
        )
        position += _SNAPSHOT_ENTRY.size
    struct.pack_into(">I", body, 2, crc32c.crc32c(memoryview(body)[_CRC_START:]))
    write_atomically(path, bytes(body), sync)


def read_snapshot(path: Path | str) -> list[ProducerStateEntry]:
    """Parse a snapshot file; raises CorruptSnapshotError on a bad size, version or CRC."""
    data = Path(path).read_bytes()
    if len(data) < _SNAPSHOT_HEADER.size:
        raise CorruptSnapshotError(f"snapshot {path} has {len(data)} bytes, too few for a header")
    version, stored_crc, count = _SNAPSHOT_HEADER.unpack_from(data)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"snapshot {path} has unknown version {version}")
    computed_crc = crc32c.crc32c(memoryview(data)[_CRC_START:])
    if stored_crc != computed_crc:
        raise CorruptSnapshotError(
            f"snapshot {path} is corrupt: stored crc {stored_crc}, computed {computed_crc}"
        )
    expected_size = _SNAPSHOT_HEADER.size + count * _SNAPSHOT_ENTRY.size
    if count < 0 or len(data) != expected_size:
        raise CorruptSnapshotError(
            f"snapshot {path} has {len(data)} bytes, {count} entries need {expected_size}"
        )
    entries = []
    for (
        producer_id,
        epoch,
        last_seq,
        last_offset,
        offset_delta,
        timestamp,
        coordinator_epoch,
        txn_first_offset,
    ) in _SNAPSHOT_ENTRY.iter_unpack(memoryview(data)[_SNAPSHOT_HEADER.size :]):
        batches: deque[BatchMetadata] = deque()
        if last_offset >= 0:
            batches.append(
                BatchMetadata(
                    decrement_sequence(last_seq, offset_delta) if last_seq >= 0 else last_seq,
                    last_seq,
                    last_offset - offset_delta,
                    last_offset,
                    timestamp,
                )
            )
        entries.append(
            ProducerStateEntry(
                producer_id,
                epoch,
                batches,
                coordinator_epoch,
                txn_first_offset if txn_first_offset >= 0 else None,
                timestamp,
            )
        )
    return entries
