"""Log.append_as_leader validates produced batches as Kafka's LogValidator: a batch whose
records disagree with its header is refused and nothing is appended; record rules name
the bad records (KIP-467)."""

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerd.log import errors
from brokerd.records import compression
from brokerd.records.batch import (
    CRC_POS,
    HEADER_SIZE,
    LAST_OFFSET_DELTA_POS,
    LOG_APPEND_TIME,
    RECORDS_COUNT_POS,
    RecordBatch,
    SimpleRecord,
    build_batch,
    crc_of,
)
from brokerd.records.legacy import build_message_set
from tests.bombs import bomb_batch, bomb_wrapper
from tests.unit.records.strategies import V2_CODECS, simple_records

from .helpers import keyed_batch, open_log, read_all

NOW = 1_700_000_000_000


def with_fixed_crc(buf) -> bytearray:
    buf = bytearray(buf)
    struct.pack_into(">I", buf, CRC_POS, crc_of(buf, 0, len(buf)))
    return buf


def lying(buf, count: int, last_offset_delta: int) -> bytearray:
    buf = bytearray(buf)
    struct.pack_into(">i", buf, RECORDS_COUNT_POS, count)
    struct.pack_into(">i", buf, LAST_OFFSET_DELTA_POS, last_offset_delta)
    return with_fixed_crc(buf)


def records(n: int, key: bytes | None = b"k") -> list[SimpleRecord]:
    return [SimpleRecord(b"v%d" % i, key, (), NOW + i) for i in range(n)]


def assert_untouched(log) -> None:
    assert (log.log_end_offset, log.size) == (0, 0)


@pytest.mark.parametrize("codec", V2_CODECS)
@pytest.mark.parametrize(
    ("count", "last_offset_delta"),
    [(3, 2), (6, 5), (2**31 - 1, 2**31 - 2)],  # fewer, more, a jump of 2^31
)
def test_a_header_that_lies_about_its_records_appends_nothing(
    tmp_path, codec, count, last_offset_delta
):
    log = open_log(tmp_path / "t-0")
    batch = lying(build_batch(records(5), compression_type=codec), count, last_offset_delta)
    with pytest.raises(errors.InvalidRecordError, match="incorrect declared batch size"):
        log.append_as_leader(batch, leader_epoch=0)
    assert_untouched(log)
    log.append_as_leader(build_batch(records(2)), leader_epoch=0)
    assert [r.offset for r in read_all(log)] == [0, 1]


@pytest.mark.parametrize("codec", V2_CODECS)
def test_offset_deltas_that_would_overlap_the_next_batch_are_refused(tmp_path, codec):
    log = open_log(tmp_path / "t-0")
    batch = build_batch(
        records(2), offset_deltas=[0, 5], last_offset_delta=1, compression_type=codec
    )
    with pytest.raises(errors.InvalidRecordError, match="offset delta 5") as caught:
        log.append_as_leader(batch, leader_epoch=0)
    assert [e.batch_index for e in caught.value.record_errors] == [1]
    assert_untouched(log)


@pytest.mark.parametrize(("codec", "mib"), [(compression.ZSTD, 1024), (compression.GZIP, 256)])
def test_a_bomb_on_a_delete_policy_topic_is_refused(tmp_path, codec, mib):
    log = open_log(tmp_path / "t-0")
    assert not log.config.compact
    with pytest.raises(errors.CorruptMessageError, match="decompresses to more than"):
        log.append_as_leader(bomb_batch(codec, mib), leader_epoch=0)
    assert_untouched(log)


def test_an_undecodable_compressed_payload_is_corrupt(tmp_path):
    log = open_log(tmp_path / "t-0")
    batch = bytearray(build_batch(records(3), compression_type=compression.GZIP))
    batch[HEADER_SIZE + 20 :] = b"\x00" * (len(batch) - HEADER_SIZE - 20)
    with pytest.raises(errors.CorruptMessageError):
        log.append_as_leader(with_fixed_crc(batch), leader_epoch=0)
    assert_untouched(log)


