"""LogManager: log dir lock, meta.properties, checkpoints, clean-shutdown marker, offline."""

import os

import pytest

from brokerd.config import LogConfig
from brokerd.log import errors
from brokerd.log.checkpoints import OffsetCheckpointFile, read_properties
from brokerd.log.manager import (
    CLEAN_SHUTDOWN_MARKER,
    LOG_START_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_CHECKPOINT,
    LogDirInUseError,
    LogManager,
)

from .helpers import batch, read_all


def started(dirs, **kw):
    manager = LogManager(dirs, LogConfig(segment_bytes=400), **kw)
    manager.startup()
    return manager


def test_two_managers_never_share_a_log_dir(tmp_path):
    first = started([tmp_path])
    with pytest.raises(LogDirInUseError):
        started([tmp_path])
    first.shutdown()
    started([tmp_path]).shutdown()  # the lock is released at shutdown


def test_meta_properties_written_and_checked(tmp_path):
    manager = started([tmp_path])
    manager.ensure_meta_properties(1, "clusterAAAAAAAAAAAAAAA")
    props = read_properties(tmp_path / "meta.properties")
    assert props == {"version": "0", "broker.id": "1", "cluster.id": "clusterAAAAAAAAAAAAAAA"}
    with pytest.raises(errors.KafkaStorageError, match="broker.id"):
        manager.ensure_meta_properties(2, "clusterAAAAAAAAAAAAAAA")
    manager.shutdown()


def test_checkpoints_and_clean_restart(tmp_path):
    manager = started([tmp_path])
    log = manager.get_or_create_log("orders", 0)
    for i in range(20):
        log.append_as_leader(batch(b"value %d" % i), leader_epoch=0)
    log.update_high_watermark(15)
    log.maybe_increment_log_start_offset(5)
    manager.get_or_create_log("orders", 1)
    manager.shutdown()

    assert (tmp_path / CLEAN_SHUTDOWN_MARKER).exists()
    assert OffsetCheckpointFile(tmp_path / RECOVERY_POINT_CHECKPOINT).read() == {
        ("orders", 0): 20,
        ("orders", 1): 0,
    }
    assert OffsetCheckpointFile(tmp_path / REPLICATION_CHECKPOINT).read()[("orders", 0)] == 15
    assert OffsetCheckpointFile(tmp_path / LOG_START_CHECKPOINT).read() == {("orders", 0): 5}

    again = started([tmp_path])
    assert again.had_clean_shutdown[tmp_path]
    assert not (tmp_path / CLEAN_SHUTDOWN_MARKER).exists()  # a crash from now on is unclean
    log = again.get_log("orders", 0)
    assert (log.log_start_offset, log.high_watermark, log.log_end_offset) == (5, 15, 20)
    assert [r.offset for r in read_all(log)] == list(range(5, 20))
    again.shutdown()


def test_unclean_restart_recovers_from_the_recovery_point(tmp_path):
    manager = started([tmp_path])
    log = manager.get_or_create_log("t", 0)
    for _i in range(30):
        log.append_as_leader(batch(b"v" * 50), leader_epoch=0)
    manager.checkpoint()
    active = log.active_segment.log_path
    # a crash: no shutdown, and a torn write at the end of the active segment
    with open(active, "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x1e\x00\x00\x05")
    for fd in manager._locks:  # the crashed process's locks die with it
        os.close(fd)
    recovered = started([tmp_path])
    assert not recovered.had_clean_shutdown[tmp_path]
    log = recovered.get_log("t", 0)
    assert log.log_end_offset == 30
    assert [r.offset for r in read_all(log)] == list(range(30))
    recovered.shutdown()


def test_a_broken_partition_goes_offline_and_the_others_keep_serving(tmp_path):
    manager = started([tmp_path])
    manager.get_or_create_log("good", 0).append_as_leader(batch(b"ok"), leader_epoch=0)
    manager.get_or_create_log("bad", 0).append_as_leader(batch(b"x"), leader_epoch=0)
    manager.shutdown()
    (tmp_path / "bad-0" / "leader-epoch-checkpoint").write_text("0\n1\nnot numbers\n")
    again = started([tmp_path])
    assert ("bad", 0) in again.offline_partitions
    assert [r.value for r in read_all(again.get_log("good", 0))] == [b"ok"]
    with pytest.raises(errors.KafkaStorageError):
        again.get_or_create_log("bad", 0)
    again.shutdown()


