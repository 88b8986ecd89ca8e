"""Turning the reader's options into offset ranges, one per topic-partition, on the driver.

The options are Spark's Kafka source options: `subscribe`, `subscribePattern` or `assign`;
`startingOffsets` / `endingOffsets` ("earliest", "latest", or JSON such as
`{"topic": {"0": 23, "1": -2}}` where -2 is earliest and -1 latest); `startingTimestamp`,
`startingOffsetsByTimestamp`, `endingTimestamp`, `endingOffsetsByTimestamp` (resolved with
ListOffsets by timestamp); `maxRecordsPerPartition` and `minPartitions` (splitting);
`failOnDataLoss`; `kafka.isolation.level` (read_committed, the default here, or
read_uncommitted). Every range ends at or below the high watermark, and for read_committed
at or below the last stable offset (no open transaction's records are read).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from brokerd.client import SyncClient

EARLIEST = -2
LATEST = -1
DEFAULT_MAX_RECORDS_PER_PARTITION = 1_000_000

TopicPartition = tuple[str, int]


class OptionError(ValueError):
    """An option the source cannot honour; the message names it."""


@dataclass(frozen=True)
class OffsetRange:
    topic: str
    partition: int
    start: int  # inclusive
    end: int  # exclusive, at or below the high watermark when planned

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def option(options: Mapping[str, str], name: str, default: str | None = None) -> str | None:
    """Spark passes options case-insensitively (lower-cased keys); accept both spellings."""
    if name in options:
        return options[name]
    return options.get(name.lower(), default)


ISOLATION_LEVELS = {"read_uncommitted": 0, "read_committed": 1}
DEFAULT_ISOLATION = "read_committed"


def isolation_level(options: Mapping[str, str]) -> int:
    """`kafka.isolation.level` as Spark's Kafka source names it: 1 for read_committed (the
    default: aborted records and markers are never read), 0 for read_uncommitted."""
    value = (option(options, "kafka.isolation.level", DEFAULT_ISOLATION) or "").strip().lower()
    if value not in ISOLATION_LEVELS:
        raise OptionError(
            f"kafka.isolation.level must be read_committed or read_uncommitted, not {value!r}"
        )
    return ISOLATION_LEVELS[value]


def subscribed_topics(client: SyncClient, options: Mapping[str, str]) -> list[str]:
    chosen = [name for name in ("subscribe", "subscribePattern", "assign") if option(options, name)]
    if len(chosen) != 1:
        raise OptionError("exactly one of subscribe, subscribePattern or assign is required")
    if chosen[0] == "subscribe":
        topics = [t.strip() for t in option(options, "subscribe").split(",") if t.strip()]
        if not topics:
            raise OptionError("subscribe names no topic")
        return topics
    if chosen[0] == "assign":
        return sorted(_json_option(options, "assign"))
    try:
        pattern = re.compile(option(options, "subscribePattern"))
    except re.error as exc:
        raise OptionError(f"subscribePattern is not a regular expression: {exc}") from None
    return [t for t in client.admin.list_topics() if pattern.fullmatch(t)]


def topic_partitions(client: SyncClient, options: Mapping[str, str]) -> list[TopicPartition]:
    if option(options, "assign"):
        assigned = _json_option(options, "assign")
        return sorted((t, int(p)) for t, ps in assigned.items() for p in ps)
    found = client.admin.describe_topics(subscribed_topics(client, options))
    return sorted((name, p) for name, info in found.items() for p in info.partitions)


def plan_ranges(client: SyncClient, options: Mapping[str, str]) -> list[OffsetRange]:
    """The offset ranges to read, split by `maxRecordsPerPartition` / `minPartitions`."""
    partitions = topic_partitions(client, options)
    if not partitions:
        return []
    earliest = _listed(client, dict.fromkeys(partitions, "earliest"))
    # "latest" under read_committed is the last stable offset (ListOffsets isolation 1).
    latest = _listed(client, dict.fromkeys(partitions, "latest"), isolation_level(options))
    starts = _resolve(client, options, "starting", partitions, earliest, latest, EARLIEST)
    ends = _resolve(client, options, "ending", partitions, earliest, latest, LATEST)
    fail_on_data_loss = (option(options, "failOnDataLoss", "true") or "true").lower() != "false"
    ranges = []
    for tp in partitions:
        start, end = starts[tp], min(ends[tp], latest[tp])
        if start < earliest[tp]:
            if fail_on_data_loss:
                raise OptionError(
                    f"{tp[0]}-{tp[1]}: starting offset {start} is below the log start "
                    f"offset {earliest[tp]} (records deleted); set failOnDataLoss=false "
                    "to start at the log start instead"
                )
            start = earliest[tp]
        ranges.append(OffsetRange(tp[0], tp[1], start, max(start, end)))
    return split_ranges(
        ranges,
        _int_option(options, "maxRecordsPerPartition", DEFAULT_MAX_RECORDS_PER_PARTITION),
        _int_option(options, "minPartitions", 0),
    )


def split_ranges(
    ranges: list[OffsetRange], max_records: int, min_partitions: int = 0
) -> list[OffsetRange]:
    """Split ranges so none holds more than `max_records` offsets, and so that there are at
    least `min_partitions` pieces (larger ranges get more pieces), empty ranges dropped."""
    ranges = [r for r in ranges if r.size > 0]
    total = sum(r.size for r in ranges)
    pieces: list[OffsetRange] = []
    for r in ranges:
        count = math.ceil(r.size / max_records) if max_records > 0 else 1
        if min_partitions > len(ranges) and total:
            count = max(count, math.ceil(min_partitions * r.size / total))
        count = min(count, r.size)
        bounds = [r.start + (r.size * i) // count for i in range(count + 1)]
        pieces.extend(
            OffsetRange(r.topic, r.partition, lo, hi)
            for lo, hi in zip(bounds, bounds[1:], strict=False)
        )
    return pieces


def _resolve(
    client: SyncClient,
    options: Mapping[str, str],
    which: str,
    partitions: list[TopicPartition],
    earliest: dict[TopicPartition, int],
    latest: dict[TopicPartition, int],
    default: int,
) -> dict[TopicPartition, int]:
    """Per partition, the start (which="starting") or end offset the options ask for."""
    by_timestamp = _by_timestamp(options, which, partitions)
    if by_timestamp:
        found = _listed(client, by_timestamp)
        # No record at or after the timestamp: nothing to read there (the high watermark).
        resolved = {tp: (o if o >= 0 else latest[tp]) for tp, o in found.items()}
        return {tp: resolved.get(tp, _pick(default, earliest, latest, tp)) for tp in partitions}
    spec = option(options, f"{which}Offsets")
    if spec is None:
        return {tp: _pick(default, earliest, latest, tp) for tp in partitions}
    spec = spec.strip()
    if spec in ("earliest", "latest"):
        if which == "ending" and spec == "earliest":
            raise OptionError("endingOffsets=earliest would read nothing; use latest or JSON")
        chosen = EARLIEST if spec == "earliest" else LATEST
        return {tp: _pick(chosen, earliest, latest, tp) for tp in partitions}
    requested = _partition_json(f"{which}Offsets", spec)
    unknown = set(requested) - set(partitions)
    if unknown:
        raise OptionError(f"{which}Offsets names partitions not subscribed: {sorted(unknown)}")
    return {tp: _pick(requested.get(tp, default), earliest, latest, tp) for tp in partitions}


def _pick(value: int, earliest, latest, tp: TopicPartition) -> int:
    if value == EARLIEST:
        return earliest[tp]
    if value == LATEST:
        return latest[tp]
    if value < 0:
        raise OptionError(f"{tp[0]}-{tp[1]}: offset {value} is neither -2, -1 nor >= 0")
    return value


def _by_timestamp(
    options: Mapping[str, str], which: str, partitions: list[TopicPartition]
) -> dict[TopicPartition, int]:
    per_partition = option(options, f"{which}OffsetsByTimestamp")
    if per_partition:
        return _partition_json(f"{which}OffsetsByTimestamp", per_partition)
    everywhere = option(options, f"{which}Timestamp")
    if everywhere:
        try:
            timestamp = int(everywhere)
        except ValueError:
            raise OptionError(f"{which}Timestamp must be milliseconds since the epoch") from None
        return dict.fromkeys(partitions, timestamp)
    return {}


def _partition_json(name: str, text: str) -> dict[TopicPartition, int]:
    try:
        parsed = json.loads(text)
        return {
            (topic, int(p)): int(value)
            for topic, values in parsed.items()
            for p, value in values.items()
        }
    except (ValueError, AttributeError, TypeError):
        raise OptionError(
            f'{name} must be earliest, latest or JSON like {{"topic": {{"0": 23}}}}'
        ) from None


def _json_option(options: Mapping[str, str], name: str) -> dict:
    try:
        parsed = json.loads(option(options, name))
    except ValueError:
        raise OptionError(f"{name} is not JSON") from None
    if not isinstance(parsed, dict):
        raise OptionError(f'{name} must be JSON like {{"topic": [0, 1]}}')
    return parsed


def _int_option(options: Mapping[str, str], name: str, default: int) -> int:
    value = option(options, name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise OptionError(f"{name} must be an integer") from None


def _listed(client: SyncClient, specs: dict, isolation: int = 0) -> dict[TopicPartition, int]:
    listed = client.admin.list_offsets(specs, isolation_level=isolation)
    return {tp: found.offset for tp, found in listed.items()}