def test_a_large_plain_batch_that_lies_is_refused_before_its_crc_write(tmp_path):
    # Above 256 KiB the CRC is checked while writing; the walk refuses the lie first.
    log = open_log(tmp_path / "t-0")
    big = [SimpleRecord(b"x" * 100_000, b"k", (), NOW + i) for i in range(4)]
    with pytest.raises(errors.InvalidRecordError):
        log.append_as_leader(lying(build_batch(big), 3, 2), leader_epoch=0)
    damaged = lying(build_batch(big), 3, 2)
    damaged[-1] ^= 1  # a damaged CRC still answers CORRUPT_MESSAGE, as Kafka checks it first
    with pytest.raises(errors.CorruptMessageError):
        log.append_as_leader(damaged, leader_epoch=0)
    assert_untouched(log)


def test_two_batches_in_one_produce_are_refused(tmp_path):
    log = open_log(tmp_path / "t-0", cleanup_policy=("compact",))  # the general path
    with pytest.raises(errors.InvalidRecordError, match="one batch"):
        log.append_as_leader(build_batch(records(1)) + build_batch(records(1)), leader_epoch=0)
    assert_untouched(log)


# Record errors (KIP-467) ------------------------------------------------------------------


def test_compacted_topic_names_each_record_without_a_key(tmp_path):
    log = open_log(tmp_path / "t-0", cleanup_policy=("compact",))
    batch = build_batch(
        [SimpleRecord(b"a", b"k"), SimpleRecord(b"b"), SimpleRecord(b"c", b"k"), SimpleRecord(b"d")]
    )
    with pytest.raises(errors.InvalidRecordError) as caught:
        log.append_as_leader(batch, leader_epoch=0)
    assert [e.batch_index for e in caught.value.record_errors] == [1, 3]
    assert caught.value.record_errors[0].message == (
        "Compacted topic cannot accept message without key in topic partition t-0."
    )
    assert str(caught.value).startswith("One or more records have been rejected due to 2")
    assert_untouched(log)


@pytest.mark.parametrize("codec", V2_CODECS)
def test_each_record_timestamp_is_checked_not_only_the_header(tmp_path, codec):
    log = open_log(tmp_path / "t-0", message_timestamp_difference_max_ms=60_000)
    # first and max timestamps are recent; record 1 is an hour old.
    stamps = [NOW, NOW - 3_600_000, NOW + 10]
    batch = build_batch([SimpleRecord(b"v", b"k", (), ts) for ts in stamps], compression_type=codec)
    with pytest.raises(errors.InvalidTimestampError) as caught:
        log.append_as_leader(batch, leader_epoch=0, now_ms=NOW)
    assert [e.batch_index for e in caught.value.record_errors] == [1]
    assert caught.value.record_errors[0].message.startswith(
        f"Timestamp {NOW - 3_600_000} of message with offset 1 is out of range"
    )
    assert_untouched(log)
    log.append_as_leader(build_batch(records(2)), leader_epoch=0, now_ms=NOW)
    assert log.log_end_offset == 2


def test_a_producer_may_not_claim_log_append_time(tmp_path):
    log = open_log(tmp_path / "t-0", message_timestamp_type="LogAppendTime")
    batch = build_batch(records(2), timestamp_type=LOG_APPEND_TIME)
    with pytest.raises(errors.InvalidTimestampError) as caught:
        log.append_as_leader(batch, leader_epoch=0)
    assert [e.batch_index for e in caught.value.record_errors] == [0, 1]
    assert_untouched(log)


@pytest.mark.parametrize("bounded", [False, True])
def test_a_producer_may_not_claim_log_append_time_on_a_create_time_topic(tmp_path, bounded):
    """As Kafka's validateTimestamp: refused unless the timestamp is out of range first."""
    config = {"message_timestamp_difference_max_ms": 3_600_000} if bounded else {}
    log = open_log(tmp_path / "t-0", **config)
    batch = build_batch(records(2), timestamp_type=LOG_APPEND_TIME, max_timestamp=NOW)
    with pytest.raises(errors.InvalidTimestampError) as caught:
        log.append_as_leader(batch, leader_epoch=0, now_ms=NOW)
    assert [e.batch_index for e in caught.value.record_errors] == [0, 1]
    assert "LogAppendTime" in caught.value.record_errors[0].message
    assert_untouched(log)


