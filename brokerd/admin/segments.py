"""Per-segment views of one partition, with what retention and compaction would do next.

The retention forecast applies the rules of brokerd.log.retention to the current state
without deleting anything: a segment goes at the next retention check when it is in the
deletable prefix of any rule (time, size, log start offset), wholly below the high
watermark and not the empty active segment. Evaluating each rule on its own and taking
the union gives the same prefix as applying them one after the other, as the broker does.
"""

from __future__ import annotations

import itertools
import os
import struct
from typing import TYPE_CHECKING, Any

from brokerd.log import retention

from .state import file_times_ms

if TYPE_CHECKING:
    from brokerd.log.cleaner_manager import LogCleanerManager
    from brokerd.log.log import Log
    from brokerd.log.segment import LogSegment

# An entry starts with offset (8), length (4), leader epoch or CRC (4), magic (1); a v2
# batch continues with CRC (4), attributes (2), last offset delta (4), first timestamp (8)
# and max timestamp (8); a v1 message with attributes (1) and its timestamp (8).
_PREFIX = struct.Struct(">qiib")
_V2_FIRST_TIMESTAMP = struct.Struct(">q")
_V2_FIRST_TIMESTAMP_POS = 27
_V1_TIMESTAMP_POS = 18
_HEADER_BYTES = 43

MAX_INDEX_ENTRIES = 10_000
DEFAULT_INDEX_ENTRIES = 1_000


def log_segments_view(
    log: Log,
    cleaner: LogCleanerManager | None,
    *,
    with_entries: bool = False,
    entries_limit: int = DEFAULT_INDEX_ENTRIES,
    now_ms: int | None = None,
) -> dict[str, Any]:
    now = log.now_ms() if now_ms is None else now_ms
    segments = log.segments
    forecast = retention_forecast(log, segments, now)
    sections = _compaction_sections(log, segments, cleaner, now)
    views = []
    for i, segment in enumerate(segments):
        view = segment_view(segment, is_active=i == len(segments) - 1)
        view["retention"] = forecast[i]
        if sections is not None:
            view["compaction"] = {"section": sections[i]}
        if with_entries:
            view["index_entries"] = index_entries(segment, entries_limit)
        views.append(view)
    config = log.config
    return {
        "topic": log.topic,
        "partition": log.partition,
        "now_ms": now,
        "log_start_offset": log.log_start_offset,
        "log_end_offset": log.log_end_offset,
        "high_watermark": log.high_watermark,
        "size_bytes": sum(s.size for s in segments),
        "config": {
            "cleanup.policy": [
                p for p, on in (("delete", config.delete), ("compact", config.compact)) if on
            ],
            "retention.ms": config.retention_ms,
            "retention.bytes": config.retention_bytes,
            "segment.bytes": config.segment_bytes,
            "segment.ms": config.segment_ms,
            "index.interval.bytes": config.index_interval_bytes,
            "file.delete.delay.ms": config.file_delete_delay_ms,
        },
        "segments": views,
    }


def segment_view(segment: LogSegment, *, is_active: bool) -> dict[str, Any]:
    size = segment.size
    next_offset = segment.read_next_offset() if size else segment.base_offset
    return {
        "base_offset": segment.base_offset,
        "last_offset": next_offset - 1 if size else None,
        "next_offset": next_offset,
        "size_bytes": size,
        "first_timestamp": first_timestamp(segment) if size else -1,
        "max_timestamp": segment.max_timestamp_so_far,
        "offset_of_max_timestamp": segment.offset_of_max_timestamp_so_far if size else None,
        # Like Kafka's LogSegment.created: set when the segment is rolled, or when the
        # broker opened it at start-up (file systems do not keep a creation time).
        "created_ms": segment.created_ms,
        "modified_ms": file_times_ms(segment.log_path),
        "is_active": is_active,
        "file": segment.log_path.name,
        "offset_index": {
            "entries": segment.offset_index.entries,
            "max_entries": segment.offset_index.max_entries,
            "size_bytes": segment.offset_index.size_in_bytes,
        },
        "time_index": {
            "entries": segment.time_index.entries,
            "max_entries": segment.time_index.max_entries,
            "size_bytes": segment.time_index.size_in_bytes,
        },
    }


