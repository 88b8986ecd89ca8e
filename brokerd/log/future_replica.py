"""Moving a replica to another log dir while it is written (AlterReplicaLogDirs, KIP-113).

As Kafka does it: the log manager creates a *future* log, `<topic>-<partition>.<uuid>-future`
in the destination dir, and a worker thread (Kafka's ReplicaAlterLogDirsThread) copies the
current log into it the way a follower replicates from its leader: whole batches appended
with their assigned offsets (`append_as_follower`), the future log cut back first whenever
the current log was truncated under it (leader epochs, as OffsetsForLeaderEpoch would tell a
follower) or its start moved past what was copied. Once the future log has caught up, the
log manager swaps it in under the current log's lock (`LogManager._finish_move`), so no
append can land between the last copy and the swap.

This module holds the copying; the log manager owns the directories and the swap.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from . import errors
from .leader_epochs import UNDEFINED_EPOCH
from .local_log import OwnedRegion
from .log import Log

log = logging.getLogger(__name__)

# Bytes copied per step: bounds the time a step holds a worker and, for the last steps of a
# move (under the current log's lock), how long appends wait.
COPY_BYTES = 1 << 20
# Kafka's replica.alter.log.dirs.io.max.bytes.per.second default: no limit.
UNLIMITED = (1 << 63) - 1
# How long a throttled mover waits before asking the quota again.
THROTTLED_WAIT_S = 0.05


class AlterLogDirsQuota:
    """The byte rate of every move's copying together, bounded by
    replica.alter.log.dirs.io.max.bytes.per.second (Kafka's ReplicationQuotaManager for
    alter-log-dirs: its movers copy nothing while the rate is above the bound, and record
    what each step copied). The rate is Kafka's sampled Rate: `window_num` samples of
    `window_s` seconds (alter.log.dirs.replication.quota.window.num / .size.seconds), the
    total over the retained samples divided by their span, taken as at least
    window_num - 1 windows (so a move may start with a burst of that many seconds' worth).

    `bound` is a number or how to read its current value: a dynamic broker config changes
    it while moves run. Thread-safe."""

    def __init__(
        self,
        bound: int | Callable[[], int] = UNLIMITED,
        window_num: int = 11,
        window_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._bound = bound
        self.window_num = max(1, window_num)
        self.window_s = max(window_s, 0.001)
        self._clock = clock
        self._lock = threading.Lock()
        self._samples: list[list[float]] = []  # [start, bytes], oldest first

    @property
    def bound(self) -> int:
        bound = self._bound
        return int(bound() if callable(bound) else bound)

    def record(self, size: int) -> None:
        now = self._clock()
        with self._lock:
            samples = self._samples
            if not samples or now - samples[-1][0] >= self.window_s:
                samples.append([now, 0.0])
            samples[-1][1] += size
            self._purge(now)

    def rate(self) -> float:
        """Bytes per second over the retained samples (Kafka's Rate.measure)."""
        now = self._clock()
        with self._lock:
            self._purge(now)
            if not self._samples:
                return 0.0
            total = sum(size for _, size in self._samples)
            elapsed = now - self._samples[0][0]
            full = int(elapsed // self.window_s)
            if full < self.window_num - 1:
                elapsed += (self.window_num - 1 - full) * self.window_s
            return total / max(elapsed, 0.001)

    def exceeded(self) -> bool:
        bound = self.bound
        return bound < UNLIMITED and self.rate() > bound

    def _purge(self, now: float) -> None:
        expire = self.window_num * self.window_s
        samples = self._samples
        while samples and now - samples[0][0] >= expire:
            samples.pop(0)


class FutureReplicaMove:
    """One partition's move: copies `current` into `future` until `finish` swaps them.

    `finish(move)` is called with the future caught up (as far as the copy can tell); it
    returns True once the swap is done, False to go on copying (an append came in between).
    `run` is a worker thread's loop; `cancel` stops it at the next step."""

    def __init__(
        self,
        current: Log,
        future: Log,
        finish: Callable[[FutureReplicaMove], bool],
        quota: AlterLogDirsQuota | None = None,
    ):
        self.current = current
        self.future = future
        self._finish = finish
        self.quota = quota or AlterLogDirsQuota()
        self.cancelled = threading.Event()
        self.started = threading.Event()  # the log manager's: a mover thread took it
        self.done = threading.Event()  # the log manager's: stopped and cleaned up
        self.swapped = False
        self.held_ms: float | None = None  # how long the swap held the log's appends
        self.error: BaseException | None = None
        # The log dir an I/O error of the move came from (the current log's on a read or
        # rename of it, the copy's otherwise): the one the log manager takes offline.
        self.failed_dir: Path | None = None

    @property
    def key(self) -> tuple[str, int]:
        return self.current.topic, self.current.partition

    @property
    def lag(self) -> int:
        """Offsets the future log is behind the current one (DescribeLogDirs' offset_lag)."""
        return max(self.current.log_end_offset - self.future.log_end_offset, 0)

    def cancel(self) -> None:
        self.cancelled.set()

    def run(self) -> None:
        try:
            while not self.cancelled.is_set():
                if self.current.closed or self.future.closed:
                    return
                if self.quota.exceeded():
                    # Throttled: nothing copied until the rate fell below the bound.
                    self.cancelled.wait(THROTTLED_WAIT_S)
                    continue
                self.reconcile()
                if self.copy_step():
                    continue
                if self._finish(self):
                    self.swapped = True
                    return
                self.cancelled.wait(0.01)  # an append came in between: copy it next
        except Exception as exc:  # noqa: BLE001 - reported by the log manager, never raised
            self.error = exc
            if isinstance(exc, OSError) and self.failed_dir is None:
                self.failed_dir = self.future.dir.parent
            log.error("moving %s-%d to %s failed: %s", *self.key, self.future.dir, exc)

    @contextmanager
    def on_current(self) -> Iterator[None]:
        """An I/O error in the block is the current log's dir's (not the copy's)."""
        directory = self.current.dir.parent
        try:
            yield
        except OSError:
            self.failed_dir = directory
            raise

    # Steps (also called by the log manager under the current log's lock) -----------------
    def reconcile(self) -> None:
        """Cut the future log back to what the current log still holds: below its start
        (retention, DeleteRecords), past its end or past where their leader epochs part
        (a truncation of the current log, as a follower's)."""
        current, future = self.current, self.future
        if future.log_end_offset < current.log_start_offset:
            future.truncate_fully_and_start_at(current.log_start_offset)
            return
        cut = min(future.log_end_offset, current.log_end_offset)
        epoch = future.latest_epoch
        if epoch is not None:
            their_epoch, end = current.leader_epoch_cache.end_offset_for(
                epoch, current.log_end_offset
            )
            if their_epoch == UNDEFINED_EPOCH:
                cut = current.log_start_offset  # no common history known: copy again
            elif their_epoch == epoch:
                cut = min(cut, end)
            else:
                _, own_end = future.leader_epoch_cache.end_offset_for(
                    their_epoch, future.log_end_offset
                )
                cut = min(cut, end, own_end) if own_end >= 0 else current.log_start_offset
        if cut < future.log_end_offset:
            log.info("future replica of %s-%d cut back to %d", *self.key, cut)
            if cut <= future.log_start_offset:
                future.truncate_fully_and_start_at(max(cut, current.log_start_offset))
            else:
                future.truncate_to(cut)

    def copy_step(self, max_bytes: int = COPY_BYTES) -> bool:
        """Copy the next whole batches (up to max_bytes); False when there is none."""
        current, future = self.current, self.future
        start = future.log_end_offset
        if start >= current.log_end_offset:
            return False
        try:
            with self.on_current():
                info = current.read(start, max_bytes, None, True, owned=True)
        except errors.OffsetOutOfRangeError:
            return True  # the current log moved under the read: reconcile, then again
        region = info.region
        if not isinstance(region, OwnedRegion):
            return False
        try:
            with self.on_current():
                data = region.read()
        finally:
            region.release()
        if not data:
            return False
        first = int.from_bytes(data[:8], "big", signed=True)  # the first batch's base
        if first < start:
            # The log start is inside a batch (DeleteRecords): a follower starts its log
            # at the batch's base then (Kafka's UnexpectedAppendOffsetException handling).
            future.truncate_fully_and_start_at(first)
        future.append_as_follower(data)
        self.quota.record(len(data))
        # As Kafka's ReplicaAlterLogDirsThread: the copy takes the current log's high
        # watermark (clamped to what it holds), which its dir's checkpoint records.
        future.update_high_watermark(current.high_watermark)
        return True
