"""The leader-epoch cache of a partition (KIP-101): which epoch started at which offset.

Entries are (epoch, start offset), strictly increasing in both. A new leader appends its epoch
at its log end offset; followers append the epoch of each fetched batch that is newer than
their latest. OffsetsForLeaderEpoch answers from `end_offset_for`, so a follower truncates to
where its history diverged from the leader's instead of to its high watermark.

Every change that adds entries is written to `leader-epoch-checkpoint` before returning, so
the checkpoint never misses an epoch; truncations are flushed too (Kafka does those
asynchronously; a stale file is repaired by the truncations recovery repeats on load).
"""

from __future__ import annotations

import bisect

from .checkpoints import EpochEntry, LeaderEpochCheckpointFile

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochFileCache:
    def __init__(self, checkpoint: LeaderEpochCheckpointFile | None):
        self.checkpoint = checkpoint
        self._entries: list[EpochEntry] = []
        # What the checkpoint file holds (flush_if_changed writes only a difference).
        self._flushed: list[EpochEntry] = []
        if checkpoint is not None:
            # Replaying through the same rule as assign() drops a file's non-monotonic lines.
            self._flushed = list(checkpoint.read())
            for entry in self._flushed:
                self._assign(entry)

    # Queries -------------------------------------------------------------------------
    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for OffsetsForLeaderEpoch, exactly as Kafka's endOffsetFor.

        - the latest epoch ends at the log end offset (it is still being written);
        - any other epoch ends where the first larger epoch starts, and the epoch returned is
          the largest one <= requested (requested itself when it precedes every entry);
        - no larger epoch known (or UNDEFINED requested): (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET).
        """
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self._entries and self._entries[-1].epoch == requested_epoch:
            return requested_epoch, log_end_offset
        epochs = [entry.epoch for entry in self._entries]
        higher = bisect.bisect_right(epochs, requested_epoch)
        if higher == len(self._entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        end_offset = self._entries[higher].start_offset
        if higher == 0:
            # Older than anything cached (the log start moved past it): the follower may
            # replicate from the first known epoch's start.
            return requested_epoch, end_offset
        return self._entries[higher - 1].epoch, end_offset

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch the offset was written in, or None when it precedes every entry."""
        starts = [entry.start_offset for entry in self._entries]
        slot = bisect.bisect_right(starts, offset) - 1
        return self._entries[slot].epoch if slot >= 0 else None

    # Changes -------------------------------------------------------------------------
    def assign(self, epoch: int, start_offset: int, sync: bool = True) -> bool:
        """Record that `epoch` starts at `start_offset`, dropping entries it contradicts.

        A repeat of the latest epoch at the same or a later offset changes nothing. Otherwise
        every entry with an epoch >= epoch or a start offset >= start_offset is removed first
        (they describe history this one replaces), and the result is flushed (sync=False:
        written without fsyncs, for a caller that syncs many at once). True if it changed.
        """
        if self._assign(EpochEntry(epoch, start_offset)):
            self.flush(sync)
            return True
        return False

    def _assign(self, entry: EpochEntry) -> bool:
        if entry.epoch < 0 or entry.start_offset < 0:
            raise ValueError(f"invalid leader epoch entry {entry}")
        latest = self.latest_entry
        if (
            latest is not None
            and entry.epoch == latest.epoch
            and entry.start_offset >= latest.start_offset
        ):
            return False
        while self._entries and (
            self._entries[-1].epoch >= entry.epoch
            or self._entries[-1].start_offset >= entry.start_offset
        ):
            self._entries.pop()
        self._entries.append(entry)
        return True

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after `end_offset` (the log was truncated there)."""
        if end_offset < 0 or not self._entries or self._entries[-1].start_offset < end_offset:
            return
        while self._entries and self._entries[-1].start_offset >= end_offset:
            self._entries.pop()
        self.flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries wholly before `start_offset`; the one covering it now starts there."""
        covering = None
        dropped = 0
        while self._entries and self._entries[0].start_offset <= start_offset:
            covering = self._entries.pop(0)
            dropped += 1
        if covering is None:
            return
        self._entries.insert(0, EpochEntry(covering.epoch, start_offset))
        if dropped > 1 or covering.start_offset != start_offset:
            self.flush()  # unchanged (the first entry already starts there): no rewrite

    def clear_and_flush(self) -> None:
        self._entries.clear()
        self.flush()

    def flush(self, sync: bool = True) -> None:
        if self.checkpoint is not None:
            self.checkpoint.write(self._entries, sync)
            self._flushed = list(self._entries)

    def flush_if_changed(self) -> None:
        """A log's clean close: the file is rewritten (two fsyncs) only if it is behind;
        an idle log's, or a new one's with no epoch yet, is left as it is."""
        if self._entries != self._flushed:
            self.flush()

    def __repr__(self) -> str:
        return f"LeaderEpochFileCache({self._entries})"
