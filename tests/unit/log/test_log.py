"""Log: offset assignment, rolling, reads of whole batches, lookups, truncation."""

import os

import pytest

from brokerd.log import errors
from brokerd.log.log import parse_dir_name
from brokerd.log.segment import filename_prefix
from brokerd.records.batch import RecordBatch

from .helpers import batch, keyed_batch, open_log, read_all


def test_append_assigns_contiguous_offsets_and_epoch(tmp_path):
    log = open_log(tmp_path / "orders-0")
    first = log.append_as_leader(batch(b"a", b"b", b"c"), leader_epoch=0)
    second = log.append_as_leader(batch(b"d"), leader_epoch=3)
    assert (first.first_offset, first.last_offset) == (0, 2)
    assert (second.first_offset, second.last_offset) == (3, 3)
    assert log.log_end_offset == 4
    entries = list(log.read_batches())
    assert [e.base_offset for e in entries] == [0, 3]
    assert [e.partition_leader_epoch for e in entries] == [0, 3]
    for entry in entries:
        entry.validate()  # patching offsets and epochs kept the CRC valid
    assert [r.value for r in read_all(log)] == [b"a", b"b", b"c", b"d"]
    assert log.leader_epoch_cache.entries == [(0, 0), (3, 3)]


def test_segments_are_named_by_base_offset_and_roll_on_size(tmp_path):
    log = open_log(tmp_path / "t-0", segment_bytes=300)
    for _i in range(10):
        log.append_as_leader(batch(b"x" * 100, b"y" * 10), leader_epoch=0)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 3
    names = sorted(p.name for p in (tmp_path / "t-0").glob("*.log"))
    assert names == [f"{filename_prefix(b)}.log" for b in bases]
    assert all(len(n.split(".")[0]) == 20 for n in names)
    # only the active segment takes writes; sealed ones never exceed segment.bytes
    for segment in log.segments[:-1]:
        assert segment.size <= 300
        assert os.path.getsize(segment.index_path) == segment.offset_index.entries * 8
    assert [r.offset for r in read_all(log)] == list(range(20))


def test_roll_on_segment_ms_uses_the_first_batch_timestamp(tmp_path):
    log = open_log(tmp_path / "t-0", segment_ms=1000)
    log.append_as_leader(batch(b"a", timestamp=10_000), leader_epoch=0)
    log.append_as_leader(batch(b"b", timestamp=10_500), leader_epoch=0)
    assert len(log.segments) == 1
    log.append_as_leader(batch(b"c", timestamp=11_001), leader_epoch=0)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_roll_when_the_index_is_full(tmp_path):
    log = open_log(tmp_path / "t-0", segment_index_bytes=16, index_interval_bytes=1)
    for _ in range(6):
        log.append_as_leader(batch(b"v"), leader_epoch=0)
    assert len(log.segments) >= 2
    assert [r.offset for r in read_all(log)] == list(range(6))


