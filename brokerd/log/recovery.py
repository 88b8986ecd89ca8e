"""Opening a partition's log from disk, and recovering it after an unclean shutdown.

Load order, as Kafka's LogLoader does it:
1. finish or undo interrupted work: `.cleaned` files go, `.swap` files replace the
   segments they cover, `.deleted` files are removed;
2. open each segment; an index that is missing or fails its sanity check is rebuilt;
3. after an unclean shutdown, recover every segment from the recovery point on:
   validate each batch, truncate a torn or garbage tail at the first invalid byte, rebuild
   the indexes, and drop the segments after a truncation;
4. rebuild producer state from its newest snapshot plus the log after it (after a
   recovery, from a snapshot at or below the first recovered segment, whose markers then
   rebuild the recovered segments' `.txnindex` files), and trim the leader-epoch cache to
   the log's offsets.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..config import LogConfig
from ..records.batch import ATTRIBUTES_POS, CONTROL_MASK, HEADER_SIZE, RecordBatch
from .checkpoints import LeaderEpochCheckpointFile
from .index import CorruptIndexError
from .leader_epochs import LeaderEpochFileCache
from .log import Log
from .producer_state import ProducerStateManager
from .segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    offset_from_filename,
)
from .swap import SWAP_GROUP_SUFFIX, read_swap_group
from .txn_index import TXN_INDEX_SUFFIX

log = logging.getLogger(__name__)

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"


def load_log(
    directory: Path,
    config: LogConfig,
    *,
    recovery_point: int = 0,
    log_start_offset: int = 0,
    had_clean_shutdown: bool = False,
    producer_id_expiration_ms: int = 86400000,
    clock: Callable[[], float] = time.time,
) -> Log:
    directory = Path(directory)
    try:
        directory.mkdir(parents=True)
        fresh = True
    except FileExistsError:
        fresh = False
    if fresh:
        # A directory made just now (a new partition) holds nothing to complete, open,
        # recover or replay: none of the listings below (a topic's creation makes
        # thousands of logs at once).
        segments: list[LogSegment] = []
    else:
        names = _complete_interrupted_operations(directory, config)
        # After a crash, the segments from the one holding the recovery point on are
        # scanned and their indexes rebuilt anyway: their (untrimmed) indexes are not
        # checked first.
        segments = _open_segments(
            directory, config, names, None if had_clean_shutdown else recovery_point
        )

    epochs = LeaderEpochFileCache(LeaderEpochCheckpointFile(directory / LEADER_EPOCH_CHECKPOINT))
    scanned: _ScannedProducerBatches | None = None
    if not had_clean_shutdown and segments:
        segments, recovery_point, scanned = _recover(segments, recovery_point, epochs)
    if not segments:
        start = max(log_start_offset, 0)
        segments = [LogSegment(directory, start, config, created_ms=int(clock() * 1000))]
    elif not segments[-1].active:
        # Only the last segment takes appends: give its indexes their preallocated room.
        last = segments[-1]
        last.close()
        segments[-1] = LogSegment(directory, last.base_offset, config, active=True)

    log_start_offset = max(log_start_offset, segments[0].base_offset)
    producer_state = ProducerStateManager(directory, producer_id_expiration_ms)
    result = Log(
        directory,
        config,
        segments=segments,
        log_start_offset=log_start_offset,
        recovery_point=recovery_point,
        leader_epoch_cache=epochs,
        producer_state=producer_state,
        clock=clock,
    )
    end = result.log_end_offset
    result.recovery_point = min(max(recovery_point, 0), end)
    epochs.truncate_from_end(end)
    epochs.truncate_from_start(log_start_offset)
    if fresh:
        producer_state.update_map_end_offset(end)  # no snapshot, no batch to replay
    else:
        _rebuild_producer_state(result, producer_state, log_start_offset, end, scanned)
    return result


def _complete_interrupted_operations(directory: Path, config: LogConfig) -> list[str]:
    """Finish or undo what a crash interrupted; returns the dir's file names after it (one
    listing: a restart loads thousands of logs and most have nothing to complete)."""
    names = os.listdir(directory)
    changed = False
    for name in names:
        if name.endswith((DELETED_SUFFIX, CLEANED_SUFFIX, ".tmp")):
            # A deletion or cleaning that did not finish, a file not yet renamed in place.
            (directory / name).unlink(missing_ok=True)
            changed = True
    if any(name.endswith((SWAP_SUFFIX, SWAP_GROUP_SUFFIX)) for name in names):
        _complete_swaps(directory, config)
        changed = True
    return os.listdir(directory) if changed else names


def _complete_swaps(directory: Path, config: LogConfig) -> None:
    # A `.swap` log is a cleaned segment whose swap was interrupted after it was
    # complete: it replaces every old segment it covers (as Kafka: those based in
    # [swap base, swap's next offset)) and every segment of its group (swap.py).
    for swap_log in sorted(directory.glob(f"*{LOG_SUFFIX}{SWAP_SUFFIX}")):
        base = offset_from_filename(swap_log.name)
        swapped = LogSegment(directory, base, config, suffix=SWAP_SUFFIX, active=False)
        swapped.recover()
        end = swapped.read_next_offset()
        group_last = read_swap_group(directory, base)
        if group_last is not None:
            end = max(end, group_last + 1)
        for old_log in directory.glob(f"*{LOG_SUFFIX}"):
            old_base = offset_from_filename(old_log.name)
            if base <= old_base < end:
                log.info("%s: replaced by the interrupted swap of %s", old_log, swap_log.name)
                for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                    (directory / f"{old_log.name[:20]}{suffix}").unlink(missing_ok=True)
        swapped.change_file_suffixes(SWAP_SUFFIX, "")
        swapped.close()
    for leftover in directory.glob(f"*{SWAP_SUFFIX}"):
        leftover.unlink(missing_ok=True)  # index swaps without their log
    for group_file in directory.glob(f"*{SWAP_GROUP_SUFFIX}"):
        group_file.unlink(missing_ok=True)  # used above, or left by an unfinished cleaning


def _open_segments(
    directory: Path, config: LogConfig, names: list[str], recover_from: int | None = None
) -> list[LogSegment]:
    """Open every segment (`names`: the dir's files); check (or rebuild) the indexes of
    those recovery will not scan: with `recover_from` (a crash's recovery point), the
    segment holding it and the later ones are left to `_recover`."""
    log_names = sorted(name for name in names if name.endswith(LOG_SUFFIX))
    present = set(names)
    bases = [offset_from_filename(name) for name in log_names]
    scanned_from = None
    if recover_from is not None and bases:
        scanned_from = max((b for b in bases if b <= recover_from), default=bases[0])
    segments = []
    # After a clean shutdown the last segment is opened as the active one at once (not
    # opened sealed, closed and opened again by load_log).
    active_base = bases[-1] if recover_from is None and bases else None
    for log_name, base in zip(log_names, bases, strict=True):
        log_path = directory / log_name
        index_missing = f"{log_name[:20]}{INDEX_SUFFIX}" not in present
        segment = LogSegment(directory, base, config, active=base == active_base)
        if scanned_from is not None and base >= scanned_from:
            segments.append(segment)
            continue
        try:
            # An index is made at its first entry (index.py): none is missing from a
            # segment too short for one (at most index.interval.bytes).
            if index_missing and segment.size > config.index_interval_bytes:
                raise CorruptIndexError(f"{segment.index_path} is missing")
            segment.offset_index.sanity_check(segment.size)
            segment.time_index.sanity_check()
        except CorruptIndexError as exc:
            log.warning("rebuilding the indexes of %s: %s", log_path, exc)
            segment.recover()
            segment.on_become_inactive()
        segments.append(segment)
    return segments


@dataclass(slots=True)
class _ScannedProducerBatches:
    """The producer batches recovery's scan met in [start, log end): producer state is
    rebuilt from them instead of a second read of the log. Data batches keep only their
    61-byte header (all producer state needs), control batches their whole bytes."""

    start: int
    batches: list[tuple[int, int, RecordBatch]] = field(default_factory=list)

    def note(self, batch: memoryview, base_offset: int, last_offset: int) -> None:
        is_control = batch[ATTRIBUTES_POS + 1] & CONTROL_MASK
        kept = bytes(batch) if is_control else bytes(batch[:HEADER_SIZE])
        self.batches.append((base_offset, last_offset, RecordBatch(kept)))


def _recover(
    segments: list[LogSegment], recovery_point: int, epochs: LeaderEpochFileCache
) -> tuple[list[LogSegment], int, _ScannedProducerBatches]:
    """Recover the unflushed segments; everything after a truncation is dropped."""

    last_epoch = epochs.latest_epoch

    def note_epoch(epoch: int, base_offset: int) -> None:
        nonlocal last_epoch
        if epoch != last_epoch:  # assign only when the epoch changes
            epochs.assign(epoch, base_offset)
            last_epoch = epoch

    # The first segment to recover is the one holding the recovery point.
    first = len(segments) - 1
    for i in range(len(segments) - 1):
        if segments[i + 1].base_offset > recovery_point:
            first = i
            break
    scanned = _ScannedProducerBatches(segments[first].base_offset)
    kept = segments[:first]
    for i in range(first, len(segments)):
        segment = segments[i]
        truncated = segment.recover(note_epoch, scanned.note)
        if i + 1 < len(segments):
            segment.on_become_inactive()
        kept.append(segment)
        if truncated:
            log.warning(
                "%s: truncated %d invalid bytes at position %d",
                segment.log_path,
                truncated,
                segment.size,
            )
            for later in segments[i + 1 :]:
                log.warning("%s: deleted after a truncation before it", later.log_path)
                later.delete()
            break
    recovered_to = min(recovery_point, kept[-1].read_next_offset() if kept else 0)
    return kept, recovered_to, scanned


def _rebuild_producer_state(
    log_: Log,
    state: ProducerStateManager,
    log_start_offset: int,
    end: int,
    scanned: _ScannedProducerBatches | None = None,
) -> None:
    """The newest snapshot, then the log after it: read from disk, except the part the
    recovery scan already went through (`scanned`). After a recovery the snapshot is one
    at or below where the scan started, so that every marker of the recovered segments is
    replayed with the producer state as it was then: the aborts rebuild their `.txnindex`
    files (Kafka's segment recovery), emptied first."""
    upto = None if scanned is None else scanned.start
    replay_from = max(state.load(log_start_offset, end, upto=upto), log_start_offset)
    replay_to = end if scanned is None else max(min(scanned.start, end), replay_from)
    for entry in log_.read_batches(replay_from, replay_to):
        if isinstance(entry, RecordBatch) and entry.has_producer_id:
            state.update(entry, entry.base_offset, entry.last_offset)
    if scanned is not None:
        for segment in log_.segments_from(scanned.start):
            if segment.base_offset >= scanned.start:
                segment.txn_index.reset()
        for base_offset, last_offset, batch in scanned.batches:
            if last_offset >= replay_to and base_offset < end:
                aborted = state.update(batch, base_offset, last_offset)
                holding = log_.segment_for(base_offset) if aborted is not None else None
                if aborted is not None and holding is not None:
                    holding.update_txn_index(aborted)
    state.update_map_end_offset(end)
