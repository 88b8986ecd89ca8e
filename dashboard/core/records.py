"""Browse a topic's records a page at a time, and produce one: the REST API's `records`
resource and the message browser page share this.

A browse never loads the topic: each partition is positioned through the Kafka protocol
(ListOffsets for a timestamp, the broker's offset index for an offset), read forward one
bounded fetch at a time and merged across partitions in timestamp order, until `limit`
records matched or `max_scan` were read or SCAN_TIME_BUDGET_S passed; the answer says how
far each partition got and gives a cursor to go on from there. `from_end=N` starts at the
newest N records of the topic (or partition), found by reading backwards from the high
watermarks a chunk at a time: records are counted, not offsets, so compaction gaps and
control batches do not shorten it.
"""

from __future__ import annotations

import asyncio
import base64
import heapq
import math
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from django.http import Http404

from brokerd.client.consumer import ConsumerRecord
from brokerd.client.partitioner import partition_for_key

from .kafka import EARLIEST, LATEST, KafkaOps
from .record_expr import compile_filter
from .record_scan import SkippedBatch

SCAN_TIME_BUDGET_S = 5.0
# The scan runs on a client's event loop that other requests share: it lets them in this
# often (in records) between its fetches.
YIELD_EVERY = 2000
# Per partition, the first fetch of a browse is small (a page of records needs little) and
# each next one four times larger, up to MAX_FETCH_BYTES; one request asks for at most
# REQUEST_BYTES over all its partitions, so memory is bounded whatever the partition count.
FIRST_FETCH_BYTES = 64 << 10
MAX_FETCH_BYTES = 1 << 20
REQUEST_BYTES = 8 << 20
MIN_PARTITION_BYTES = 16 << 10
# Reading backwards for from_end: chunks of offsets, doubling while a partition is read
# further back, never more than this many offsets at once.
MAX_BACK_CHUNK = 10_000
BACK_READS_AT_ONCE = 8
# A partition whose fetches keep coming back empty below its high watermark (a leader that
# lost its tail, say) is left where it is after this many tries, never spun on.
MAX_EMPTY_FETCHES = 3


# Rendering ---------------------------------------------------------------------------------
def render_bytes(data: bytes | None) -> dict | None:
    """REST Proxy v3's shape: UTF-8 text as STRING, anything else as base64 BINARY."""
    if data is None:
        return None
    try:
        return {"type": "STRING", "data": data.decode("utf-8"), "size": len(data)}
    except UnicodeDecodeError:
        return {"type": "BINARY", "data": base64.b64encode(data).decode(), "size": len(data)}


def render_record(record: ConsumerRecord) -> dict:
    return {
        "partition_id": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": render_bytes(record.key),
        "value": render_bytes(record.value),
        "headers": [
            {"name": name, "value": None if value is None else base64.b64encode(value).decode()}
            for name, value in record.headers
        ],
    }


# Filters -------------------------------------------------------------------------------------
def _bytes_test(needle: str, mode: str, field_name: str) -> Callable[[ConsumerRecord], bool]:
    wanted = needle.encode("utf-8")
    if mode == "substring":

        def contains(record) -> bool:
            data = getattr(record, field_name)
            return data is not None and wanted in data

        return contains

    def equals(record) -> bool:
        return getattr(record, field_name) == wanted

    return equals


def filter_needles(query: dict) -> tuple[bytes, ...]:
    """Byte strings every matching record's key or value holds (exact or substring alike):
    a batch without one of them has no match and need not be decoded (record_scan)."""
    return tuple(query[n].encode("utf-8") for n in ("key", "value") if query.get(n))