def test_read_returns_whole_batches_from_the_batch_holding_the_offset(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(batch(b"0", b"1", b"2"), leader_epoch=0)
    log.append_as_leader(batch(b"3", b"4"), leader_epoch=0)
    info = log.read(1, max_bytes=1 << 20)
    first = RecordBatch(info.read())
    assert first.base_offset == 0  # the whole batch, clients skip offsets below 1
    assert info.first_entry_offset == 0
    assert info.region.position == 0


def test_read_returns_at_least_one_batch_beyond_max_bytes(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(batch(b"x" * 5000), leader_epoch=0)
    log.append_as_leader(batch(b"y"), leader_epoch=0)
    info = log.read(0, max_bytes=10, min_one_message=True)
    assert info.size == RecordBatch(info.read()).size  # KIP-74: one whole batch
    assert log.read(0, max_bytes=10, min_one_message=False).size == 10


def test_read_stops_at_max_offset_and_rejects_out_of_range(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(batch(b"a"), leader_epoch=0)
    log.append_as_leader(batch(b"b"), leader_epoch=0)
    info = log.read(0, 1 << 20, max_offset=1)
    assert [RecordBatch(info.read()).base_offset] == [0]
    assert info.size == RecordBatch(info.read()).size
    assert log.read(1, 1 << 20, max_offset=1).region is None
    assert log.read(2, 1 << 20).region is None  # at the LEO: empty, no error
    with pytest.raises(errors.OffsetOutOfRangeError):
        log.read(3, 1 << 20)
    log.update_high_watermark(2)
    log.maybe_increment_log_start_offset(1)
    with pytest.raises(errors.OffsetOutOfRangeError):
        log.read(0, 1 << 20)


def test_reads_across_segments_and_sparse_index(tmp_path):
    log = open_log(tmp_path / "t-0", segment_bytes=4000, index_interval_bytes=200)
    for i in range(200):
        log.append_as_leader(batch(b"%d" % i * 20), leader_epoch=0)
    assert len(log.segments) > 3
    assert log.segments[0].offset_index.entries > 3
    for offset in (0, 1, 57, 99, 150, 199):
        info = log.read(offset, 100)
        assert RecordBatch(info.read()).base_offset == offset
    assert [r.offset for r in read_all(log, 123)] == list(range(123, 200))


def test_offset_for_timestamp(tmp_path):
    log = open_log(tmp_path / "t-0", segment_bytes=2000, index_interval_bytes=100)
    for i in range(100):
        log.append_as_leader(batch(b"v" * 30, b"w" * 30, timestamp=10_000 + i * 10), leader_epoch=0)
    # batch i holds offsets 2i (ts 10000+10i) and 2i+1 (ts 10001+10i)
    found = log.fetch_offset_by_timestamp(10_505)
    assert (found.offset, found.timestamp) == (102, 10_510)
    found = log.fetch_offset_by_timestamp(10_501)
    assert (found.offset, found.timestamp) == (101, 10_501)
    assert log.fetch_offset_by_timestamp(0).offset == 0
    assert log.fetch_offset_by_timestamp(99_999) is None
    assert log.fetch_offset_by_timestamp(-2).offset == 0
    assert log.fetch_offset_by_timestamp(-1).offset == 200
    latest = log.fetch_offset_by_timestamp(-3)
    assert (latest.timestamp, latest.offset) == (10_991, 199)


def test_timestamps_out_of_order_within_the_log(tmp_path):
    log = open_log(tmp_path / "t-0", index_interval_bytes=1)
    for ts in (5000, 1000, 7000, 3000):
        log.append_as_leader(batch(b"v", timestamp=ts), leader_epoch=0)
    assert log.fetch_offset_by_timestamp(2000).offset == 0  # first record with ts >= 2000
    assert log.fetch_offset_by_timestamp(6000).offset == 2
    assert log.fetch_offset_by_timestamp(-3).offset == 2


def test_produce_validation_errors(tmp_path):
    log = open_log(tmp_path / "t-0", max_message_bytes=200)
    with pytest.raises(errors.RecordTooLargeError):
        log.append_as_leader(batch(b"x" * 500), leader_epoch=0)
    corrupt = batch(b"abc")
    corrupt[-2] ^= 0xFF
    with pytest.raises(errors.CorruptMessageError):
        log.append_as_leader(corrupt, leader_epoch=0)
    with pytest.raises(errors.CorruptMessageError):
        log.append_as_leader(b"\x00" * 10, leader_epoch=0)
    mismatched = batch(b"a", b"b", last_offset_delta=5)
    with pytest.raises(errors.InvalidRecordError):
        log.append_as_leader(mismatched, leader_epoch=0)
    assert log.log_end_offset == 0  # nothing was written


def test_compacted_topics_require_keys(tmp_path):
    log = open_log(tmp_path / "t-0", cleanup_policy=("compact",))
    with pytest.raises(errors.InvalidRecordError):
        log.append_as_leader(batch(b"no key"), leader_epoch=0)
    log.append_as_leader(keyed_batch([(b"k", b"v")]), leader_epoch=0)
    assert log.log_end_offset == 1


def test_log_append_time(tmp_path):
    log = open_log(tmp_path / "t-0", message_timestamp_type="LogAppendTime")
    info = log.append_as_leader(batch(b"a", b"b", timestamp=5), leader_epoch=0, now_ms=123456)
    assert info.log_append_time == 123456
    (entry,) = log.read_batches()
    entry.validate()
    assert [r.timestamp for r in entry.records()] == [123456, 123456]


def test_legacy_message_sets_are_up_converted(tmp_path):
    from brokerd.records.batch import SimpleRecord
    from brokerd.records.legacy import build_message_set

    log = open_log(tmp_path / "t-0")
    message_set = build_message_set(
        [SimpleRecord(b"v1", b"k", (), 77), SimpleRecord(b"v2", None, (), 78)],
        magic=1,
        compression_type=1,
    )
    info = log.append_as_leader(message_set, leader_epoch=0)
    assert (info.first_offset, info.last_offset) == (0, 1)
    records = read_all(log)
    assert [(r.key, r.value, r.timestamp) for r in records] == [
        (b"k", b"v1", 77),
        (None, b"v2", 78),
    ]
    assert next(log.read_batches()).magic == 2


def test_truncate_to(tmp_path):
    log = open_log(tmp_path / "t-0", segment_bytes=200)
    for i in range(10):
        log.append_as_leader(batch(b"v" * 50), leader_epoch=i // 5)
    assert len(log.segments) > 2
    log.truncate_to(4)
    assert log.log_end_offset == 4
    assert [r.offset for r in read_all(log)] == [0, 1, 2, 3]
    assert log.leader_epoch_cache.entries == [(0, 0)]
    log.append_as_leader(batch(b"new"), leader_epoch=2)
    assert [r.offset for r in read_all(log)] == [0, 1, 2, 3, 4]


def test_reopen_after_clean_close_keeps_everything(tmp_path):
    log = open_log(tmp_path / "t-0", segment_bytes=500)
    for i in range(30):
        log.append_as_leader(batch(b"%d" % i), leader_epoch=1)
    segments = [s.base_offset for s in log.segments]
    log.close()
    reopened = open_log(tmp_path / "t-0", segment_bytes=500)
    assert [s.base_offset for s in reopened.segments] == segments
    assert reopened.log_end_offset == 30
    assert [r.value for r in read_all(reopened)] == [b"%d" % i for i in range(30)]
    reopened.append_as_leader(batch(b"more"), leader_epoch=1)
    assert reopened.log_end_offset == 31


def test_dir_names():
    assert parse_dir_name("my-topic-12") == ("my-topic", 12)
    with pytest.raises(ValueError):
        parse_dir_name("nodash")
