"""Which compacted log to clean next, the cleaner checkpoints, and the cleaner thread.

`cleaner-offset-checkpoint` at each log dir root holds, per compacted partition, the offset
where its dirty section starts. The filthiest log is the compacted one with the highest
dirty ratio = dirty bytes / (clean + dirty bytes), taken when the ratio exceeds
min.cleanable.dirty.ratio, or at once when its oldest dirty record waited longer than
max.compaction.lag.ms. For compact,delete topics the thread then applies retention too.

`clean_log` is the on-demand form ("compact this partition now and report"): it runs on any
thread, serialised per partition, and never on the event loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from .checkpoints import OffsetCheckpointFile
from .cleaner import (
    DEFAULT_DEDUPE_BUFFER_SIZE,
    DEFAULT_LOAD_FACTOR,
    Cleaner,
    CleanReport,
    first_uncleanable_offset,
)
from .log import Log
from .manager import CLEANER_CHECKPOINT
from .retention import RetentionReport, delete_old_segments

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
DEFAULT_BACKOFF_MS = 15_000  # log.cleaner.backoff.ms


@dataclass
class DirtyStats:
    """A log's cleanable state at one moment (Kafka's LogToClean)."""

    topic: str
    partition: int
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    dirty_bytes: int
    needs_compaction_now: bool

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0

    def as_dict(self) -> dict:
        return {**asdict(self), "dirty_ratio": self.dirty_ratio}


class LogCleanerManager:
    def __init__(
        self,
        *,
        dedupe_buffer_size: int = DEFAULT_DEDUPE_BUFFER_SIZE,
        load_factor: float = DEFAULT_LOAD_FACTOR,
        clock: Callable[[], float] = time.time,
    ):
        self.dedupe_buffer_size = dedupe_buffer_size
        self.load_factor = load_factor
        self.clock = clock
        self._lock = threading.Lock()
        self._idle_cleaners: list[Cleaner] = []  # an offset map is big: reuse them
        self._partition_locks: dict[TopicPartition, threading.Lock] = {}
        self.in_progress: set[TopicPartition] = set()
        # As Kafka (KIP-346): a partition whose cleaning failed is skipped from then on
        # (until restart), so one bad log does not stall compaction of all the others.
        self.uncleanable: set[TopicPartition] = set()
        self.last_reports: dict[TopicPartition, CleanReport] = {}
        self.last_retention: dict[TopicPartition, RetentionReport] = {}
        self.dirty_stats: dict[TopicPartition, DirtyStats] = {}
        self.last_run_ms: int | None = None

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    # Checkpoints ----------------------------------------------------------------------
    @staticmethod
    def checkpoint_file(log_: Log) -> OffsetCheckpointFile:
        return OffsetCheckpointFile(Path(log_.dir).parent / CLEANER_CHECKPOINT)

    def read_checkpoint(self, log_: Log) -> int | None:
        with self._lock:
            return self.checkpoint_file(log_).read().get((log_.topic, log_.partition))

    def update_checkpoint(self, log_: Log, offset: int | None) -> None:
        """Set (or with None remove) a log's entry; the file is shared by the log dir."""
        with self._lock:
            checkpoint = self.checkpoint_file(log_)
            offsets = checkpoint.read()
            tp = (log_.topic, log_.partition)
            if offset is None:
                offsets.pop(tp, None)
            else:
                offsets[tp] = offset
            checkpoint.write(offsets)

    def maybe_truncate_checkpoint(self, log_: Log, offset: int) -> None:
        """After a truncation below the checkpoint, cleaning resumes from there."""
        current = self.read_checkpoint(log_)
        if current is not None and current > offset:
            self.update_checkpoint(log_, offset)

    def first_dirty_offset(self, log_: Log) -> int:
        """The checkpoint, unless it fell outside the log (reset to the log start)."""
        checkpoint = self.read_checkpoint(log_)
        if checkpoint is None or not log_.log_start_offset <= checkpoint <= log_.log_end_offset:
            return log_.log_start_offset
        return checkpoint

    # Choosing -------------------------------------------------------------------------
    def dirty_stats_for(self, log_: Log, now_ms: int | None = None) -> DirtyStats:
        now = self.now_ms() if now_ms is None else now_ms
        first_dirty = self.first_dirty_offset(log_)
        uncleanable = max(first_uncleanable_offset(log_, now), first_dirty)
        clean = log_.segments_overlapping(-1, first_dirty)
        dirty = log_.segments_overlapping(first_dirty, uncleanable)
        needs_now = False
        max_lag = log_.config.max_compaction_lag_ms
        if dirty and max_lag < (1 << 62):
            first_timestamp = _first_batch_timestamp(dirty[0])
            needs_now = 0 <= first_timestamp < now - max_lag
        stats = DirtyStats(
            log_.topic,
            log_.partition,
            first_dirty,
            uncleanable,
            sum(s.size for s in clean),
            sum(s.size for s in dirty),
            needs_now,
        )
        with self._lock:
            self.dirty_stats[(log_.topic, log_.partition)] = stats
        return stats

    def grab_filthiest_log(self, logs: Iterable[Log], now_ms: int | None = None) -> Log | None:
        """The compacted log most in need of cleaning, marked in progress (release it with
        `done_cleaning`), or None."""
        best: tuple[float, Log] | None = None
        for candidate in logs:
            tp = (candidate.topic, candidate.partition)
            if not candidate.config.compact or candidate.closed:
                continue
            if tp in self.in_progress or tp in self.uncleanable:
                continue
            stats = self.dirty_stats_for(candidate, now_ms)
            eligible = (stats.needs_compaction_now and stats.dirty_bytes > 0) or (
                stats.dirty_ratio > candidate.config.min_cleanable_dirty_ratio
            )
            if eligible and (best is None or stats.dirty_ratio > best[0]):
                best = (stats.dirty_ratio, candidate)
        if best is None:
            return None
        with self._lock:
            tp = (best[1].topic, best[1].partition)
            if tp in self.in_progress:
                return None
            self.in_progress.add(tp)
        return best[1]

    def done_cleaning(self, log_: Log) -> None:
        with self._lock:
            self.in_progress.discard((log_.topic, log_.partition))

    # Cleaning -------------------------------------------------------------------------
    def clean_log(self, log_: Log, now_ms: int | None = None) -> CleanReport:
        """Compact one partition now and report what was done (safe from any thread)."""
        tp = (log_.topic, log_.partition)
        with self._lock:
            partition_lock = self._partition_locks.setdefault(tp, threading.Lock())
        with partition_lock:
            cleaner = self._borrow_cleaner()
            try:
                first_dirty = self.first_dirty_offset(log_)
                report = cleaner.clean(log_, first_dirty, now_ms)
            finally:
                self._return_cleaner(cleaner)
            if report.end_offset > first_dirty:
                self.update_checkpoint(log_, report.end_offset)
            with self._lock:
                self.last_reports[tp] = report
                self.last_run_ms = self.now_ms()
            log.info(
                "%s-%d: cleaned [%d, %d): %d -> %d bytes, %d of %d records kept%s",
                log_.topic,
                log_.partition,
                report.first_dirty_offset,
                report.end_offset,
                report.bytes_before,
                report.bytes_after,
                report.records_kept,
                report.records_read,
                " (partial pass)" if report.partial else "",
            )
            return report

    def _borrow_cleaner(self) -> Cleaner:
        with self._lock:
            if self._idle_cleaners:
                return self._idle_cleaners.pop()
        return Cleaner(self.dedupe_buffer_size, self.load_factor)

    def _return_cleaner(self, cleaner: Cleaner) -> None:
        with self._lock:
            self._idle_cleaners.append(cleaner)

    def clean_filthiest(self, logs: Iterable[Log]) -> CleanReport | None:
        """One iteration of the cleaner thread: clean the filthiest log, if any."""
        chosen = self.grab_filthiest_log(logs)
        if chosen is None:
            return None
        try:
            return self.clean_log(chosen)
        except Exception:
            with self._lock:
                self.uncleanable.add((chosen.topic, chosen.partition))
            log.error("%s-%d: marked uncleanable", chosen.topic, chosen.partition)
            raise
        finally:
            self.done_cleaning(chosen)

    def delete_old_segments(self, logs: Iterable[Log]) -> list[RetentionReport]:
        """Retention for compact,delete logs, as Kafka's cleaner thread applies it."""
        reports = []
        for candidate in logs:
            if candidate.closed or not (candidate.config.compact and candidate.config.delete):
                continue
            tp = (candidate.topic, candidate.partition)
            with self._lock:
                partition_lock = self._partition_locks.setdefault(tp, threading.Lock())
            with partition_lock:
                report = delete_old_segments(candidate)
            with self._lock:
                self.last_retention[tp] = report
            reports.append(report)
        return reports

    # Reporting ------------------------------------------------------------------------
    def state(self) -> dict:
        """What the admin API shows: last run, per-log dirty ratio and last report."""
        with self._lock:
            return {
                "last_run_ms": self.last_run_ms,
                "in_progress": sorted(f"{t}-{p}" for t, p in self.in_progress),
                "uncleanable": sorted(f"{t}-{p}" for t, p in self.uncleanable),
                "logs": {
                    f"{t}-{p}": {
                        "dirty": stats.as_dict(),
                        "last_report": (
                            self.last_reports[(t, p)].as_dict()
                            if (t, p) in self.last_reports
                            else None
                        ),
                    }
                    for (t, p), stats in self.dirty_stats.items()
                },
            }


