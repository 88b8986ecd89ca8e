"""Log as the coordinator of its parts: the cleaner's swap, flushes that overlap a
truncation, and truncations from a worker thread while other threads use the log."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from brokerd.log import errors
from brokerd.log.cleaner import Cleaner
from brokerd.log.recovery import load_log
from brokerd.log.retention import delete_old_segments
from brokerd.log.segment import CLEANED_SUFFIX, DELETED_SUFFIX, SWAP_SUFFIX, LogSegment

from .helpers import batch, keyed_batch, open_log, read_all


def _filled(path, count: int = 30, **config):
    config.setdefault("segment_bytes", 300)
    log = open_log(path, **config)
    for i in range(count):
        log.append_as_leader(batch(b"v%d" % i, key=b"k%d" % (i % 5)), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    return log


def _cleaned_swap(log, group):
    cleaner = Cleaner(1 << 16)
    cleaner.build_offset_map(log, 0, log.active_segment.base_offset)
    cleaned = cleaner.write_cleaned_segment(log, group)
    cleaned.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
    return cleaned


# The cleaner's swap -------------------------------------------------------------------
def test_replace_segments_swaps_in_the_cleaned_segment_and_renames_it(tmp_path):
    log = _filled(tmp_path / "t-0", cleanup_policy="compact")
    group = log.segments[:3]
    cleaned = _cleaned_swap(log, group)
    assert log.replace_segments([cleaned], group)
    assert log.segments[0] is cleaned
    assert not cleaned.log_path.name.endswith(SWAP_SUFFIX) and cleaned.log_path.exists()
    assert all(s.log_path.name.endswith(DELETED_SUFFIX) for s in group)
    log.close()


def test_replace_segments_is_refused_when_a_segment_of_the_group_left_the_log(tmp_path):
    log = _filled(tmp_path / "t-0", cleanup_policy="compact")
    group = log.segments[:3]
    before = [s.base_offset for s in log.segments]
    cleaned = _cleaned_swap(log, group)
    log.delete_segments([group[0]], "retention")  # retention got there first
    assert not log.replace_segments([cleaned], group)
    assert cleaned not in log.segments
    assert [s.base_offset for s in log.segments] == before[1:]
    assert cleaned.log_path.name.endswith(SWAP_SUFFIX)  # left for the cleaner to remove
    cleaned.delete()
    log.close()


def test_replace_segments_is_refused_on_a_closed_log(tmp_path):
    log = _filled(tmp_path / "t-0", cleanup_policy="compact")
    group = log.segments[:2]
    cleaned = _cleaned_swap(log, group)
    log.close()
    assert not log.replace_segments([cleaned], group)
    cleaned.delete()


def test_the_cleaner_reads_open_transactions_and_producers_through_the_log(tmp_path):
    log = open_log(tmp_path / "t-0")
    log.append_as_leader(build_batch_of_producer(producer_id=7, transactional=True), leader_epoch=0)
    log.append_as_leader(build_batch_of_producer(producer_id=8), leader_epoch=0)
    assert log.open_transaction_starts() == [0]
    producers = log.active_producers()
    assert sorted(producers) == [7, 8]
    producers.clear()  # a copy: the log's own state is untouched
    assert sorted(log.active_producers()) == [7, 8]
    log.close()


def build_batch_of_producer(producer_id: int, transactional: bool = False):
    return keyed_batch(
        [(b"k", b"v")],
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=transactional,
    )


# Flushes and truncation ---------------------------------------------------------------
def test_a_flush_overlapping_a_truncation_leaves_the_recovery_point_at_the_truncation(
    tmp_path, monkeypatch
):
    log = _filled(tmp_path / "t-0", count=10, segment_bytes=1 << 20)
    end = log.log_end_offset
    real_flush = LogSegment.flush
    truncated = []

    def flush_then_truncate(segment):
        real_flush(segment)
        if not truncated:
            # A follower's truncation lands between the fsync and the recovery point.
            truncated.append(log.truncate_to(4))

    monkeypatch.setattr(LogSegment, "flush", flush_then_truncate)
    log.flush(end)
    assert truncated == [True]
    assert log.log_end_offset == 4
    assert log.recovery_point <= log.log_end_offset
    monkeypatch.undo()
    log.flush()
    assert log.recovery_point == 4
    log.close()


def test_truncation_on_a_worker_thread_while_readers_retention_and_flushes_run(tmp_path):
    """The follower's truncations run off the event loop: everything else that uses the
    log meanwhile must keep seeing a consistent log, and the result must load again."""
    log = _filled(
        tmp_path / "t-0", count=200, segment_bytes=400, retention_bytes=8000, retention_ms=-1
    )
    targets = list(range(log.log_end_offset - 5, 120, -5))
    stop = threading.Event()
    failures: list[BaseException] = []

    def keep_reading():
        while not stop.is_set():
            try:
                start = log.log_start_offset
                offsets = [r.offset for r in read_all(log, start)]
                if offsets != sorted(set(offsets)):
                    failures.append(AssertionError(f"offsets out of order: {offsets}"))
            except errors.OffsetOutOfRangeError:
                pass  # the log start moved past the read (retention)
            except BaseException as exc:  # noqa: BLE001 - reported below
                failures.append(exc)

    def keep_deleting():
        while not stop.is_set():
            try:
                delete_old_segments(log)
                log.flush()
            except BaseException as exc:  # noqa: BLE001 - reported below
                failures.append(exc)

    with ThreadPoolExecutor(3) as pool:
        readers = [pool.submit(keep_reading), pool.submit(keep_deleting)]
        truncations = pool.submit(lambda: [log.truncate_to(t) for t in targets])
        truncations.result(timeout=120)
        stop.set()
        for reader in readers:
            reader.result(timeout=60)
    assert not failures, failures[:3]
    assert log.log_end_offset == targets[-1]
    assert log.recovery_point <= log.log_end_offset
    expected = [(r.offset, r.value) for r in read_all(log, log.log_start_offset)]
    assert expected and expected[-1][0] == targets[-1] - 1
    bases = [s.base_offset for s in log.segments]
    assert bases == sorted(set(bases)) and bases[0] <= log.log_start_offset
    start = log.log_start_offset
    log.close()
    reopened = load_log(tmp_path / "t-0", log.config, log_start_offset=start)
    assert [(r.offset, r.value) for r in read_all(reopened, start)] == expected
    reopened.close()


def test_a_roll_leaves_its_fsyncs_to_the_background_flusher(tmp_path, monkeypatch):
    """A roll may run on the event loop (an append): the producer-state snapshot it writes
    and the sealed segment are fsynced by the flusher thread, as in Kafka's roll."""
    log = open_log(tmp_path / "t-0", segment_bytes=300)
    log.append_as_leader(batch(b"first"), leader_epoch=0)  # the epoch's checkpoint
    fsyncs_here = []
    real_fsync = os.fsync
    appender = threading.current_thread()

    def recording_fsync(fd):
        if threading.current_thread() is appender:
            fsyncs_here.append(fd)
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    for i in range(20):
        log.append_as_leader(batch(b"v%d" % i), leader_epoch=0)
    rolled_to = log.active_segment.base_offset
    assert len(log.segments) > 3
    assert fsyncs_here == []
    snapshots = sorted(p.name for p in (tmp_path / "t-0").glob("*.snapshot"))
    assert f"{rolled_to:020d}.snapshot" in snapshots
    for _ in range(1000):  # the flusher moves the recovery point once both are durable
        if log.recovery_point >= rolled_to:
            break
        threading.Event().wait(0.01)
    assert log.recovery_point >= rolled_to
    monkeypatch.undo()
    log.close()


def test_a_timestamp_lookup_that_meets_a_segment_deleted_under_it_looks_again(
    tmp_path, monkeypatch
):
    log = _filled(tmp_path / "t-0", count=30, retention_ms=-1, file_delete_delay_ms=0)
    first = log.segments[0]
    real_find = LogSegment.find_offset_by_timestamp
    deleted = []

    def find_after_retention(segment, timestamp, starting_offset=0):
        if not deleted:
            # Retention on another thread removes the segment being searched.
            deleted.append(log.delete_segments([first], "retention").count)
        return real_find(segment, timestamp, starting_offset)

    monkeypatch.setattr(LogSegment, "find_offset_by_timestamp", find_after_retention)
    found = log.fetch_offset_by_timestamp(0)
    assert deleted == [1]
    assert found is not None and found.offset == log.log_start_offset > 0
    monkeypatch.undo()
    log.close()