def first_timestamp(segment: LogSegment) -> int:
    """The first batch's first timestamp (-1 for v0 messages or none)."""
    head = os.pread(segment.file.fileno(), _HEADER_BYTES, 0)
    if len(head) < _PREFIX.size:
        return -1
    magic = _PREFIX.unpack_from(head, 0)[3]
    if magic == 2 and len(head) >= _V2_FIRST_TIMESTAMP_POS + 8:
        return _V2_FIRST_TIMESTAMP.unpack_from(head, _V2_FIRST_TIMESTAMP_POS)[0]
    if magic == 1 and len(head) >= _V1_TIMESTAMP_POS + 8:
        return _V2_FIRST_TIMESTAMP.unpack_from(head, _V1_TIMESTAMP_POS)[0]
    return -1


def index_entries(segment: LogSegment, limit: int) -> dict[str, Any]:
    offsets = [
        {"offset": e.offset, "position": e.position}
        for e in itertools.islice(segment.offset_index, limit)
    ]
    times = [
        {"timestamp": e.timestamp, "offset": e.offset}
        for e in itertools.islice(segment.time_index, limit)
    ]
    return {
        "limit": limit,
        "offset_index": offsets,
        "time_index": times,
        "truncated": segment.offset_index.entries > limit or segment.time_index.entries > limit,
    }


# Retention forecast ---------------------------------------------------------------------
def retention_forecast(log: Log, segments: list[LogSegment], now_ms: int) -> list[dict]:
    config = log.config
    rules = retention.applicable_rules(log, now_ms)
    time_applies = retention.BY_TIME in rules
    size_applies = retention.BY_SIZE in rules
    by_time = _prefix(log, rules.get(retention.BY_TIME))
    by_start = _prefix(log, rules[retention.BY_LOG_START])
    by_size = _prefix(log, rules.get(retention.BY_SIZE))
    excess = sum(s.size for s in segments) - config.retention_bytes
    out = []
    time_due = 0
    cumulative = 0
    blocked: str | None = None
    for i, segment in enumerate(segments):
        following = segments[i + 1] if i + 1 < len(segments) else None
        upper = following.base_offset if following else log.log_end_offset
        if blocked is None:
            if following is None and segment.size == 0:
                blocked = "empty active segment"
            elif log.high_watermark < upper:
                blocked = "high watermark"
        cumulative += segment.size
        # A segment can only go after every older one: its due time is the latest of theirs.
        time_due = max(time_due, segment.largest_timestamp + config.retention_ms + 1)
        reasons = [
            reason
            for reason, doomed, applies in (
                ("retention.ms", by_time, time_applies),
                ("retention.bytes", by_size, size_applies),
                ("log_start_offset", by_start, True),
            )
            if applies and id(segment) in doomed
        ]
        out.append(
            {
                "deletable_now": bool(reasons),
                "reasons": reasons,
                "blocked_by": blocked,
                "retention_ms": {
                    "applies": time_applies,
                    "breached": time_applies and id(segment) in by_time,
                    "eligible_at_ms": time_due if time_applies else None,
                },
                "retention_bytes": {
                    "applies": size_applies,
                    "breached": size_applies and id(segment) in by_size,
                    # Bytes the log must still grow by before size retention takes it.
                    "bytes_until_eligible": max(cumulative - excess, 0) if size_applies else None,
                },
                "log_start_offset": {"breached": id(segment) in by_start},
            }
        )
    return out


def _prefix(log: Log, make_predicate) -> set[int]:
    """The segments the rule would delete now (none when the rule does not apply)."""
    if make_predicate is None:
        return set()
    return {id(s) for s in retention.deletable_segments(log, make_predicate())}


# Compaction -----------------------------------------------------------------------------
def _compaction_sections(
    log: Log, segments: list[LogSegment], cleaner: LogCleanerManager | None, now_ms: int
) -> list[str] | None:
    """Per segment: clean (already compacted), dirty (the next pass compacts it) or
    uncleanable (the active segment, above the HW, or younger than min.compaction.lag.ms)."""
    if not log.config.compact or cleaner is None:
        return None
    stats = cleaner.dirty_stats_for(log, now_ms)
    sections = []
    for i, segment in enumerate(segments):
        following = segments[i + 1] if i + 1 < len(segments) else None
        upper = following.base_offset if following else log.log_end_offset
        if upper <= stats.first_dirty_offset:
            sections.append("clean")
        elif segment.base_offset >= stats.first_uncleanable_offset:
            sections.append("uncleanable")
        else:
            sections.append("dirty")
    return sections
