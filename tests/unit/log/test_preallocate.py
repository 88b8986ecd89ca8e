"""log.preallocate / preallocate: segment files reserved at segment.bytes, trimmed to their
data at roll and close, and a crash's zero tail read as the end of the data."""

import os

from brokerd.log.segment import LOG_SUFFIX

from .helpers import batch, open_log, read_all

SEGMENT_BYTES = 64 << 10


def _open(directory, clean=True, **config):
    return open_log(directory, clean=clean, preallocate=True, segment_bytes=SEGMENT_BYTES, **config)


def _file_sizes(directory) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in sorted(directory.glob(f"*{LOG_SUFFIX}"))}


def _append(log, count, start=0):
    for i in range(start, start + count):
        log.append_as_leader(batch(b"value-%d" % i, key=b"x" * 300), leader_epoch=0)


def _crash(log):
    """Drop the log without a clean close: files stay as they are (untrimmed)."""
    for segment in log.segments:
        segment.file.close()


def test_a_new_segment_is_reserved_at_segment_bytes_and_appends_start_at_zero(tmp_path):
    log = _open(tmp_path / "t-0")
    assert _file_sizes(log.dir) == {"00000000000000000000.log": SEGMENT_BYTES}
    assert log.active_segment.size == 0
    _append(log, 3)
    assert os.path.getsize(log.active_segment.log_path) == SEGMENT_BYTES
    first = log.read(0, 1 << 20).read()
    assert first[:8] == bytes(8) and len(first) == log.active_segment.size  # no zeros read
    assert [r.value for r in read_all(log)] == [b"value-0", b"value-1", b"value-2"]


def test_roll_trims_the_old_segment_and_reserves_the_new_one(tmp_path):
    log = _open(tmp_path / "t-0")
    _append(log, 300)  # ~100 KiB: at least one roll
    *rolled, active = log.segments
    assert rolled
    for segment in rolled:
        assert os.path.getsize(segment.log_path) == segment.size < SEGMENT_BYTES
    assert os.path.getsize(active.log_path) == SEGMENT_BYTES
    assert len(read_all(log)) == 300


def test_clean_close_trims_and_reopening_appends_after_the_data(tmp_path):
    log = _open(tmp_path / "t-0")
    _append(log, 5)
    size = log.active_segment.size
    log.close()
    assert list(_file_sizes(log.dir).values()) == [size]
    reopened = _open(tmp_path / "t-0")
    _append(reopened, 2, start=5)
    assert [r.value for r in read_all(reopened)] == [b"value-%d" % i for i in range(7)]


def test_after_a_crash_recovery_stops_at_the_zero_tail_and_keeps_every_record(tmp_path):
    log = _open(tmp_path / "t-0")
    _append(log, 250)
    expected = [r.value for r in read_all(log)]
    _crash(log)
    recovered = _open(tmp_path / "t-0", clean=False)
    assert [r.value for r in read_all(recovered)] == expected
    sizes = _file_sizes(recovered.dir)
    assert list(sizes.values()) == [s.size for s in recovered.segments]  # trimmed
    _append(recovered, 1, start=250)
    assert read_all(recovered)[-1].value == b"value-250"
    assert recovered.log_end_offset == 251


def test_a_torn_batch_before_the_zero_tail_is_still_cut(tmp_path):
    log = _open(tmp_path / "t-0")
    _append(log, 3)
    segment = log.active_segment
    whole = segment.size
    torn = log.append_as_leader(batch(b"torn", key=b"x" * 300), leader_epoch=0)
    # The last batch's second half never reached the disk: zeros, like the reserved room.
    half = torn.valid_bytes // 2
    os.pwrite(segment.file.fileno(), bytes(torn.valid_bytes - half), whole + half)
    _crash(log)
    recovered = _open(tmp_path / "t-0", clean=False)
    assert recovered.log_end_offset == 3
    assert recovered.active_segment.size == whole


def test_an_untrimmed_rolled_segment_keeps_the_segments_after_it(tmp_path):
    log = _open(tmp_path / "t-0")
    _append(log, 300)
    expected = [r.value for r in read_all(log)]
    first = log.segments[0]
    _crash(log)
    # As if the trim at roll never reached the disk before the crash.
    os.truncate(first.log_path, SEGMENT_BYTES)
    recovered = _open(tmp_path / "t-0", clean=False)  # recovers from offset 0
    assert [r.value for r in read_all(recovered)] == expected
