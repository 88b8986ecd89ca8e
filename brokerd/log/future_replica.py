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


class FutureReplicaMove:
    """One partition's move: copies `current` into `future` until `finish` swaps them.

    `finish(move)` is called with the future caught up (as far as the copy can tell); it
    returns True once the swap is done, False to go on copying (an append came in between).
    `run` is a worker thread's loop; `cancel` stops it at the next step."""

    def __init__(self, current: Log, future: Log, finish: Callable[[FutureReplicaMove], bool]):
        self.current = current
        self.future = future
        self._finish = finish
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
        return True
