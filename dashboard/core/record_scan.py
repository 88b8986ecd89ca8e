"""Fetches for a filtered scan that decode only the records that may match.

A record whose key or value equals or contains a byte string has that byte string inside
its own bytes, so:

* a batch whose (decompressed) records section lacks one of the wanted byte strings holds
  no match: it is checked (CRC-32C) and counted, never decoded;
* in a batch that has one, only the records whose bytes hold an occurrence are decoded;
  the others are stepped over by their length prefix alone.

Decoding records is what a scan spends its time on (varints in Python); searching bytes
runs at memory speed. Batches a scan starts inside, control batches and legacy message sets
are decoded by the client's own decode_partition.
"""

from __future__ import annotations

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


def _record_length(payload: bytes, pos: int) -> tuple[int, int]:
    """A record's length prefix (a zigzag varint), fast for the usual one byte."""
    raw = payload[pos]
    if raw < 0x80:
        pos += 1
    else:
        raw, pos = decode_unsigned(payload, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def _walk(topic: str, partition: int, batch: RecordBatch, needle: bytes) -> list:
    """The batch's records whose bytes hold `needle`, decoded, with SkippedBatch items for
    the runs of records between them."""
    payload = batch.records_payload()
    items: list = []
    timestamp_type = batch.timestamp_type
    pos, hit, skipped = 0, -1, 0
    count = batch.record_count
    for index in range(count):
        if hit < pos:
            hit = payload.find(needle, pos)
            if hit < 0:
                skipped += count - index  # no occurrence left: none of the rest matches
                break
        try:
            length, body = _record_length(payload, pos)
        except (VarintError, IndexError) as exc:
            raise CorruptRecordError(f"malformed record length: {exc}") from exc
        end = body + length
        if length < 0 or end > len(payload):
            raise CorruptRecordError(f"record length {length} runs past the batch")
        if hit >= end:
            skipped += 1
            pos = end
            continue
        record, pos = _decode_record(payload, pos, batch.base_offset, batch)
        if skipped:
            items.append(
                SkippedBatch(
                    partition, batch.base_offset, batch.first_timestamp, record.offset, skipped
                )  # fmt: skip
            )
            skipped = 0
        items.append(
            ConsumerRecord(
                topic,
                partition,
                record.offset,
                record.timestamp,
                timestamp_type,
                record.key,
                record.value,
                tuple((h.key, h.value) for h in record.headers),
            )
        )
    if skipped:
        items.append(
            SkippedBatch(
                partition, batch.base_offset, batch.first_timestamp, batch.next_offset, skipped
            )  # fmt: skip
        )
    return items


def _lacks(batch: RecordBatch, needles: tuple[bytes, ...]) -> bool:
    if batch.compression == compression.NONE:
        start, end = batch.pos, batch.pos + batch.size
        return any(batch.buf.find(n, start, end) < 0 for n in needles)
    payload = batch.records_payload()
    return any(n not in payload for n in needles)


def decode_skipping(
    topic: str,
    partition: int,
    data: bytes,
    fetch_offset: int,
    high_watermark: int,
    end: int,
    needles: tuple[bytes, ...],
) -> tuple[list, int]:
    """decode_partition's (records, next offset), with SkippedBatch items in place of the
    records of the batches in [fetch_offset, end) that cannot match: every record of a batch
    that lacks one of `needles`, those without an occurrence of the longest in the others."""
    if not isinstance(data, bytes | bytearray):
        data = bytes(data)
    items: list = []
    next_offset = fetch_offset
    run_start = 0  # the first byte not yet decoded or skipped
    view = memoryview(data)
    for entry in iter_entries(data):
        whole = (
            isinstance(entry, RecordBatch)
            and not entry.is_control
            and entry.record_count > 0
            and entry.base_offset >= fetch_offset
            and entry.last_offset < end
        )
        if whole:
            entry.validate()  # CRC-32C, as decoding would
            if entry.pos > run_start:
                records, _ = decode_partition(
                    topic, partition, view[run_start : entry.pos], fetch_offset, high_watermark
                )
                items.extend(records)
            if _lacks(entry, needles):
                items.append(
                    SkippedBatch(
                        partition,
                        entry.base_offset,
                        entry.first_timestamp,
                        entry.next_offset,
                        entry.record_count,
                    )  # fmt: skip
                )
            else:
                items.extend(_walk(topic, partition, entry, max(needles, key=len)))
            run_start = entry.pos + entry.size
        next_offset = max(next_offset, min(entry.next_offset, high_watermark))
    if run_start < len(data):
        records, last = decode_partition(
            topic, partition, view[run_start:], fetch_offset, high_watermark
        )
        items.extend(records)
        next_offset = max(next_offset, last)
    return items, next_offset


class PrefilterConsumer(Consumer):
    """A Consumer whose fetch answers hold SkippedBatch items for the batches that lack one
    of `needles` (below `ends`, per partition: the offsets the scan reads to)."""

    def __init__(self, cluster, needles: tuple[bytes, ...], ends: dict, **kwargs):
        super().__init__(cluster, **kwargs)
        self.needles = needles
        self.ends = ends

    def _partition_result(self, tp, offset: int, part):
        if not part.records or error_code(part.error_code) != ErrorCode.none:
            return super()._partition_result(tp, offset, part)
        high_watermark = int(part.high_watermark)
        end = min(high_watermark, self.ends.get(tp, high_watermark))
        try:
            items, next_offset = decode_skipping(
                *tp, part.records, offset, high_watermark, end, self.needles
            )
        except CorruptRecordError as exc:
            return KafkaResponseError(ErrorCode.corrupt_message, str(exc), f"{tp[0]}-{tp[1]}")
        return PartitionData(
            tp[0],
            tp[1],
            offset,
            items,
            next_offset,
            high_watermark,
            int(getattr(part, "log_start_offset", -1)),
            int(getattr(part, "last_stable_offset", -1)),
        )