def _first_batch_timestamp(segment) -> int:
    for header in segment.scan_headers(0, segment.size):
        return header.max_timestamp if header.max_timestamp >= 0 else segment.last_modified_ms
    return -1


class CleanerThread(threading.Thread):
    """Loops: clean the filthiest log, apply retention to compact,delete logs, and back
    off when nothing was cleaned. `stop()` wakes it and waits for the current pass."""

    def __init__(
        self,
        manager: LogCleanerManager,
        logs: Callable[[], Iterable[Log]],
        *,
        backoff_ms: int = DEFAULT_BACKOFF_MS,
        name: str = "log-cleaner-0",
    ):
        super().__init__(name=name, daemon=True)
        self.manager = manager
        self.logs = logs
        self.backoff_ms = backoff_ms
        self._stopping = threading.Event()
        self.passes = 0
        self.errors = 0

    def run(self) -> None:
        while not self._stopping.is_set():
            cleaned = False
            try:
                cleaned = self.manager.clean_filthiest(list(self.logs())) is not None
                self.manager.delete_old_segments(list(self.logs()))
            except Exception:  # noqa: BLE001 - one bad log must not kill the cleaner
                self.errors += 1
                log.exception("log cleaner pass failed")
            self.passes += 1
            if not cleaned:
                self._stopping.wait(self.backoff_ms / 1000)

    def stop(self, timeout: float | None = None) -> None:
        self._stopping.set()
        if self.is_alive():
            self.join(timeout)
