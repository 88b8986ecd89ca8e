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
