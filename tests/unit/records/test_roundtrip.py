"""Build -> read back -> equal, in every format and codec; in-place header patches."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokerd.records import iter_entries, read_entry
from brokerd.records.batch import (
    ATTRIBUTES_POS,
    BASE_OFFSET_POS,
    CRC_POS,
    CREATE_TIME,
    LOG_APPEND_TIME,
    MAX_TIMESTAMP_POS,
    PARTITION_LEADER_EPOCH_POS,
    RecordBatch,
    SimpleRecord,
    build_batch,
    iter_batches,
)
from brokerd.records.legacy import LegacyEntry, build_message_set

from .strategies import LEGACY_CODECS, V2_CODECS, offsets, record_tuples, simple_records, timestamps

ROUND_TRIP = settings(max_examples=100, deadline=None)


def expected_v2(records, base_offset):
    return [
        (base_offset + i, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers])
        for i, r in enumerate(records)
    ]


@pytest.mark.parametrize("codec", V2_CODECS)
@ROUND_TRIP
@given(
    records=simple_records(),
    base_offset=offsets,
    epoch=st.integers(-1, 2**31 - 1),
    producer=st.tuples(
        st.integers(-1, 2**63 - 1), st.integers(-1, 2**15 - 1), st.integers(-1, 2**31 - 1)
    ),
)
def test_v2_batch_round_trip(codec, records, base_offset, epoch, producer):
    producer_id, producer_epoch, base_sequence = producer
    buf = build_batch(
        records,
        base_offset=base_offset,
        compression_type=codec,
        partition_leader_epoch=epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )
    batch = RecordBatch(buf)
    batch.validate()
    assert batch.size == len(buf)
    assert batch.compression == codec
    assert batch.timestamp_type == CREATE_TIME
    assert (batch.base_offset, batch.partition_leader_epoch) == (base_offset, epoch)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == producer
    assert batch.record_count == len(records)
    assert batch.last_offset == base_offset + len(records) - 1
    assert batch.first_timestamp == records[0].timestamp
    assert batch.max_timestamp == max(r.timestamp for r in records)
    assert record_tuples(batch.records()) == expected_v2(records, base_offset)
    # The generic reader finds the same single entry.
    (entry,) = iter_entries(buf)
    assert isinstance(entry, RecordBatch) and entry.size == len(buf)


@ROUND_TRIP
@given(
    batches=st.lists(
        st.tuples(simple_records(), st.sampled_from(V2_CODECS)), min_size=1, max_size=4
    )
)
def test_consecutive_v2_batches_read_in_order(batches):
    log = bytearray()
    next_offset = 0
    for records, codec in batches:
        log += build_batch(records, base_offset=next_offset, compression_type=codec)
        next_offset += len(records)
    read = [r for batch in iter_batches(log) for r in batch.records()]
    assert [r.offset for r in read] == list(range(next_offset))
    assert [r.offset for e in iter_entries(log) for r in e.records()] == list(range(next_offset))


@ROUND_TRIP
@given(records=simple_records(), gaps=st.lists(st.integers(1, 5), min_size=8, max_size=8))
def test_v2_offset_deltas_keep_a_compacted_batchs_gaps(records, gaps):
    deltas = [sum(gaps[:i]) for i in range(len(records))]
    batch = RecordBatch(
        build_batch(
            records, base_offset=100, offset_deltas=deltas, last_offset_delta=deltas[-1] + 3
        )
    )
    batch.validate()
    assert [r.offset for r in batch.records()] == [100 + d for d in deltas]
    assert batch.last_offset == 100 + deltas[-1] + 3


def test_empty_v2_batch_keeps_its_offset_range():
    batch = RecordBatch(build_batch([], base_offset=7, last_offset_delta=4))
    batch.validate()
    assert (batch.size, batch.record_count, batch.last_offset) == (61, 0, 11)
    assert batch.records() == []


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
@ROUND_TRIP
@given(records=simple_records(with_headers=False), base_offset=offsets)
def test_legacy_message_set_round_trip(magic, codec, records, base_offset):
    raw = build_message_set(records, magic=magic, base_offset=base_offset, compression_type=codec)
    entries = list(iter_entries(raw))
    assert sum(e.size for e in entries) == len(raw)
    assert len(entries) == (len(records) if codec == 0 else 1)
    for entry in entries:
        assert isinstance(entry, LegacyEntry)
        entry.validate()
        assert (entry.magic, entry.compression) == (magic, codec)
    decoded = [r for e in entries for r in e.records()]
    expected = [
        (base_offset + i, r.timestamp if magic == 1 else -1, r.key, r.value)
        for i, r in enumerate(records)
    ]
    assert record_tuples(decoded, with_headers=False) == expected
    # A wrapper carries the offset of its last inner message and (v1) the max timestamp.
    if codec:
        (wrapper,) = entries
        assert wrapper.offset == base_offset + len(records) - 1
        assert wrapper.timestamp == (max(r.timestamp for r in records) if magic == 1 else -1)


def six_records():
    return [SimpleRecord(b"v%d" % i, None, (), 1_000 + i) for i in range(6)]


@pytest.mark.parametrize("codec", LEGACY_CODECS[1:])
def test_v1_wrapper_log_append_time_overrides_inner_timestamps(codec):
    raw = build_message_set(
        six_records(), magic=1, compression_type=codec, timestamp_type=LOG_APPEND_TIME
    )
    (wrapper,) = iter_entries(raw)
    assert wrapper.timestamp_type == LOG_APPEND_TIME
    assert [r.timestamp for r in wrapper.records()] == [1_005] * 6  # the wrapper's, not 1000..1005


def test_v1_plain_messages_flag_log_append_time():
    raw = build_message_set(six_records(), magic=1, timestamp_type=LOG_APPEND_TIME)
    assert {e.timestamp_type for e in iter_entries(raw)} == {LOG_APPEND_TIME}


def test_magic_0_wrapper_keeps_absolute_inner_offsets():
    raw = build_message_set(six_records(), magic=0, base_offset=1025, compression_type=1)
    (wrapper,) = iter_entries(raw)
    assert wrapper.offset == 1030
    assert [r.offset for r in wrapper.records()] == list(range(1025, 1031))


def test_magic_1_wrapper_resolves_relative_offsets_from_the_wrapper_offset():
    # The checklist's worked example: wrapper offset 1030, inner 0..5 -> 1025..1030.
    raw = build_message_set(six_records(), magic=1, base_offset=1025, compression_type=1)
    (wrapper,) = iter_entries(raw)
    assert wrapper.offset == 1030
    assert wrapper.base_offset == 1025
    assert [r.offset for r in wrapper.records()] == list(range(1025, 1031))


def test_magic_1_producer_wrapper_keeps_inner_offsets():
    # A producer writes wrapper offset 0; Kafka then leaves the relative offsets as they are.
    raw = bytearray(build_message_set(six_records(), magic=1, compression_type=1))
    raw[0:8] = bytes(8)  # offset is outside the CRC
    (wrapper,) = iter_entries(raw)
    wrapper.validate()
    assert [r.offset for r in wrapper.records()] == list(range(6))


# In-place patches -------------------------------------------------------------------------


def changed_positions(before: bytes, after: bytes) -> set[int]:
    assert len(before) == len(after)
    return {i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b}


@pytest.mark.parametrize("codec", V2_CODECS)
@ROUND_TRIP
@given(records=simple_records(), new_offset=offsets, new_epoch=st.integers(-1, 2**31 - 1))
def test_patching_base_offset_and_epoch_keeps_the_crc(codec, records, new_offset, new_epoch):
    buf = build_batch(records, compression_type=codec)
    original = bytes(buf)
    crc = RecordBatch(buf).crc
    batch = RecordBatch(buf)
    batch.set_base_offset(new_offset)
    batch.set_partition_leader_epoch(new_epoch)
    assert changed_positions(original, bytes(buf)) <= set(range(BASE_OFFSET_POS, 8)) | set(
        range(PARTITION_LEADER_EPOCH_POS, PARTITION_LEADER_EPOCH_POS + 4)
    )
    reread = RecordBatch(buf)  # the header as stored, not the view's cache
    reread.validate()
    assert reread.crc == crc
    assert (reread.base_offset, reread.partition_leader_epoch) == (new_offset, new_epoch)
    assert (batch.base_offset, batch.partition_leader_epoch) == (new_offset, new_epoch)
    assert record_tuples(reread.records()) == expected_v2(records, new_offset)


@pytest.mark.parametrize("codec", V2_CODECS)
@ROUND_TRIP
@given(records=simple_records(), append_time=timestamps)
def test_log_append_time_recomputes_the_crc_and_stamps_every_record(codec, records, append_time):
    buf = build_batch(records, base_offset=5, compression_type=codec)
    original = bytes(buf)
    RecordBatch(buf).set_log_append_time(append_time)
    allowed = (
        set(range(CRC_POS, CRC_POS + 4))
        | set(range(ATTRIBUTES_POS, ATTRIBUTES_POS + 2))
        | set(range(MAX_TIMESTAMP_POS, MAX_TIMESTAMP_POS + 8))
    )
    assert changed_positions(original, bytes(buf)) <= allowed
    batch = RecordBatch(buf)
    batch.validate()
    assert batch.timestamp_type == LOG_APPEND_TIME
    assert batch.compression == codec
    assert batch.max_timestamp == append_time
    assert batch.first_timestamp == records[0].timestamp
    expected = [(o, append_time, k, v, h) for o, _, k, v, h in expected_v2(records, 5)]
    assert record_tuples(batch.records()) == expected


def test_read_entry_dispatches_on_magic(vectors):
    for name, kind in [
        ("v2_batch_offset0_key_value", RecordBatch),
        ("v0_offset0_key_value", LegacyEntry),
    ]:
        assert isinstance(read_entry(bytes.fromhex(vectors[name]["hex"])), kind)


@ROUND_TRIP
@given(stamps=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=5))
def test_any_int64_timestamps_round_trip_through_wrapped_deltas(stamps):
    records = [SimpleRecord(b"v", None, (), ts) for ts in stamps]
    batch = RecordBatch(build_batch(records))
    assert [r.timestamp for r in batch.records()] == stamps
