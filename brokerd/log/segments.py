"""The segments of one log ordered by base offset, and lookups by offset (Kafka's LogSegments).

Copy-on-write: every change builds a new `SegmentsView` and publishes it with a single
assignment, so a reader on any thread takes `view` without a lock and never sees a
half-made change. Changes are not serialised here: their caller holds the log's lock.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from .segment import LogSegment


class SegmentsView(NamedTuple):
    """One published state: base offsets and segments, both ascending, index for index."""

    bases: list[int]
    segments: list[LogSegment]

    def floor_index(self, offset: int) -> int:
        """Index of the segment with the largest base offset <= offset, or -1."""
        return bisect.bisect_right(self.bases, offset) - 1

    def next_base(self, index: int) -> int | None:
        """Base offset of the segment after `index` (where that segment's offsets end)."""
        return self.bases[index + 1] if index + 1 < len(self.bases) else None


class LogSegments:
    __slots__ = ("view",)

    def __init__(self, segments: Iterable[LogSegment] = ()):
        self.view = SegmentsView([], [])
        self.set(segments)

    # Queries (lock-free, on the current view) -----------------------------------------
    def __len__(self) -> int:
        return len(self.view.segments)

    def __iter__(self) -> Iterator[LogSegment]:
        return iter(self.view.segments)

    def __contains__(self, segment: object) -> bool:
        return any(s is segment for s in self.view.segments)

    def all(self) -> list[LogSegment]:
        return list(self.view.segments)

    @property
    def active(self) -> LogSegment:
        """The last segment, the only one that takes appends."""
        return self.view.segments[-1]

    @property
    def first(self) -> LogSegment:
        return self.view.segments[0]

    @property
    def size(self) -> int:
        return sum(s.size for s in self.view.segments)

    def floor(self, offset: int) -> LogSegment | None:
        """The segment with the largest base offset <= offset (the one that would hold it)."""
        view = self.view
        i = view.floor_index(offset)
        return view.segments[i] if i >= 0 else None

    def from_offset(self, offset: int) -> list[LogSegment]:
        """The segment holding `offset` (or the first, when offset precedes all) and after."""
        view = self.view
        return view.segments[max(view.floor_index(offset), 0) :]

    def overlapping(self, start: int, end: int) -> list[LogSegment]:
        """Segments that may hold offsets in [start, end) (Kafka's logSegments(from, to))."""
        view = self.view
        first = max(view.floor_index(start), 0)
        last = bisect.bisect_left(view.bases, end)
        return view.segments[first:last]

    # Changes (the caller holds the log's lock) ----------------------------------------
    def set(self, segments: Iterable[LogSegment]) -> None:
        ordered = sorted(segments, key=lambda s: s.base_offset)
        bases = [s.base_offset for s in ordered]
        if len(set(bases)) != len(bases):
            raise ValueError(f"two segments share a base offset in {bases}")
        self.view = SegmentsView(bases, ordered)

    def add(self, segment: LogSegment) -> None:
        """Append a segment after the active one (a roll)."""
        view = self.view
        if view.bases and segment.base_offset <= view.bases[-1]:
            raise ValueError(
                f"segment at {segment.base_offset} does not follow the active segment at "
                f"{view.bases[-1]}"
            )
        self.view = SegmentsView([*view.bases, segment.base_offset], [*view.segments, segment])

    def remove(self, segments: Iterable[LogSegment]) -> None:
        """Drop the given segments (by identity); those not present are ignored."""
        doomed = {id(s) for s in segments}
        self.set(s for s in self.view.segments if id(s) not in doomed)

    def replace(self, new: Iterable[LogSegment], old: Iterable[LogSegment]) -> None:
        """Swap `new` in for `old` in one published change (the cleaner's swap)."""
        doomed = {id(s) for s in old}
        self.set([*(s for s in self.view.segments if id(s) not in doomed), *new])

    def contains_all(self, segments: Iterable[LogSegment]) -> bool:
        present = {id(s) for s in self.view.segments}
        return all(id(s) in present for s in segments)
