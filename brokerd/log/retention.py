"""Retention for `cleanup.policy=delete`: whole old segments go, never single records.

Three rules, each a predicate over (segment, next segment) applied from the oldest segment
forward until one fails, as Kafka's deleteOldSegments does:
- time: the segment's largest record timestamp (its mtime when it has none) is older
  than retention.ms;
- size: the log is larger than retention.bytes by at least the segment's size;
- log start offset: the next segment starts at or below the log start offset
  (DeleteRecords), which applies whatever the cleanup policy.
Only segments wholly below the last stable offset are deleted: below the high watermark, as
Kafka, and also never past the start of a transaction still open there (the issue's rule;
Kafka bounds by the high watermark alone, so retention could delete the first records of a
transaction that later commits and make it half visible). The cleaner stops at the same
bound, so a hanging transaction holds back both until it is ended (`brokerd transactions
find-hanging` / `abort`); a DeleteRecords below it still applies (the log start offset rule).
The work is O(segments).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from .log import Log
from .segment import LogSegment

Predicate = Callable[[LogSegment, LogSegment | None], bool]


@dataclass
class RetentionReport:
    topic: str
    partition: int
    segments_deleted: int = 0
    bytes_freed: int = 0
    log_start_offset: int = 0
    reasons: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return asdict(self)


def deletable_segments(log: Log, predicate: Predicate) -> list[LogSegment]:
    segments = log.segments
    stable = log.last_stable_offset
    doomed = []
    for i, segment in enumerate(segments):
        following = segments[i + 1] if i + 1 < len(segments) else None
        is_last_and_empty = following is None and segment.size == 0
        upper = following.base_offset if following else log.log_end_offset
        if is_last_and_empty or stable < upper or not predicate(segment, following):
            break
        doomed.append(segment)
    return doomed


def _time_breached(log: Log, now_ms: int) -> Predicate:
    retention_ms = log.config.retention_ms

    def predicate(segment: LogSegment, _following: LogSegment | None) -> bool:
        return now_ms - segment.largest_timestamp > retention_ms

    return predicate


def _size_breached(log: Log) -> Predicate:
    excess = log.size - log.config.retention_bytes

    def predicate(segment: LogSegment, _following: LogSegment | None) -> bool:
        nonlocal excess
        if excess - segment.size >= 0:
            excess -= segment.size
            return True
        return False

    return predicate


def _start_offset_breached(log: Log) -> Predicate:
    def predicate(_segment: LogSegment, following: LogSegment | None) -> bool:
        return following is not None and following.base_offset <= log.log_start_offset

    return predicate


BY_TIME = "retention.ms"
BY_SIZE = "retention.bytes"
BY_LOG_START = "log start offset"


def applicable_rules(log: Log, now_ms: int) -> dict[str, Callable[[], Predicate]]:
    """The rules that apply to this log, in the order they run: reason -> a fresh predicate
    (the size rule counts down as it goes, so each pass needs its own)."""
    rules: dict[str, Callable[[], Predicate]] = {}
    if log.config.delete:
        if log.config.retention_ms >= 0:
            rules[BY_TIME] = lambda: _time_breached(log, now_ms)
        if log.config.retention_bytes >= 0:
            rules[BY_SIZE] = lambda: _size_breached(log)
    rules[BY_LOG_START] = lambda: _start_offset_breached(log)
    return rules


def delete_old_segments(log: Log, now_ms: int | None = None) -> RetentionReport:
    """Run every retention rule that applies to the log once; report what went."""
    now = log.now_ms() if now_ms is None else now_ms
    report = RetentionReport(log.topic, log.partition)
    for reason, make_predicate in applicable_rules(log, now).items():
        doomed = deletable_segments(log, make_predicate())
        if not doomed:
            continue
        deleted = log.delete_segments(doomed, reason)
        report.segments_deleted += deleted.count
        report.bytes_freed += deleted.bytes
        report.reasons[reason] = report.reasons.get(reason, 0) + deleted.count
    report.log_start_offset = log.log_start_offset
    return report
