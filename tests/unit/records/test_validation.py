"""validate_from_client rules, control records, and up-conversion of legacy message sets."""

import struct

import pytest
from hypothesis import given, settings

from brokerd.records import compression, iter_entries
from brokerd.records.batch import (
    ATTRIBUTES_POS,
    CRC_POS,
    CorruptRecordError,
    InvalidRecordError,
    RecordBatch,
    SimpleRecord,
    build_batch,
    crc_of,
)
from brokerd.records.control import ABORT, COMMIT, build_end_txn_marker, decode_key, encode_key
from brokerd.records.legacy import build_message_set, up_convert

from .strategies import LEGACY_CODECS, simple_records

RECORDS = [SimpleRecord(b"a", b"k", (), 10), SimpleRecord(b"b", None, (), 11)]


def with_attributes(buf: bytearray, attributes: int) -> bytearray:
    struct.pack_into(">h", buf, ATTRIBUTES_POS, attributes)
    struct.pack_into(">I", buf, CRC_POS, crc_of(buf, 0, len(buf)))
    return buf


# validate_from_client ---------------------------------------------------------------------


def test_a_well_formed_produce_batch_passes():
    RecordBatch(build_batch(RECORDS)).validate_from_client()
    idempotent = build_batch(RECORDS, producer_id=3, producer_epoch=0, base_sequence=0)
    RecordBatch(idempotent).validate_from_client()


@pytest.mark.parametrize("last_offset_delta", [0, 2, 5, -1])
def test_record_count_must_match_last_offset_delta(last_offset_delta):
    batch = RecordBatch(build_batch(RECORDS, last_offset_delta=last_offset_delta))
    batch.validate()  # well formed: only the broker's rule is broken
    with pytest.raises(InvalidRecordError):
        batch.validate_from_client()


def test_empty_batch_is_invalid_from_a_client():
    with pytest.raises(InvalidRecordError):
        RecordBatch(build_batch([], last_offset_delta=0)).validate_from_client()


def test_control_batch_from_a_client_is_invalid():
    marker = build_end_txn_marker(
        COMMIT, producer_id=1, producer_epoch=0, coordinator_epoch=0, timestamp=0
    )
    RecordBatch(marker).validate()
    with pytest.raises(InvalidRecordError, match="control"):
        RecordBatch(marker).validate_from_client()


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_is_invalid(codec):
    batch = RecordBatch(with_attributes(build_batch(RECORDS), codec))
    batch.validate()
    with pytest.raises(InvalidRecordError, match="codec"):
        batch.validate_from_client()


def test_producer_id_without_a_sequence_is_invalid():
    batch = RecordBatch(build_batch(RECORDS, producer_id=3, producer_epoch=0, base_sequence=-1))
    with pytest.raises(InvalidRecordError, match="sequence"):
        batch.validate_from_client()


def test_bad_crc_is_corrupt_not_invalid():
    buf = build_batch(RECORDS)
    buf[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        RecordBatch(buf).validate_from_client()


# Control records --------------------------------------------------------------------------


@pytest.mark.parametrize("control_type", [ABORT, COMMIT])
def test_end_txn_marker_round_trip(control_type):
    raw = build_end_txn_marker(
        control_type,
        producer_id=77,
        producer_epoch=3,
        coordinator_epoch=12,
        base_offset=500,
        timestamp=1_700_000_000_000,
        partition_leader_epoch=4,
    )
    (entry,) = iter_entries(raw)
    entry.validate()
    assert entry.is_control and entry.is_transactional
    assert (entry.producer_id, entry.producer_epoch, entry.partition_leader_epoch) == (77, 3, 4)
    assert (entry.base_offset, entry.last_offset, entry.record_count) == (500, 500, 1)
    (record,) = entry.records()
    key = decode_key(record.key)
    assert (key.version, key.type) == (0, control_type)
    assert struct.unpack(">hi", record.value) == (0, 12)
    assert (record.offset, record.timestamp) == (500, 1_700_000_000_000)


@pytest.mark.parametrize("control_type", [ABORT, COMMIT])
def test_control_key_bytes(control_type):
    assert encode_key(control_type) == bytes([0, 0, 0, control_type])
    assert decode_key(encode_key(control_type)).type == control_type


@pytest.mark.parametrize("key", [None, b"", b"\x00\x00\x00"])
def test_short_control_key_is_corrupt(key):
    with pytest.raises(CorruptRecordError):
        decode_key(key)


# up_convert -------------------------------------------------------------------------------


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@settings(max_examples=60, deadline=None)
@given(records=simple_records(with_headers=False))
def test_up_convert_gives_one_valid_v2_batch(magic, codec, records):
    message_set = build_message_set(records, magic=magic, base_offset=900, compression_type=codec)
    converted = up_convert(message_set)
    batch = RecordBatch(converted)
    assert batch.size == len(converted)
    batch.validate_from_client()
    assert batch.compression == codec
    expected = [(r.key, r.value, r.timestamp if magic == 1 else -1) for r in records]
    assert [(r.key, r.value, r.timestamp) for r in batch.records()] == expected
    assert [r.offset for r in batch.records()] == list(range(len(records)))  # the broker reassigns


def test_up_convert_of_several_wrappers_keeps_every_message():
    first = [SimpleRecord(b"a", None, (), 1), SimpleRecord(b"b", None, (), 2)]
    second = [SimpleRecord(b"c", b"k", (), 3)]
    message_set = build_message_set(
        first, magic=1, compression_type=compression.GZIP
    ) + build_message_set(second, magic=1, base_offset=2, compression_type=compression.GZIP)
    batch = RecordBatch(up_convert(message_set))
    batch.validate_from_client()
    assert [r.value for r in batch.records()] == [b"a", b"b", b"c"]


def test_up_convert_of_extreme_v1_timestamps_wraps_like_java():
    # The timestamp delta overflows a long; Java wraps it both ways and so must we.
    records = [SimpleRecord(b"a", None, (), -(2**63)), SimpleRecord(b"b", None, (), 2**63 - 1)]
    batch = RecordBatch(up_convert(build_message_set(records, magic=1)))
    assert [r.timestamp for r in batch.records()] == [-(2**63), 2**63 - 1]


def test_up_convert_rejects_corrupt_or_empty_sets():
    damaged = bytearray(build_message_set(RECORDS, magic=1))
    damaged[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        up_convert(damaged)
    with pytest.raises(CorruptRecordError):
        up_convert(b"")
