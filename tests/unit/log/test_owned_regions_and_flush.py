"""Regions a fetch sends later survive the segment's deletion; flushes never hold the log
lock while the disk works, and a deferred flush is the caller's to run."""

import threading

import pytest

from brokerd.records.batch import RecordBatch

from .helpers import batch, open_log


def _three_segments(tmp_path, **config):
    log = open_log(tmp_path / "t-0", segment_bytes=1200, file_delete_delay_ms=0, **config)
    for value in (b"a", b"b", b"c"):
        log.append_as_leader(batch(value * 1000), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    assert len(log.segments) == 3
    return log


def test_owned_region_outlives_its_deleted_segment(tmp_path):
    log = _three_segments(tmp_path)
    first_segment = log.segments[0]
    owned = log.read(0, 1 << 20, owned=True).region
    shared = log.read(0, 1 << 20).region
    expected = shared.read()

    deleted = log.delete_segments([first_segment], "retention")
    assert deleted.count == 1 and not first_segment.log_path.exists()
    with pytest.raises(ValueError):
        shared.read()  # the segment's own file object is closed
    assert owned.read() == expected  # the dup still reads the unlinked file
    assert [r.value for r in RecordBatch(owned.read())] == [b"a" * 1000]
    owned.release()
    with pytest.raises(ValueError):
        owned.read()
    log.close()


def test_read_after_delete_answers_from_the_new_segment_list(tmp_path):
    from brokerd.log import errors

    log = _three_segments(tmp_path)
    log.delete_segments([log.segments[0]], "retention")
    with pytest.raises(errors.OffsetOutOfRangeError):
        log.read(0, 1 << 20, owned=True)
    region = log.read(1, 1 << 20, owned=True).region
    assert RecordBatch(region.read()).base_offset == 1
    region.release()
    log.close()


def test_deferred_flush_is_left_to_the_caller(tmp_path):
    log = open_log(tmp_path / "t-0", flush_messages=1)
    info = log.append_as_leader(batch(b"x"), leader_epoch=0, defer_flush=True)
    assert info.flush_needed and log.recovery_point == 0
    log.flush(info.last_offset + 1)
    assert log.recovery_point == 1
    # Without defer_flush the log flushes inline, as before.
    inline = log.append_as_leader(batch(b"y"), leader_epoch=0)
    assert not inline.flush_needed and log.recovery_point == 2
    log.close()


def test_flush_does_not_block_appends(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(batch(b"x"), leader_epoch=0)
    segment = log.active_segment
    in_fsync, release = threading.Event(), threading.Event()
    real_flush = segment.flush

    def slow_flush():
        in_fsync.set()
        assert release.wait(10)
        real_flush()

    segment.flush = slow_flush
    flusher = threading.Thread(target=log.flush)
    flusher.start()
    try:
        assert in_fsync.wait(10)
        # The disk is "busy": an append (the event loop's job) must still go through.
        done = threading.Event()
        appender = threading.Thread(
            target=lambda: (log.append_as_leader(batch(b"y"), leader_epoch=0), done.set())
        )
        appender.start()
        assert done.wait(5), "append waited for the fsync"
        appender.join()
    finally:
        release.set()
        flusher.join(10)
    assert log.recovery_point == 1  # the flush covered what existed when it started
    log.flush()
    assert log.recovery_point == 2
    log.close()