def record_filter(query: dict) -> Callable[[ConsumerRecord], bool] | None:
    """The conjunction of the query's key, value and expression filters (None: none set).
    `key`/`value` match the UTF-8 bytes exactly, or as a substring with
    `key_match`/`value_match=substring`; `filter` is an expression (record_expr)."""
    tests = []
    if query.get("key") is not None:
        tests.append(_bytes_test(query["key"], query.get("key_match", "exact"), "key"))
    if query.get("value") is not None:
        tests.append(_bytes_test(query["value"], query.get("value_match", "exact"), "value"))
    if query.get("filter"):
        tests.append(compile_filter(query["filter"]))
    if not tests:
        return None
    if len(tests) == 1:
        return tests[0]
    return lambda record: all(test(record) for test in tests)


# Cursors ------------------------------------------------------------------------------------
def format_cursor(positions: dict[int, int]) -> str:
    """`partition:offset,...`: where each partition goes on."""
    return ",".join(f"{p}:{o}" for p, o in sorted(positions.items()))


def parse_cursor(text: str, max_partitions: int = 10_000) -> dict[int, int]:
    positions: dict[int, int] = {}
    for item in filter(None, text.split(",")):
        partition, sep, offset = item.partition(":")
        if not sep or not partition.isdigit() or not offset.isdigit():
            raise ValueError(f"{item!r} is not partition:offset")
        if len(positions) >= max_partitions:
            raise ValueError(f"at most {max_partitions} partitions")
        positions[int(partition)] = int(offset)
    if not positions:
        raise ValueError("a cursor names at least one partition:offset")
    return positions


# Reading ------------------------------------------------------------------------------------
@dataclass
class _Partition:
    id: int
    position: int  # the next offset to read
    end: int  # the high watermark when the browse began: nothing at or past it is read
    items: Iterator = field(default_factory=lambda: iter(()))  # the last fetch's, lazily
    head: ConsumerRecord | SkippedBatch | None = None  # the next of them
    fetch_bytes: int = FIRST_FETCH_BYTES
    empty_fetches: int = 0

    @property
    def done(self) -> bool:
        return self.position >= self.end and self.head is None

    def take(self) -> ConsumerRecord | SkippedBatch:
        item = self.head
        self.head = next(self.items, None)
        return item


