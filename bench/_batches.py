"""Real v2 record batches of an exact size, built with brokerd's own builder."""

from __future__ import annotations

import os
import struct

from brokerd.records.batch import (
    CRC_POS,
    LAST_OFFSET_DELTA_POS,
    RecordBatch,
    SimpleRecord,
    build_batch,
    crc_of,
)


def batch_of_size(
    total_bytes: int, record_count: int, first_timestamp: int, value_seed: bytes | None = None
) -> bytearray:
    """A v2 batch of exactly `total_bytes` (header included) holding `record_count` keyed
    records with consecutive timestamps from `first_timestamp`; the last value absorbs the
    rounding so the size is exact."""
    value_size = max((total_bytes - 61) // record_count - 16, 0)
    seed = value_seed if value_seed is not None else os.urandom(1024)
    last_value_size = value_size
    for _ in range(4):  # varint lengths can shift by a byte: converge in a few tries
        records = [
            SimpleRecord(
                _filled(seed, last_value_size if i == record_count - 1 else value_size),
                key=f"key-{i}".encode(),
                timestamp=first_timestamp + i,
            )
            for i in range(record_count)
        ]
        batch = build_batch(records)
        if len(batch) == total_bytes:
            return batch
        last_value_size += total_bytes - len(batch)
    raise ValueError(f"cannot build a batch of exactly {total_bytes} bytes")


def _filled(seed: bytes, size: int) -> bytes:
    repeats = size // len(seed) + 1
    return (seed * repeats)[:size]


def retimed(template: bytes | bytearray, first_timestamp: int) -> bytearray:
    """A copy of a v2 batch moved in time: firstTimestamp and maxTimestamp shifted by the
    same amount (record timestamps are deltas from firstTimestamp) and the CRC recomputed.
    Much cheaper than encoding each large batch anew."""
    batch = bytearray(template)
    last_delta, old_first, old_max = _TIMESTAMPS.unpack_from(batch, LAST_OFFSET_DELTA_POS)
    _TIMESTAMPS.pack_into(
        batch,
        LAST_OFFSET_DELTA_POS,
        last_delta,
        first_timestamp,
        first_timestamp + old_max - old_first,
    )
    _CRC.pack_into(batch, CRC_POS, crc_of(batch, 0, len(batch)))
    RecordBatch(batch).validate()
    return batch


_TIMESTAMPS = struct.Struct(">iqq")  # lastOffsetDelta, firstTimestamp, maxTimestamp
_CRC = struct.Struct(">I")
