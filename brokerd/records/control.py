"""Control records: transaction markers inside control batches (attributes bit 5).

Key: version int16 (0), type int16 (0 = abort, 1 = commit).
Value of an end-transaction marker: version int16 (0), coordinatorEpoch int32.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .batch import CorruptRecordError, SimpleRecord, build_batch

ABORT = 0
COMMIT = 1

_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")


@dataclass(frozen=True, slots=True)
class ControlKey:
    version: int
    type: int


def encode_key(control_type: int) -> bytes:
    return _KEY.pack(0, control_type)


def decode_key(key: bytes | None) -> ControlKey:
    if key is None or len(key) < _KEY.size:
        raise CorruptRecordError("control record key needs 4 bytes")
    version, control_type = _KEY.unpack_from(key)
    return ControlKey(version, control_type)


def build_end_txn_marker(
    control_type: int,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    base_offset: int = 0,
    timestamp: int,
    partition_leader_epoch: int = -1,
) -> bytearray:
    record = SimpleRecord(
        _MARKER_VALUE.pack(0, coordinator_epoch), encode_key(control_type), (), timestamp
    )
    return build_batch(
        [record],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        partition_leader_epoch=partition_leader_epoch,
        is_transactional=True,
        is_control=True,
    )