def _partition_bytes(size: int, count: int) -> int:
    return max(MIN_PARTITION_BYTES, min(size, REQUEST_BYTES // max(1, count)))


async def _fill(
    ops: KafkaOps, topic: str, parts: list[_Partition], needles: tuple[bytes, ...] = ()
) -> None:
    """One fetch for every partition in `parts` (each below its end, buffer empty); with
    `needles`, batches that lack one come as SkippedBatch items."""
    size = _partition_bytes(max(p.fetch_bytes for p in parts), len(parts))
    positions = {p.id: p.position for p in parts}
    ends = {p.id: p.end for p in parts}
    answers = await ops.fetch(topic, positions, size, REQUEST_BYTES, needles, ends)
    for part in parts:
        data = answers[part.id]
        part.items = iter(data.records)
        part.head = next(part.items, None)
        advanced = max(part.position, min(data.next_offset, part.end))
        if part.head is None and advanced == part.position:
            part.empty_fetches += 1
            if part.empty_fetches >= MAX_EMPTY_FETCHES:
                part.end = part.position  # nothing readable below the watermark: stop here
        else:
            part.empty_fetches = 0
        if part.head is None:
            part.position = advanced  # past control batches and compaction gaps
        part.fetch_bytes = min(part.fetch_bytes * 4, MAX_FETCH_BYTES)


async def _read_back(
    ops: KafkaOps, topic: str, part: _Partition, lower: int, start: int
) -> list[ConsumerRecord]:
    """The records with start <= offset < lower, oldest first."""
    records: list[ConsumerRecord] = []
    position, empty, size = start, 0, FIRST_FETCH_BYTES
    while position < lower:
        data = (await ops.fetch(topic, {part.id: position}, size, size, (), {part.id: lower}))[
            part.id
        ]
        size = min(size * 4, MAX_FETCH_BYTES)
        chunk = list(data.records)
        records.extend(chunk)
        advanced = max(position, data.next_offset)
        if chunk:
            advanced = max(advanced, chunk[-1].offset + 1)
        if advanced == position:
            empty += 1
            if empty >= MAX_EMPTY_FETCHES:
                break
        position = advanced
    return records


async def _starts_from_end(
    ops: KafkaOps, topic: str, parts: list[_Partition], low: dict[int, int], count: int
) -> dict[int, int]:
    """Where each partition starts so that exactly the newest `count` records of them all
    (fewer if they hold fewer) lie ahead: a merge backwards in time over the partitions'
    tails, so each partition contributes its own newest records."""
    starts = {p.id: p.end for p in parts}
    if count <= 0:
        return starts
    step = {p.id: min(count, max(8, math.ceil(2 * count / len(parts)))) for p in parts}
    lower = {p.id: p.end for p in parts}  # the oldest offset read so far, per partition
    tails: dict[int, list[ConsumerRecord]] = {p.id: [] for p in parts}
    heap: list[tuple[int, int, int]] = []
    by_id = {p.id: p for p in parts}
    chosen = 0

    reading = asyncio.Semaphore(BACK_READS_AT_ONCE)

    async def read_tail(part: _Partition) -> None:
        records: list[ConsumerRecord] = []
        while not records and lower[part.id] > low[part.id]:
            start = max(low[part.id], lower[part.id] - step[part.id])
            async with reading:
                records = await _read_back(ops, topic, part, lower[part.id], start)
            lower[part.id] = start
            step[part.id] = min(step[part.id] * 2, MAX_BACK_CHUNK)
        tails[part.id] = records
        if records:
            newest = records[-1]
            heapq.heappush(heap, (-newest.timestamp, -part.id, -newest.offset))

    await asyncio.gather(*(read_tail(p) for p in parts))
    while chosen < count and heap:
        _, negative_id, _ = heapq.heappop(heap)
        pid = -negative_id
        record = tails[pid].pop()
        starts[pid] = record.offset
        chosen += 1
        if tails[pid]:
            newest = tails[pid][-1]
            heapq.heappush(heap, (-newest.timestamp, negative_id, -newest.offset))
        elif chosen < count:
            await read_tail(by_id[pid])
    return starts


@dataclass
class BrowseResult:
    records: list[ConsumerRecord]
    scan: dict


async def browse_records(ops: KafkaOps, topic: str, query: dict) -> BrowseResult:
    """A page of records as the query asks (the validated BrowseQuerySerializer fields)."""
    metadata = await ops.refresh([topic])
    info = metadata.topics.get(topic)
    if info is None:
        raise Http404(f"topic {topic!r} not found")
    wanted = query.get("partition_id")
    if wanted is not None and wanted not in info.partitions:
        raise Http404(f"partition {wanted} not found")
    ids = [wanted] if wanted is not None else sorted(info.partitions)
    # The bounds and, from a time, the offsets for it: asked at once, not one after another.
    asked = [ops.list_offsets(topic, ids, LATEST), ops.list_offsets(topic, ids, EARLIEST)]
    if "cursor" not in query and "timestamp" in query:
        asked.append(ops.list_offsets(topic, ids, query["timestamp"]))
    high, low, *by_time = await asyncio.gather(*asked)
    for answers in (high, low):
        for result in answers.values():
            if isinstance(result, Exception):
                raise result
    parts = [_Partition(p, high[p], high[p]) for p in ids]

    def clamp(p: int, offset: int) -> int:
        return min(max(offset, low[p]), high[p])

    if "cursor" in query:
        starts = {p: clamp(p, query["cursor"].get(p, low[p])) for p in ids}
    elif "timestamp" in query:
        (found,) = by_time
        starts = {p: high[p] if found[p] in (-1, None) else clamp(p, found[p]) for p in ids}
    elif "offset" in query:
        starts = {p: clamp(p, query["offset"]) for p in ids}
    elif "from_end" in query:
        starts = await _starts_from_end(ops, topic, parts, low, query["from_end"])
    else:
        starts = dict(low)
    for part in parts:
        part.position = starts[part.id]

    matches = record_filter(query)
    needles = filter_needles(query)
    limit, max_scan = query["limit"], query["max_scan"]
    deadline = time.monotonic() + SCAN_TIME_BUDGET_S
    matched: list[ConsumerRecord] = []
    scanned, stopped_by, next_yield = 0, None, YIELD_EVERY
    heap: list[tuple[int, int, int]] = []
    pending = [p for p in parts if not p.done]
    by_id = {p.id: p for p in parts}
    while True:
        if len(matched) >= limit:
            stopped_by = "limit"
            break
        if scanned >= max_scan:
            stopped_by = "max_scan"
            break
        if scanned >= next_yield:
            next_yield = scanned + YIELD_EVERY
            await asyncio.sleep(0)
            if time.monotonic() > deadline:
                stopped_by = "time"
                break
        if pending:
            if time.monotonic() > deadline:
                stopped_by = "time"
                break
            await _fill(ops, topic, pending, needles)
            refilled, pending = pending, []
            for part in refilled:
                if part.head is not None:
                    head = part.head
                    heapq.heappush(heap, (head.timestamp, part.id, head.offset))
                elif not part.done:
                    pending.append(part)  # only a gap so far: read on before merging
            if pending:
                continue
        if not heap:
            break
        _, pid, _ = heapq.heappop(heap)
        part = by_id[pid]
        record = part.head
        if isinstance(record, SkippedBatch):
            if scanned and scanned + record.count > max_scan:
                # A batch is skipped whole or not at all: this one is for the next page
                # (the first of a page is always taken, so paging moves on).
                stopped_by = "max_scan"
                break
            part.take()
            part.position = record.next_offset
            scanned += record.count
        else:
            part.take()
            part.position = record.offset + 1
            scanned += 1
            if matches is None or matches(record):
                matched.append(record)
        if part.head is not None:
            head = part.head
            heapq.heappush(heap, (head.timestamp, pid, head.offset))
        elif not part.done:
            pending.append(part)
    complete = all(p.position >= p.end for p in parts)
    positions = {p.id: p.position for p in parts}
    scan = {
        "complete": complete,
        "stopped_by": None if complete else stopped_by,
        "scanned_records": scanned,
        "matched_records": len(matched),
        "next_cursor": format_cursor(positions),
        "partitions": [
            {
                "partition_id": p.id,
                "start_offset": starts[p.id],
                "next_offset": p.position,
                "high_watermark": high[p.id],
                "log_start_offset": low[p.id],
                "remaining": max(0, high[p.id] - p.position),
            }
            for p in parts
        ],
    }
    return BrowseResult(matched, scan)


async def browse(ops: KafkaOps, topic: str, query: dict) -> dict:
    """browse_records rendered for JSON: {"data": [records], "scan": {...}}."""
    result = await browse_records(ops, topic, query)
    return {"data": [render_record(r) for r in result.records], "scan": result.scan}


# Producing ----------------------------------------------------------------------------------
async def produce_record(
    ops: KafkaOps,
    topic: str,
    partition: int | None,
    key: bytes | None,
    value: bytes | None,
    headers: Iterable[tuple[str, bytes | None]] = (),
) -> tuple[int, int]:
    """Append one record (acks=all): (partition, offset). Without a partition, the key's
    partition as Kafka's default partitioner picks it, or 0 for no key."""
    metadata = await ops.refresh([topic])
    info = metadata.topics.get(topic)
    if info is None:
        raise Http404(f"topic {topic!r} not found")
    if partition is None:
        partition = partition_for_key(key, len(info.partitions)) if key else 0
    elif partition not in info.partitions:
        raise Http404(f"partition {partition} not found")
    return partition, await ops.produce(topic, partition, key, value, list(headers))