# Legacy message sets ----------------------------------------------------------------------


def test_legacy_sets_of_mixed_magic_are_corrupt(tmp_path):
    log = open_log(tmp_path / "t-0")
    mixed = build_message_set(records(1), magic=0) + build_message_set(records(1), magic=1)
    with pytest.raises(errors.CorruptMessageError, match="magic"):
        log.append_as_leader(mixed, leader_epoch=0)
    assert_untouched(log)


def test_a_legacy_wrapper_over_max_message_bytes_is_refused_before_decoding(tmp_path):
    log = open_log(tmp_path / "t-0", max_message_bytes=100_000)
    wrapper = bomb_wrapper(compression.GZIP, 256)  # ~260 KB that decode to 256 MiB
    with pytest.raises(errors.RecordTooLargeError):
        log.append_as_leader(wrapper, leader_epoch=0)
    assert_untouched(log)


# Properties ---------------------------------------------------------------------------------

PROPERTY = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@PROPERTY
@given(records=simple_records(max_size=10), codec=st.sampled_from(V2_CODECS))
def test_every_batch_the_builder_makes_is_stored_as_built(tmp_path_factory, records, codec):
    log = open_log(tmp_path_factory.mktemp("valid") / "t-0")
    log.append_as_leader(keyed_batch([(b"k", b"first")]), leader_epoch=0)
    info = log.append_as_leader(build_batch(records, compression_type=codec), leader_epoch=0)
    assert (info.first_offset, info.last_offset) == (1, len(records))
    stored = read_all(log, 1)
    assert [(r.offset, r.key, r.value) for r in stored] == [
        (1 + i, r.key, r.value) for i, r in enumerate(records)
    ]


@st.composite
def mutated_batches(draw):
    """A valid batch, damaged in its records or its count fields, CRC recomputed (a CRC
    mismatch alone is the easy case)."""
    records = draw(simple_records(max_size=6))
    codec = draw(st.sampled_from(V2_CODECS))
    buf = bytearray(build_batch(records, compression_type=codec))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "count", "delta"]))
        pos = draw(st.integers(HEADER_SIZE, len(buf) - 1))
        if kind == "flip":
            buf[pos] ^= draw(st.integers(1, 255))
        elif kind == "insert":
            buf[pos:pos] = draw(st.binary(min_size=1, max_size=4))
        elif kind == "delete":
            del buf[pos : pos + draw(st.integers(1, 4))]
        else:
            field = RECORDS_COUNT_POS if kind == "count" else LAST_OFFSET_DELTA_POS
            (value,) = struct.unpack_from(">i", buf, field)
            value += draw(st.sampled_from([-2, -1, 1, 2, 2**30]))
            struct.pack_into(">i", buf, field, max(min(value, 2**31 - 1), -(2**31)))
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    return with_fixed_crc(buf)


@PROPERTY
@given(batch=mutated_batches())
def test_a_mutated_batch_is_refused_whole_or_stored_consistently(tmp_path_factory, batch):
    log = open_log(tmp_path_factory.mktemp("mutated") / "t-0")
    log.append_as_leader(keyed_batch([(b"k", b"first")]), leader_epoch=0)
    before = (log.log_end_offset, log.size)
    try:
        info = log.append_as_leader(batch, leader_epoch=0)
    except errors.LogError as exc:
        assert exc.error_code in (2, 87), exc  # CORRUPT_MESSAGE, INVALID_RECORD
        assert (log.log_end_offset, log.size) == before
        return
    # Accepted (a flip inside a key or value, say): it must read back as its header says.
    (stored,) = [e for e in log.read_batches(1)]
    assert isinstance(stored, RecordBatch)
    assert [r.offset for r in stored.records()] == list(range(1, info.last_offset + 1))
    assert stored.record_count == info.last_offset == log.log_end_offset - 1
