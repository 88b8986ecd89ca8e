"""Crash recovery: torn tails at every byte, garbage, corrupt and missing indexes."""

import os

import pytest

from brokerd.log.segment import LogSegment

from .helpers import batch, open_log, read_all


def _write_log(directory, batches=6, **config):
    log = open_log(directory, **config)
    sizes = []
    for i in range(batches):
        info = log.append_as_leader(batch(b"value-%d" % i, b"x" * i), leader_epoch=0)
        sizes.append(info.valid_bytes)
    log.close()
    return sizes


def _segment_file(directory):
    (path,) = sorted(directory.glob("*.log"))
    return path


def test_truncation_at_every_byte_of_the_last_batches_keeps_the_longest_valid_prefix(tmp_path):
    source = tmp_path / "source-0"
    sizes = _write_log(source, index_interval_bytes=1)
    data = _segment_file(source).read_bytes()
    boundaries = [sum(sizes[:i]) for i in range(len(sizes) + 1)]
    start = boundaries[-3]  # every byte offset inside the last two batches
    for cut in range(start, len(data) + 1):
        directory = tmp_path / f"cut{cut}-0"
        directory.mkdir()
        (directory / _segment_file(source).name).write_bytes(data[:cut])
        log = open_log(directory, clean=False, index_interval_bytes=1)
        kept = max(b for b in boundaries if b <= cut)
        assert log.active_segment.size == kept, cut
        assert os.path.getsize(_segment_file(directory)) == kept
        expected = boundaries.index(kept) * 2
        assert log.log_end_offset == expected
        assert [r.offset for r in read_all(log)] == list(range(expected))
        log.close()


def test_garbage_tail_is_truncated_and_later_appends_work(tmp_path):
    directory = tmp_path / "t-0"
    sizes = _write_log(directory)
    path = _segment_file(directory)
    with open(path, "ab") as f:
        f.write(os.urandom(3000))
    log = open_log(directory, clean=False)
    assert log.active_segment.size == sum(sizes)
    assert log.log_end_offset == 12
    log.append_as_leader(batch(b"after"), leader_epoch=0)
    assert read_all(log)[-1].value == b"after"


def test_a_flipped_byte_in_the_middle_truncates_from_that_batch(tmp_path):
    directory = tmp_path / "t-0"
    sizes = _write_log(directory)
    path = _segment_file(directory)
    data = bytearray(path.read_bytes())
    data[sizes[0] + sizes[1] + 30] ^= 0x01  # inside batch 2's CRC-covered bytes
    path.write_bytes(bytes(data))
    log = open_log(directory, clean=False)
    assert log.log_end_offset == 4
    assert log.active_segment.size == sizes[0] + sizes[1]


def test_clean_shutdown_skips_recovery(tmp_path):
    directory = tmp_path / "t-0"
    _write_log(directory)
    path = _segment_file(directory)
    with open(path, "ab") as f:
        f.write(b"\x00" * 5)  # not a whole entry: reads stop before it
    log = open_log(directory, clean=True)
    assert os.path.getsize(path) == log.active_segment.size  # nothing was scanned away?
    assert log.log_end_offset == 12


def test_truncation_in_an_early_segment_drops_the_later_ones(tmp_path):
    directory = tmp_path / "t-0"
    log = open_log(directory, segment_bytes=300)
    for _i in range(12):
        log.append_as_leader(batch(b"v" * 80), leader_epoch=0)
    bases = [s.base_offset for s in log.segments]
    log.close()
    assert len(bases) >= 3
    second = directory / f"{bases[1]:020d}.log"
    data = second.read_bytes()
    second.write_bytes(data[: len(data) - 7])
    reopened = open_log(directory, clean=False, segment_bytes=300)
    assert [s.base_offset for s in reopened.segments] == bases[:2]
    assert not (directory / f"{bases[2]:020d}.log").exists()
    assert reopened.log_end_offset < bases[2]


@pytest.mark.parametrize("damage", ["missing", "odd-size", "garbage"])
def test_corrupt_or_missing_index_is_rebuilt(tmp_path, damage):
    directory = tmp_path / "t-0"
    log = open_log(directory, segment_bytes=2000, index_interval_bytes=100)
    for _i in range(60):
        log.append_as_leader(batch(b"v" * 60), leader_epoch=0)
    first = log.segments[0]
    expected_entries = list(first.offset_index)
    index_path = first.index_path
    log.close()
    if damage == "missing":
        index_path.unlink()
    elif damage == "odd-size":
        with open(index_path, "ab") as f:
            f.write(b"\x01\x02\x03")
    else:
        data = bytearray(index_path.read_bytes())
        data[-8:] = b"\x00" * 8  # last entry points before the first
        index_path.write_bytes(bytes(data))
    reopened = open_log(directory, clean=True, segment_bytes=2000, index_interval_bytes=100)
    assert list(reopened.segments[0].offset_index) == expected_entries
    assert [r.offset for r in read_all(reopened)] == list(range(60))


def test_recovery_rebuilds_indexes_identically(tmp_path):
    directory = tmp_path / "t-0"
    log = open_log(directory, index_interval_bytes=150)
    for i in range(40):
        log.append_as_leader(batch(b"v" * 40, timestamp=1000 + i), leader_epoch=0)
    segment = log.active_segment
    offsets, times = list(segment.offset_index), list(segment.time_index)
    log.close()
    rebuilt = LogSegment(directory, 0, log.config)
    rebuilt.recover()
    assert list(rebuilt.offset_index) == offsets
    assert list(rebuilt.time_index)[: len(times)] == times


def test_recovery_of_a_legacy_segment_written_by_old_kafka(tmp_path):
    from brokerd.records.batch import SimpleRecord
    from brokerd.records.legacy import build_message_set

    directory = tmp_path / "old-0"
    directory.mkdir()
    v0 = build_message_set([SimpleRecord(b"a"), SimpleRecord(b"b")], magic=0)
    v1 = build_message_set(
        [SimpleRecord(b"c", b"k", (), 5), SimpleRecord(b"d", None, (), 6)],
        magic=1,
        base_offset=2,
        compression_type=1,
    )
    data = v0 + v1
    (directory / "00000000000000000000.log").write_bytes(data + b"\x00\x01\x02")  # torn tail
    log = open_log(directory, clean=False)
    assert log.active_segment.size == len(data)
    assert log.log_end_offset == 4
    assert [(r.offset, r.value) for r in read_all(log)] == [
        (0, b"a"),
        (1, b"b"),
        (2, b"c"),
        (3, b"d"),
    ]
