"""The validator's entries called directly: the single-batch check, the record-set check
and legacy up-conversion, with the log's typed errors."""

from __future__ import annotations

import os

import pytest

from brokerd.config import LogConfig
from brokerd.log import errors
from brokerd.log.segment import CRC_WRITE_CHUNK
from brokerd.log.validator import (
    InvalidRecordsError,
    check_batch_crc,
    check_single_batch,
    up_convert_legacy,
    validate_record_set,
)
from brokerd.records import legacy
from brokerd.records.batch import HEADER, LOG_APPEND_TIME, RecordBatch, SimpleRecord, build_batch

NOW = 1_000_000
CONFIG = LogConfig()


def one_batch(*values: bytes, key: bytes | None = None, **kw) -> bytearray:
    return build_batch([SimpleRecord(v, key, (), NOW) for v in values], **kw)


def check(records, config=CONFIG) -> bool:
    return check_single_batch(records, HEADER.unpack_from(records, 0), config, "t-0", NOW)


def flipped(data: bytearray, at: int) -> bytearray:
    bad = bytearray(data)
    bad[at] ^= 0xFF
    return bad


def test_a_small_batch_is_checked_whole_and_a_large_one_leaves_its_crc_for_the_write():
    assert check(one_batch(b"small")) is False
    large = one_batch(os.urandom(CRC_WRITE_CHUNK + 1))
    assert check(large) is True
    # Its CRC was not read: a flipped byte in the value passes here, not at the write.
    damaged = flipped(large, len(large) - 3)
    assert check(damaged) is True
    with pytest.raises(errors.CorruptMessageError):
        check_batch_crc(damaged, HEADER.unpack_from(damaged, 0))


def test_a_small_batch_with_a_bad_crc_is_corrupt():
    data = one_batch(b"v")
    with pytest.raises(errors.CorruptMessageError):
        check(flipped(data, len(data) - 1))


def test_a_refused_large_batch_reports_a_bad_crc_before_the_refusal():
    # A producer may not claim LogAppendTime: refused after the records are read.
    claims_append_time = one_batch(os.urandom(CRC_WRITE_CHUNK + 1), timestamp_type=LOG_APPEND_TIME)
    with pytest.raises(errors.InvalidTimestampError):
        check(claims_append_time)
    with pytest.raises(errors.CorruptMessageError):
        check(flipped(claims_append_time, len(claims_append_time) - 3))


def test_a_batch_over_max_message_bytes_is_too_large():
    small_limit = LogConfig().with_overrides(max_message_bytes=100)
    with pytest.raises(errors.RecordTooLargeError):
        check(one_batch(b"x" * 200), small_limit)


def test_a_record_set_holds_exactly_one_whole_batch():
    batch = one_batch(b"a", b"b")
    (found,) = validate_record_set(bytearray(batch), CONFIG, "t-0", NOW)
    assert isinstance(found, RecordBatch) and found.record_count == 2
    with pytest.raises(errors.InvalidRecordError):
        validate_record_set(bytearray(batch + batch), CONFIG, "t-0", NOW)
    with pytest.raises(errors.CorruptMessageError):
        validate_record_set(bytearray(batch + b"\x00" * 20), CONFIG, "t-0", NOW)
    with pytest.raises(errors.CorruptMessageError):
        validate_record_set(bytearray(), CONFIG, "t-0", NOW)


def test_keys_of_a_compacted_topic_are_checked_record_by_record():
    compacted = LogConfig().with_overrides(cleanup_policy="compact")
    mixed = build_batch([SimpleRecord(b"v", b"k", (), NOW), SimpleRecord(b"v", None, (), NOW)])
    with pytest.raises(InvalidRecordsError) as refused:
        validate_record_set(bytearray(mixed), compacted, "t-0", NOW)
    assert [e.batch_index for e in refused.value.record_errors] == [1]


def test_a_legacy_message_set_becomes_one_v2_batch():
    records = [SimpleRecord(b"v%d" % i, b"k", (), NOW + i) for i in range(3)]
    message_set = bytearray(legacy.build_message_set(records, magic=1))
    converted = up_convert_legacy(message_set, CONFIG.max_message_bytes)
    batch = RecordBatch(converted)
    assert batch.record_count == 3
    assert [r.value for r in batch.records()] == [b"v0", b"v1", b"v2"]
    with pytest.raises(errors.RecordTooLargeError):
        up_convert_legacy(message_set, 10)
    with pytest.raises(errors.CorruptMessageError):
        up_convert_legacy(flipped(message_set, 20), CONFIG.max_message_bytes)
