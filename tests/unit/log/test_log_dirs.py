"""Several log dirs in the log manager: where partitions go, moving a replica to another dir
while it is written (the future replica and its swap), a failed dir taken offline alone."""

import os
import shutil
import threading
import time

import pytest

from brokerd.config import LogConfig
from brokerd.log import errors
from brokerd.log.checkpoints import OffsetCheckpointFile
from brokerd.log.future_replica import UNLIMITED, AlterLogDirsQuota, FutureReplicaMove
from brokerd.log.log import parse_dir_name
from brokerd.log.manager import (
    CLEAN_SHUTDOWN_MARKER,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_CHECKPOINT,
    DuplicateLogDirError,
    LogManager,
    delete_dir_name,
    future_dir_name,
)
from brokerd.log.recovery import load_log

from .helpers import batch, read_all


def started(dirs, **kw):
    manager = LogManager(dirs, LogConfig(segment_bytes=2000, file_delete_delay_ms=0), **kw)
    manager.startup()
    return manager


def wait_for(condition, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_future_dir_names_parse_as_their_partition():
    name = future_dir_name("a-b.c", 7)
    assert name.startswith("a-b.c-7.") and name.endswith("-future")
    assert parse_dir_name(name) == ("a-b.c", 7)
    # A topic that merely looks like one keeps its own partition.
    assert parse_dir_name("x-future-3") == ("x-future", 3)


def test_new_partitions_go_to_the_dir_with_fewest(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    manager = started(dirs)
    for p in range(6):
        manager.get_or_create_log("t", p)
    counts = {d: sum(1 for lg in manager.all_logs() if lg.dir.parent == d) for d in dirs}
    assert counts == {dirs[0]: 2, dirs[1]: 2, dirs[2]: 2}
    manager.shutdown()


def test_move_under_appends_loses_nothing(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    manager = started([a, b])
    partition_log = manager.get_or_create_log("t", 0)
    source = partition_log.dir.parent
    target = b if source == a else a
    for i in range(200):
        partition_log.append_as_leader(batch(b"before-%d" % i), leader_epoch=0)
    stop = threading.Event()
    appended = []

    def produce():
        i = 0
        while not stop.is_set():
            partition_log.append_as_leader(batch(b"during-%d" % i), leader_epoch=0)
            appended.append(i)
            i += 1

    writer = threading.Thread(target=produce)
    writer.start()
    try:
        manager.alter_log_dir("t", 0, str(target))
        assert ("t", 0) in manager.future_logs
        assert manager.future_logs[("t", 0)].dir.name.endswith("-future")
        wait_for(lambda: partition_log.dir.parent == target)
    finally:
        stop.set()
        writer.join()
    # The same object now writes to the new dir; the old directory goes away.
    assert manager.get_log("t", 0) is partition_log
    assert ("t", 0) not in manager.future_logs
    partition_log.append_as_leader(batch(b"after"), leader_epoch=0)
    values = [r.value for r in read_all(partition_log)]
    expected = [b"before-%d" % i for i in range(200)]
    expected += [b"during-%d" % i for i in appended] + [b"after"]
    assert values == expected
    wait_for(lambda: not (source / "t-0").exists() and not list(source.glob("t-0.*")))
    manager.shutdown()
    # A restart finds it in the new dir only.
    again = started([a, b])
    assert again.get_log("t", 0).dir.parent == target
    assert [r.value for r in read_all(again.get_log("t", 0))] == expected
    again.shutdown()


def test_alter_log_dir_errors(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    manager = started([a, b])
    with pytest.raises(errors.LogDirNotFoundError):
        manager.alter_log_dir("t", 0, str(tmp_path / "elsewhere"))
    with pytest.raises(errors.LogDirNotFoundError):
        manager.alter_log_dir("t", 0, "a")  # not absolute
    # No replica yet: REPLICA_NOT_AVAILABLE, and the dir is used when it is made.
    with pytest.raises(errors.ReplicaNotAvailableError):
        manager.alter_log_dir("t", 0, str(b))
    assert manager.get_or_create_log("t", 0).dir.parent == b
    # Already there: nothing to do.
    manager.alter_log_dir("t", 0, str(b))
    assert not manager.future_logs
    manager.shutdown()


def test_failed_dir_goes_offline_alone(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    manager = started([a, b])
    heard = []
    manager.dir_failure_listeners.append(lambda d, reason: heard.append(d))
    logs = [manager.get_or_create_log("t", p) for p in range(4)]
    on_a = [lg for lg in logs if lg.dir.parent == a]
    gone = manager.fail_dir(a, "test")
    assert sorted(gone) == sorted((lg.topic, lg.partition) for lg in on_a)
    assert heard == [a]
    assert all(tp in manager.offline_partitions for tp in gone)
    with pytest.raises(errors.KafkaStorageError):
        on_a[0].append_as_leader(batch(b"x"), leader_epoch=0)
    for lg in logs:
        if lg.dir.parent == b:
            lg.append_as_leader(batch(b"y"), leader_epoch=0)
    # New partitions go to the live dir; moves into the failed dir are refused.
    assert manager.get_or_create_log("u", 0).dir.parent == b
    with pytest.raises(errors.KafkaStorageError):
        manager.alter_log_dir("u", 0, str(a))
    manager.checkpoint()  # the offline dir is skipped
    manager.shutdown()


def test_move_carries_an_epoch_with_no_batches_yet(tmp_path):
    """A leader elected again records its epoch at the log end before any append: no batch
    carries it, and the move must not wait for the copy to have it (it spun before)."""
    a, b = tmp_path / "a", tmp_path / "b"
    manager = started([a, b])
    partition_log = manager.get_or_create_log("t", 0)
    target = b if partition_log.dir.parent == a else a
    for i in range(20):
        partition_log.append_as_leader(batch(b"v%d" % i), leader_epoch=3)
    partition_log.assign_epoch_start(7)
    manager.alter_log_dir("t", 0, str(target))
    wait_for(lambda: partition_log.dir.parent == target)
    # As after a restart, the empty epoch is recorded by its first append.
    info = partition_log.append_as_leader(batch(b"at-7"), leader_epoch=7)
    assert info.first_offset == 20
    cache = partition_log.leader_epoch_cache
    assert cache.end_offset_for(3, partition_log.log_end_offset) == (3, 20)
    assert cache.epoch_for_offset(20) == 7
    manager.shutdown()


def test_move_follows_a_truncation_of_the_current_log(tmp_path):
    """A follower's log truncated while it is copied: the copy is cut back with it."""
    a, b = tmp_path / "a", tmp_path / "b"
    manager = started([a, b])
    partition_log = manager.get_or_create_log("t", 0)
    target = b if partition_log.dir.parent == a else a
    for i in range(300):
        partition_log.append_as_leader(batch(b"old-%d" % i), leader_epoch=1)
    manager.alter_log_dir("t", 0, str(target))
    partition_log.truncate_to(150)
    for i in range(10):
        partition_log.append_as_leader(batch(b"new-%d" % i), leader_epoch=2)
    wait_for(lambda: partition_log.dir.parent == target)
    values = [r.value for r in read_all(partition_log)]
    assert values == [b"old-%d" % i for i in range(150)] + [b"new-%d" % i for i in range(10)]
    manager.shutdown()


def _partial_copy(a, b, records: int, copied_bytes: int | None, high_watermark: int = 0):
    """The disk a crash leaves mid-move: `t-0` in `a` with `records` batches (its high
    watermark checkpointed at `high_watermark`) and a `-future` copy of it in `b`, made by
    the move's own copy step (`copied_bytes` of it, or all of it when None). Returns the
    copy's directory."""
    manager = started([a, b])
    partition_log = manager.get_or_create_log("t", 0)
    assert partition_log.dir.parent == a
    for i in range(records):
        partition_log.append_as_leader(batch(b"v-%d" % i), leader_epoch=1)
    partition_log.update_high_watermark(high_watermark)
    manager.shutdown()
    config = LogConfig(segment_bytes=2000, file_delete_delay_ms=0)
    current = load_log(a / "t-0", config, had_clean_shutdown=True)
    future = load_log(b / future_dir_name("t", 0), config, had_clean_shutdown=True)
    move = FutureReplicaMove(current, future, lambda _move: False)
    if copied_bytes is None:
        while move.copy_step():
            pass
    else:
        move.copy_step(copied_bytes)
    assert 0 < future.log_end_offset <= current.log_end_offset
    copied = future.log_end_offset
    current.close()
    future.close()
    return future.dir, copied


def test_a_move_cut_short_by_a_restart_is_resumed(tmp_path):
    """As Kafka's future logs: a `-future` copy found at start-up beside its current log
    goes on being copied from where it ended, then is swapped in (it was dropped before)."""
    a, b = tmp_path / "a", tmp_path / "b"
    copy, copied = _partial_copy(a, b, 300, 3000)
    assert copied < 300
    manager = started([a, b])
    partition_log = manager.get_or_create_log("t", 0)
    for i in range(300, 320):
        partition_log.append_as_leader(batch(b"v-%d" % i), leader_epoch=2)
    wait_for(lambda: partition_log.dir.parent == b)
    assert partition_log.dir == b / "t-0" and not copy.exists()
    assert ("t", 0) not in manager.future_logs and not manager.moving()
    expected = [b"v-%d" % i for i in range(320)]
    assert [r.value for r in read_all(partition_log)] == expected
    wait_for(lambda: not list(a.glob("t-0*")))
    manager.shutdown()
    again = started([a, b])
    assert again.get_log("t", 0).dir == b / "t-0"
    assert [r.value for r in read_all(again.get_log("t", 0))] == expected
    again.shutdown()


def test_a_swap_cut_short_between_its_renames_is_completed(tmp_path):
    """The swap renames the old replica `-delete`, then the complete copy to the
    partition's name: a crash in between leaves the copy alone, which start-up takes as
    the partition's log, and the old one is left for deletion."""
    a, b = tmp_path / "a", tmp_path / "b"
    copy, copied = _partial_copy(a, b, 100, None)
    assert copied == 100
    doomed = a / delete_dir_name("t", 0)
    os.replace(a / "t-0", doomed)
    manager = started([a, b])
    partition_log = manager.get_log("t", 0)
    assert partition_log is not None and partition_log.dir == b / "t-0"
    assert [r.value for r in read_all(partition_log)] == [b"v-%d" % i for i in range(100)]
    assert doomed in manager.dirs_to_delete and not copy.exists()
    info = partition_log.append_as_leader(batch(b"next"), leader_epoch=1)
    assert info.first_offset == 100
    manager.shutdown()


def test_a_shutdown_keeps_a_moves_copy_for_the_next_start(tmp_path):
    """A clean shutdown mid-move closes the copy instead of dropping it; the next start
    resumes and finishes the move."""
    a, b = tmp_path / "a", tmp_path / "b"
    manager = LogManager([a, b], LogConfig(segment_bytes=1 << 20, file_delete_delay_ms=0))
    manager.startup()
    partition_log = manager.get_or_create_log("t", 0)
    value = b"x" * 4000
    for i in range(3000):  # ~12 MiB: more than one copy step
        partition_log.append_as_leader(batch(value + b"%d" % i), leader_epoch=0)
    manager.alter_log_dir("t", 0, str(b))
    manager.shutdown()
    if partition_log.dir.parent == a:  # stopped mid-move (almost always): a copy is kept
        assert len(list(b.glob("t-0.*-future"))) == 1
    again = LogManager([a, b], LogConfig(segment_bytes=1 << 20, file_delete_delay_ms=0))
    again.startup()
    moved = again.get_log("t", 0)
    wait_for(lambda: moved.dir.parent == b)
    assert moved.log_end_offset == 3000 and not list(b.glob("*-future"))
    again.shutdown()


def test_a_move_failing_on_its_source_takes_the_source_offline(tmp_path):
    """The current replica's dir broke under a move (here replaced by a file: the open
    files still read, the swap's rename of the old replica fails): that dir goes offline,
    not the target the copy was written to."""
    a, b = tmp_path / "a", tmp_path / "b"
    manager = started([a, b])
    heard = []
    manager.dir_failure_listeners.append(lambda d, reason: heard.append(d))
    partition_log = manager.get_or_create_log("t", 0)
    assert partition_log.dir.parent == a
    for i in range(50):
        partition_log.append_as_leader(batch(b"v-%d" % i), leader_epoch=0)
    os.replace(a, tmp_path / "a.broken")
    a.write_text("not a directory any more")
    manager.alter_log_dir("t", 0, str(b))
    wait_for(lambda: heard)
    assert heard == [a]
    assert a in manager.offline_dirs and b not in manager.offline_dirs
    assert ("t", 0) in manager.offline_partitions
    wait_for(lambda: not manager.moving())
    assert not list(b.glob("t-0*"))  # the copy is dropped
    manager.get_or_create_log("u", 0).append_as_leader(batch(b"b still works"), leader_epoch=0)
    manager.shutdown()


def test_a_partition_in_two_dirs_refuses_the_start_as_kafka(tmp_path):
    """Two current replicas of one partition (say, an operator's copy): as Kafka's
    LogManager, the start-up stops and names both rather than serve one at random."""
    a, b = tmp_path / "a", tmp_path / "b"
    manager = started([a, b])
    for i in range(5):
        manager.get_or_create_log("t", 0).append_as_leader(batch(b"v-%d" % i), leader_epoch=0)
    manager.shutdown()
    shutil.copytree(a / "t-0", b / "t-0")
    again = LogManager([a, b], LogConfig(segment_bytes=2000, file_delete_delay_ms=0))
    with pytest.raises(DuplicateLogDirError, match="Duplicate log directories for t-0"):
        again.startup()


def test_a_moved_partition_counts_in_its_new_dir_for_placement(tmp_path):
    """After a move, new partitions are placed by the counts as they are now: the moved
    partition counts in its new dir (the counts kept for next_log_dir were stale: a move
    leaves the numbers of logs and future logs as they were)."""
    a, b = tmp_path / "a", tmp_path / "b"
    manager = started([a, b])
    placed = [manager.get_or_create_log("t", p).dir.parent for p in range(3)]
    assert placed == [a, b, a]
    moved = manager.get_log("t", 0)
    manager.alter_log_dir("t", 0, str(b))
    wait_for(lambda: moved.dir.parent == b and not manager.future_logs)
    # Now a holds one partition and b two: the next goes to a.
    assert manager.get_or_create_log("t", 3).dir.parent == a
    manager.shutdown()


def _without(directory, checkpoint, tp):
    """Rewrite a checkpoint file of `directory` without `tp`'s entry."""
    file = OffsetCheckpointFile(directory / checkpoint)
    entries = file.read()
    del entries[tp]
    file.write(entries)


def test_no_checkpointed_high_watermark_loads_as_0_not_the_log_end(tmp_path):
    """A partition the replication-offset-checkpoint lacks (made after the last checkpoint,
    then a crash) starts at high watermark 0 raised to its log start, as Kafka's
    Partition.createLog: the leader's fetch responses (or, as leader, its ISR) raise it.
    Taking the log end served records above the true high watermark as committed."""
    a = tmp_path / "a"
    manager = started([a])
    t0, t1 = manager.get_or_create_log("t", 0), manager.get_or_create_log("t", 1)
    for i in range(10):
        t0.append_as_leader(batch(b"v-%d" % i), leader_epoch=0)
        t1.append_as_leader(batch(b"v-%d" % i), leader_epoch=0)
    t0.update_high_watermark(4)
    t1.update_high_watermark(6)
    manager.shutdown()
    _without(a, REPLICATION_CHECKPOINT, ("t", 0))
    (a / CLEAN_SHUTDOWN_MARKER).unlink()
    again = started([a])
    assert again.get_log("t", 0).high_watermark == 0  # was 10
    assert again.get_log("t", 1).high_watermark == 6
    # Raised to the log start when that is above 0.
    again.get_log("t", 0).update_high_watermark(4)
    again.get_log("t", 0).maybe_increment_log_start_offset(3)
    again.shutdown()
    _without(a, REPLICATION_CHECKPOINT, ("t", 0))
    third = started([a])
    assert third.get_log("t", 0).high_watermark == 3
    third.shutdown()


def test_a_swap_cut_short_keeps_the_checkpointed_high_watermark(tmp_path):
    """The copy a swap cut short takes over with the high watermark the replaced replica
    had checkpointed, not its log end (the copy holds records not yet committed)."""
    a, b = tmp_path / "a", tmp_path / "b"
    _partial_copy(a, b, 100, None, high_watermark=60)
    os.replace(a / "t-0", a / delete_dir_name("t", 0))
    manager = started([a, b])
    promoted = manager.get_log("t", 0)
    assert promoted.dir == b / "t-0" and promoted.log_end_offset == 100
    assert promoted.high_watermark == 60  # was 100
    manager.shutdown()


def _big_log(manager, batches=200, size=16 * 1024):
    """t-0 in the manager's first dir, ~3 MiB (more than two copy steps)."""
    partition_log = manager.get_or_create_log("t", 0)
    for i in range(batches):
        partition_log.append_as_leader(batch(b"%d" % i + b"x" * size), leader_epoch=0)
    return partition_log


def test_future_logs_are_checkpointed_in_their_dir_and_resumed_from_there(tmp_path):
    """As Kafka's LogManager (logsByDir): a future log's recovery point, log start and high
    watermark go to its own dir's checkpoints, and a move resumed after an unclean restart
    loads its copy from that recovery point (it recovered the whole copy from 0)."""
    a, b = tmp_path / "a", tmp_path / "b"
    config = LogConfig(segment_bytes=1 << 20, file_delete_delay_ms=0)
    manager = LogManager([a, b], config, alter_log_dirs_io_max_bytes_per_second=1)
    manager.startup()
    partition_log = _big_log(manager)
    assert partition_log.dir.parent == a
    partition_log.update_high_watermark(5)
    manager.alter_log_dir("t", 0, str(b))
    future = manager.future_logs[("t", 0)]
    # One copy step (a segment), then the 1 byte/s bound holds the move.
    wait_for(lambda: future.log_end_offset > 5)
    assert future.log_end_offset < partition_log.log_end_offset
    future.flush()  # as flush.ms or a roll of the copy would: its recovery point moves
    manager.checkpoint()
    in_b = OffsetCheckpointFile(b / RECOVERY_POINT_CHECKPOINT).read()
    assert in_b[("t", 0)] == future.recovery_point > 0
    assert OffsetCheckpointFile(b / REPLICATION_CHECKPOINT).read()[("t", 0)] == 5
    assert OffsetCheckpointFile(a / REPLICATION_CHECKPOINT).read()[("t", 0)] == 5
    manager.shutdown()  # the copy is kept, closed (flushed), and checkpointed in b
    kept = OffsetCheckpointFile(b / RECOVERY_POINT_CHECKPOINT).read()[("t", 0)]
    assert kept > 0
    (b / CLEAN_SHUTDOWN_MARKER).unlink()  # as after a crash: b's logs are recovered
    again = LogManager([a, b], config, alter_log_dirs_io_max_bytes_per_second=1)
    again.alter_log_dirs_quota.record(1 << 30)  # no copy step until the test looked
    again.startup()
    resumed = again.future_logs[("t", 0)]
    assert resumed.recovery_point == kept  # was 0
    assert resumed.high_watermark == 5
    again.shutdown()


def test_the_alter_log_dirs_quota_is_kafkas_sampled_rate():
    now = [100.0]
    bound = [1000]
    quota = AlterLogDirsQuota(lambda: bound[0], window_num=11, window_s=1.0, clock=lambda: now[0])
    assert not quota.exceeded()
    quota.record(10_000)  # over at least 10 windows: 1,000 bytes/s, not above the bound
    assert quota.rate() == 1000 and not quota.exceeded()
    quota.record(1)
    assert quota.exceeded()
    bound[0] = 2000  # a dynamic change applies at once
    assert not quota.exceeded()
    bound[0] = 0
    now[0] += 11.0  # the samples expired
    assert quota.rate() == 0 and not quota.exceeded()
    assert not AlterLogDirsQuota().exceeded() and AlterLogDirsQuota().bound == UNLIMITED


def test_a_throttled_move_waits_and_goes_on_when_the_bound_is_raised(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    bound = [64 * 1024]
    manager = LogManager(
        [a, b],
        LogConfig(segment_bytes=1 << 20, file_delete_delay_ms=0),
        alter_log_dirs_io_max_bytes_per_second=lambda: bound[0],
    )
    manager.startup()
    partition_log = _big_log(manager)
    manager.alter_log_dir("t", 0, str(b))
    move = manager.moving()[("t", 0)]
    wait_for(lambda: move.future.log_end_offset > 0)
    time.sleep(1.0)  # ~1 MiB over >= 10 s windows is above 64 KiB/s: no second step
    assert move.future.log_end_offset < partition_log.log_end_offset
    assert partition_log.dir.parent == a and move.lag > 0
    bound[0] = UNLIMITED
    wait_for(lambda: partition_log.dir.parent == b)
    assert partition_log.log_end_offset == 200
    manager.shutdown()


@pytest.mark.parametrize("threads", [1, 2])
def test_num_replica_alter_log_dirs_threads_bounds_the_moves_copying_at_once(tmp_path, threads):
    a, b = tmp_path / "a", tmp_path / "b"
    manager = LogManager(
        [a, b],
        LogConfig(segment_bytes=1 << 20, file_delete_delay_ms=0),
        alter_log_dirs_threads=threads,
        alter_log_dirs_io_max_bytes_per_second=0,
    )
    manager.startup()
    logs = [manager.get_or_create_log("t", p) for p in range(4)]
    on_a = [lg for lg in logs if lg.dir.parent == a]
    for lg in on_a:
        lg.append_as_leader(batch(b"x" * 1000), leader_epoch=0)
        lg.append_as_leader(batch(b"y" * 1000), leader_epoch=0)
    manager.alter_log_dirs_quota.record(1)  # above the bound 0: nothing copies
    for lg in on_a:
        manager.alter_log_dir("t", lg.partition, str(b))
    moves = list(manager.moving().values())
    assert len(moves) == 2
    wait_for(lambda: sum(m.started.is_set() for m in moves) >= min(threads, 2))
    time.sleep(0.5)
    assert sum(m.started.is_set() for m in moves) == threads  # one mover: one at a time
    manager.shutdown()