def test_delete_log_and_spread_over_dirs(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = started(dirs)
    for p in range(4):
        manager.get_or_create_log("spread", p)
    assert {lg.dir.parent for lg in manager.all_logs()} == set(dirs)
    assert manager.delete_log("spread", 0)
    assert manager.get_log("spread", 0) is None
    assert not any(d.name.startswith("spread-0") for base in dirs for d in base.iterdir())
    manager.shutdown()


def test_run_retention_on_demand_reports_per_partition(tmp_path):
    manager = started([tmp_path])
    config = LogConfig(segment_bytes=200, retention_bytes=0, file_delete_delay_ms=0)
    for p in range(2):
        log = manager.get_or_create_log("short", p, config)
        for _ in range(5):
            log.append_as_leader(batch(b"v" * 80), leader_epoch=0)
        log.update_high_watermark(log.log_end_offset)
    manager.get_or_create_log("other", 0).append_as_leader(batch(b"keep"), leader_epoch=0)
    reports = manager.run_retention(topic="short")
    assert [(r.topic, r.partition) for r in reports] == [("short", 0), ("short", 1)]
    for report in reports:
        assert report.segments_deleted == 5
        assert report.log_start_offset == 5
        assert report.bytes_freed > 0
    assert manager.get_log("other", 0).log_end_offset == 1
    manager.shutdown()


# Start-up in parallel, and the clean-shutdown marker ------------------------------------
TORN_WRITE = b"\x00\x00\x00\x00\x00\x00\x00\x1e\x00\x00\x05"


def _crash(manager):
    """What a killed process leaves: no close, no checkpoint, no marker; its locks die."""
    for fd in manager._locks:
        os.close(fd)
    manager._locks.clear()


def _log_with_garbage_tail(tmp_path, clean: bool):
    manager = started([tmp_path])
    log = manager.get_or_create_log("t", 0)
    for _ in range(10):
        log.append_as_leader(batch(b"v" * 50), leader_epoch=0)
    active = log.active_segment.log_path
    if clean:
        manager.shutdown()
    else:
        log.flush()
        manager.checkpoint()
        _crash(manager)
    intact = active.stat().st_size
    with open(active, "ab") as f:
        f.write(TORN_WRITE)
    return active, intact


def test_a_cleanly_closed_log_dir_is_trusted_without_a_recovery_scan(tmp_path):
    """Kafka's rule: with `.kafka_cleanshutdown` the files are trusted as they are (bytes
    after the last batch stay); without it, recovery scans from the recovery point and cuts
    what does not parse."""
    active, intact = _log_with_garbage_tail(tmp_path / "clean", clean=True)
    loaded = started([tmp_path / "clean"])
    assert loaded.had_clean_shutdown[tmp_path / "clean"]
    assert loaded.get_log("t", 0).log_end_offset == 10
    assert active.stat().st_size == intact + len(TORN_WRITE)  # not scanned, not cut
    loaded.shutdown()

    active, intact = _log_with_garbage_tail(tmp_path / "crashed", clean=False)
    recovered = started([tmp_path / "crashed"])
    assert not recovered.had_clean_shutdown[tmp_path / "crashed"]
    assert recovered.get_log("t", 0).log_end_offset == 10
    assert active.stat().st_size == intact  # scanned and cut at the torn write
    recovered.shutdown()


def _instrumented_loads(monkeypatch, seen):
    """Wrap the real load_log to see, per call, its thread and the loads running with it."""
    import threading
    import time

    from brokerd.log import manager as manager_module

    real = manager_module.load_log
    lock = threading.Lock()
    running: dict = {}

    def load_log(directory, *args, **kwargs):
        parent = directory.parent
        with lock:
            running[parent] = running.get(parent, 0) + 1
            seen.append((parent, threading.current_thread().name, running[parent], dict(running)))
        try:
            time.sleep(0.05)  # long enough for every thread of the pool to take one
            return real(directory, *args, **kwargs)
        finally:
            with lock:
                running[parent] -= 1

    monkeypatch.setattr(manager_module, "load_log", load_log)


@pytest.mark.parametrize("threads", [1, 3])
def test_num_recovery_threads_per_data_dir_loads_each_dir_with_that_many_threads(
    tmp_path, monkeypatch, threads
):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = started(dirs)
    for p in range(12):
        manager.get_or_create_log("many", p).append_as_leader(batch(b"x"), leader_epoch=0)
    manager.shutdown()

    seen: list = []
    _instrumented_loads(monkeypatch, seen)
    loaded = started(dirs, recovery_threads_per_data_dir=threads)
    assert len(loaded.logs) == 12 and not loaded.offline_partitions
    for directory in dirs:
        mine = [s for s in seen if s[0] == directory]
        assert len(mine) == 6
        # Each dir's loads run on `threads` threads of its own, never more at once.
        assert len({name for _, name, _, _ in mine}) == threads
        assert max(concurrent for _, _, concurrent, _ in mine) == threads
    # The log dirs load at the same time, not one after the other.
    assert any(len([n for n in running.values() if n]) == 2 for *_, running in seen)
    loaded.shutdown()


def test_the_marker_is_removed_before_any_log_is_opened(tmp_path, monkeypatch):
    """KAFKA-10471: a crash while loading (logs half-recovered, segments rewritten) must not
    find the marker at the next start-up and trust those files."""
    manager = started([tmp_path])
    manager.get_or_create_log("t", 0).append_as_leader(batch(b"x"), leader_epoch=0)
    manager.shutdown()
    assert (tmp_path / CLEAN_SHUTDOWN_MARKER).exists()

    seen: list = []
    marker_seen = []
    from brokerd.log import manager as manager_module

    _instrumented_loads(monkeypatch, seen)
    wrapped = manager_module.load_log

    def load_log(directory, *args, **kwargs):
        marker_seen.append((directory.parent / CLEAN_SHUTDOWN_MARKER).exists())
        return wrapped(directory, *args, **kwargs)

    monkeypatch.setattr(manager_module, "load_log", load_log)
    loaded = started([tmp_path])
    assert loaded.had_clean_shutdown[tmp_path]  # loaded as clean all the same
    assert marker_seen == [False]
    loaded.shutdown()


def test_shutdown_marks_only_the_log_dirs_whose_logs_all_closed(tmp_path, monkeypatch):
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = started(dirs)
    logs = [manager.get_or_create_log("spread", p) for p in range(2)]
    broken = logs[0]

    def failing_close():
        raise OSError("disk gone")

    monkeypatch.setattr(broken, "close", failing_close)
    manager.shutdown()
    assert not (broken.dir.parent / CLEAN_SHUTDOWN_MARKER).exists()
    assert (logs[1].dir.parent / CLEAN_SHUTDOWN_MARKER).exists()


def test_after_a_crash_the_active_segment_is_scanned_once(tmp_path, caplog):
    """A crashed broker leaves its active segments' indexes preallocated (untrimmed: their
    entries, then zeros): recovery rebuilds them in its own scan, without a failed check
    and a rebuild scan first."""
    values = [b"v%02d" % i + b"." * 40 for i in range(35)]
    # Several segments, and index entries in the active one.
    config = LogConfig(segment_bytes=1500, index_interval_bytes=50)

    def start():
        manager = LogManager([tmp_path], config)
        manager.startup()
        return manager

    manager = start()
    log = manager.get_or_create_log("t", 0)
    for i, value in enumerate(values[:30]):
        log.append_as_leader(batch(value, timestamp=1000 + i), leader_epoch=0)
    manager.shutdown()
    reopened = start()  # the active segment's indexes preallocated again, entries first
    log = reopened.get_log("t", 0)
    for i, value in enumerate(values[30:]):
        log.append_as_leader(batch(value, timestamp=2000 + i), leader_epoch=0)
    _crash(reopened)
    with caplog.at_level("WARNING", logger="brokerd.log.recovery"):
        recovered = start()
    assert not [r for r in caplog.records if "rebuilding the indexes" in r.getMessage()]
    log = recovered.get_log("t", 0)
    assert log.log_end_offset == 35
    assert [r.value for r in read_all(log, 20)] == values[20:]
    assert log.fetch_offset_by_timestamp(2002).offset == 32  # the rebuilt time index
    recovered.shutdown()


class _CountingLogs(dict):
    """The manager's logs map, counting the walks over every log."""

    walks = 0

    def values(self):
        type(self).walks += 1
        return super().values()


def test_creating_many_logs_does_not_count_every_log_for_each_new_one(tmp_path):
    # Kafka's nextLogDirs counts the logs per dir for each creation: O(N) per log, so
    # creating N logs cost O(N^2). The counts are kept as logs are made; they are taken
    # again only after the logs changed some other way (a deletion here).
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = started(dirs)
    manager.logs = _CountingLogs(manager.logs)
    for p in range(60):
        manager.get_or_create_log("many", p)
    assert _CountingLogs.walks <= 1  # the first creation's count
    per_dir = {d: sum(lg.dir.parent == d for lg in manager.all_logs()) for d in dirs}
    assert per_dir == {dirs[0]: 30, dirs[1]: 30}
    for p in range(0, 20, 2):  # ten logs leave dir a: the next ten new ones go there
        if manager.get_log("many", p).dir.parent == dirs[0]:
            manager.delete_log("many", p)
    deleted_from_a = 30 - sum(lg.dir.parent == dirs[0] for lg in manager.all_logs())
    assert deleted_from_a > 0
    _CountingLogs.walks = 0
    placed = [manager.get_or_create_log("many", p).dir.parent for p in range(100, 110)]
    assert _CountingLogs.walks <= 1  # counted again once after the deletions
    assert placed[:deleted_from_a] == [dirs[0]] * deleted_from_a
    manager.shutdown()


def test_the_two_checkpoint_timers_never_take_the_dir_offline_when_they_meet(tmp_path):
    """checkpoint() (log.flush.offset.checkpoint.interval.ms) and checkpoint_high_watermarks()
    (replica.high.watermark.checkpoint.interval.ms) run on two worker threads and both write
    replication-offset-checkpoint: when they met, one rename moved the other's temporary file
    away and the dir went offline (found by review)."""
    import threading

    manager = started([tmp_path])
    for p in range(200):
        manager.get_or_create_log("orders", p)
    go = threading.Barrier(2)

    def repeat(write):
        go.wait()
        for _ in range(40):
            write()

    threads = [
        threading.Thread(target=repeat, args=(manager.checkpoint,)),
        threading.Thread(target=repeat, args=(manager.checkpoint_high_watermarks,)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert manager.offline_dirs == {}
    assert len(OffsetCheckpointFile(tmp_path / REPLICATION_CHECKPOINT).read()) == 200
    manager.shutdown()


def test_an_idle_brokers_checkpoint_timers_rewrite_nothing(tmp_path):
    """Every replica.high.watermark.checkpoint.interval.ms a broker of 10,000 idle logs
    rewrote (and fsynced) the same file: a checkpoint is written only when what it holds
    changed since this manager last wrote it."""
    manager = started([tmp_path])
    log = manager.get_or_create_log("orders", 0)
    manager.get_or_create_log("orders", 1)
    log.append_as_leader(batch(b"v"), leader_epoch=0)
    log.update_high_watermark(1)
    manager.checkpoint()
    path = tmp_path / REPLICATION_CHECKPOINT
    written = {name: os.stat(tmp_path / name).st_ino for name in CHECKPOINTS}
    manager.checkpoint_high_watermarks()
    manager.checkpoint()
    assert {name: os.stat(tmp_path / name).st_ino for name in CHECKPOINTS} == written

    log.append_as_leader(batch(b"w"), leader_epoch=0)
    log.update_high_watermark(2)
    manager.checkpoint_high_watermarks()
    assert os.stat(path).st_ino != written[REPLICATION_CHECKPOINT]
    assert OffsetCheckpointFile(path).read() == {("orders", 0): 2, ("orders", 1): 0}
    manager.get_or_create_log("orders", 2)  # a new log is a change too
    manager.checkpoint_high_watermarks()
    assert ("orders", 2) in OffsetCheckpointFile(path).read()
    manager.shutdown()


CHECKPOINTS = (RECOVERY_POINT_CHECKPOINT, LOG_START_CHECKPOINT, REPLICATION_CHECKPOINT)
