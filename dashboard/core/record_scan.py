"""Fetch answers decoded lazily, a record when the browse asks for it, and only the records
that may match a key or value filter.

A fetch returns whole batches (a librdkafka producer writes ~1 MB ones, thousands of
records), and decoding a record costs microseconds of Python (varints), so a page of 50
records must not decode the batch around them:

* records before the fetch offset, in the batch a fetch starts inside, are stepped over by
  their length prefix (and offset delta, where compaction left gaps in the batch);
* records are decoded as the browse takes them, and not past what it takes;
* with byte strings that every match holds (the key and value filters' text): a batch
  whose records section lacks one holds no match and is counted, never decoded; in the
  others only the records whose bytes hold an occurrence are decoded, the rest stepped over.

Each batch is CRC-checked before any of it is used. Legacy (v0/v1) message sets are decoded
by the client's decode_partition; control batches are passed over as it does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from brokerd.client.consumer import Consumer, ConsumerRecord, PartitionData, decode_partition
from brokerd.client.errors import ErrorCode, KafkaResponseError, error_code
from brokerd.records import compression, iter_entries
from brokerd.records.batch import CorruptRecordError, RecordBatch, _decode_record
from brokerd.records.varint import VarintError, decode_unsigned


class SkippedBatch(NamedTuple):
    """Consecutive records known not to match: where they start and end, how many."""

    partition: int
    offset: int  # the batch's base offset (orders it among partitions with `timestamp`)
    timestamp: int  # the batch's first timestamp, for merging in time order
    next_offset: int  # the offset after them
    count: int


def _varint(payload: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint, fast for the usual one byte."""
    raw = payload[pos]
    if raw < 0x80:
        pos += 1
    else:
        raw, pos = decode_unsigned(payload, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def _record_span(payload: bytes, pos: int) -> tuple[int, int]:
    """(start of the record's body, end of the record) of the record at `pos`."""
    try:
        length, body = _varint(payload, pos)
    except (VarintError, IndexError) as exc:
        raise CorruptRecordError(f"malformed record length: {exc}") from exc
    end = body + length
    if length < 0 or end > len(payload):
        raise CorruptRecordError(f"record length {length} runs past the batch")
    return body, end


def _offset_delta(payload: bytes, body: int) -> int:
    """The offset delta of a record whose body starts at `body` (after its attributes byte
    and timestamp delta)."""
    try:
        _, pos = _varint(payload, body + 1)
        delta, _ = _varint(payload, pos)
    except (VarintError, IndexError) as exc:
        raise CorruptRecordError(f"malformed record header: {exc}") from exc
    return delta


class _BatchRecords:
    """The records of one v2 batch, from its payload, decoded one at a time."""

    def __init__(self, topic: str, partition: int, batch: RecordBatch):
        self.topic = topic
        self.partition = partition
        self.batch = batch
        self.payload = batch.records_payload()
        self.count = batch.record_count
        self.pos = 0
        self.index = 0  # records passed so far

    def seek(self, offset: int) -> None:
        """Step over the records below `offset` without decoding them."""
        batch = self.batch
        if offset <= batch.base_offset:
            return
        if self.count == batch.last_offset_delta + 1:
            # Numbered 0..n-1 (nothing compacted away): the first k records go.
            self.skip(min(offset - batch.base_offset, self.count) - self.index)
            return
        while self.index < self.count:
            body, end = _record_span(self.payload, self.pos)
            if batch.base_offset + _offset_delta(self.payload, body) >= offset:
                return
            self.pos = end
            self.index += 1

    def skip(self, count: int) -> None:
        """Step over `count` records by their length prefixes (the hot loop of a seek into
        a large batch: one- and two-byte lengths read inline)."""
        payload, pos = self.payload, self.pos
        size = len(payload)
        for _ in range(count):
            if pos >= size:
                raise CorruptRecordError("the batch holds fewer records than it says")
            raw = payload[pos]
            if raw < 0x80:
                pos += 1
            elif pos + 1 < size and payload[pos + 1] < 0x80:
                raw = (raw & 0x7F) | (payload[pos + 1] << 7)
                pos += 2
            else:
                try:
                    raw, pos = decode_unsigned(payload, pos)
                except VarintError as exc:
                    raise CorruptRecordError(f"malformed record length: {exc}") from exc
            if raw & 1:
                raise CorruptRecordError("negative record length")
            pos += raw >> 1
        if pos > size:
            raise CorruptRecordError("a record runs past the batch")
        self.pos = pos
        self.index += count

    def step(self) -> int:
        """Step over the next record; where it ends."""
        _, end = _record_span(self.payload, self.pos)
        self.pos = end
        self.index += 1
        return end

    def decode(self) -> ConsumerRecord:
        record, self.pos = _decode_record(
            self.payload, self.pos, self.batch.base_offset, self.batch
        )
        self.index += 1
        return ConsumerRecord(
            self.topic,
            self.partition,
            record.offset,
            record.timestamp,
            self.batch.timestamp_type,
            record.key,
            record.value,
            tuple((h.key, h.value) for h in record.headers),
        )

    def skipped(self, count: int, next_offset: int) -> SkippedBatch:
        batch = self.batch
        return SkippedBatch(
            self.partition, batch.base_offset, batch.first_timestamp, next_offset, count
        )


def _lacks(batch: RecordBatch, needles: tuple[bytes, ...]) -> bool:
    if batch.compression == compression.NONE:
        start, end = batch.pos, batch.pos + batch.size
        return any(batch.buf.find(n, start, end) < 0 for n in needles)
    payload = batch.records_payload()
    return any(n not in payload for n in needles)


def _matching(records: _BatchRecords, needle: bytes) -> Iterator:
    """The records whose bytes hold `needle`, decoded, and SkippedBatch items for the runs
    between them."""
    hit, skipped = -1, 0
    while records.index < records.count:
        if hit < records.pos:
            hit = records.payload.find(needle, records.pos)
            if hit < 0:
                skipped += records.count - records.index  # none of the rest can match
                break
        start = records.pos
        end = _record_span(records.payload, start)[1]
        if hit >= end:
            records.step()
            skipped += 1
            continue
        record = records.decode()
        if skipped:
            yield records.skipped(skipped, record.offset)
            skipped = 0
        yield record
    if skipped:
        yield records.skipped(skipped, records.batch.next_offset)


def iter_items(
    topic: str,
    partition: int,
    data: bytes,
    fetch_offset: int,
    high_watermark: int,
    end: int,
    needles: tuple[bytes, ...] = (),
) -> Iterator:
    """The records at or after `fetch_offset` and below `end` (<= the high watermark), in
    offset order, decoded as they are taken; with `needles`, SkippedBatch items stand for
    records that cannot match."""
    for entry in iter_entries(data):
        if not isinstance(entry, RecordBatch):
            records, _ = decode_partition(topic, partition, entry.bytes(), fetch_offset, end)
            yield from records
            continue
        if entry.base_offset >= end:
            return
        if entry.is_control or entry.next_offset <= fetch_offset:
            continue
        entry.validate()  # CRC-32C, before anything of the batch is used
        batch = _BatchRecords(topic, partition, entry)
        whole = needles and entry.base_offset >= fetch_offset and entry.last_offset < end
        if whole and _lacks(entry, needles):
            yield batch.skipped(batch.count, entry.next_offset)
            continue
        if whole:
            yield from _matching(batch, max(needles, key=len))
            continue
        batch.seek(fetch_offset)
        while batch.index < batch.count:
            record = batch.decode()
            if record.offset >= end:
                return
            yield record


def _reported(topic: str, partition: int, items: Iterator) -> Iterator:
    """A corrupt batch found while iterating is the broker's answer CORRUPT_MESSAGE, as the
    client reports it for a batch it decodes at once."""
    try:
        yield from items
    except CorruptRecordError as exc:
        raise KafkaResponseError(
            ErrorCode.corrupt_message, str(exc), f"{topic}-{partition}"
        ) from exc


def next_offset_of(data: bytes, fetch_offset: int, high_watermark: int) -> int:
    """Where the next fetch starts: past every entry returned, not past the watermark."""
    next_offset = fetch_offset
    for entry in iter_entries(data):
        next_offset = max(next_offset, min(entry.next_offset, high_watermark))
    return next_offset


class ScanConsumer(Consumer):
    """A Consumer whose fetch answers hold lazy iterators (iter_items) for records, bounded
    per partition by `ends` (the offsets a browse reads to), with `needles` applied."""

    def __init__(self, cluster, needles: tuple[bytes, ...], ends: dict, **kwargs):
        super().__init__(cluster, **kwargs)
        self.needles = needles
        self.ends = ends

    def _partition_result(self, tp, offset: int, part):
        if not part.records or error_code(part.error_code) != ErrorCode.none:
            return super()._partition_result(tp, offset, part)
        data = part.records
        if not isinstance(data, bytes | bytearray):
            data = bytes(data)
        high_watermark = int(part.high_watermark)
        end = min(high_watermark, self.ends.get(tp, high_watermark))
        try:
            next_offset = next_offset_of(data, offset, high_watermark)
        except CorruptRecordError as exc:
            return KafkaResponseError(ErrorCode.corrupt_message, str(exc), f"{tp[0]}-{tp[1]}")
        return PartitionData(
            tp[0],
            tp[1],
            offset,
            _reported(*tp, iter_items(*tp, data, offset, high_watermark, end, self.needles)),
            next_offset,
            high_watermark,
            int(getattr(part, "log_start_offset", -1)),
            int(getattr(part, "last_stable_offset", -1)),
        )
