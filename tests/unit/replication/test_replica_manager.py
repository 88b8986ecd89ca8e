"""ReplicaManager built on its own: a real LogManager in a temporary directory, a real
ZooKeeper (the session's, one chroot per test) behind the metadata cache, and the
controller's requests called directly."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from brokerd.coordination import zk_data
from brokerd.coordination.zk_data import PartitionState
from brokerd.log.leader_epochs import EpochEntry
from brokerd.protocol.errors import ErrorCode, KafkaError
from brokerd.records.batch import SimpleRecord, build_batch
from tests.unit.replication.replica_setup import CONTROLLER_EPOCH, LOCAL, PEER, started_setup


@pytest.fixture
async def setup(zookeeper, tmp_path):
    async with started_setup(zookeeper, tmp_path, "replica-manager") as made:
        yield made


def _batch(value: bytes) -> bytes:
    return bytes(build_batch([SimpleRecord(value, None, (), 0)]))


async def test_leading_makes_the_log_and_takes_appends(setup):
    state = await setup.create_topic("t", [LOCAL], [LOCAL])
    assert await setup.become("t", state, [LOCAL]) == {("t", 0): ErrorCode.none}

    partition = setup.replicas.leader("t", 0)
    assert setup.replicas.local_log("t", 0) is partition.log
    assert partition.log.dir.parent == setup.log_manager.log_dirs[0]
    info = setup.replicas.append(partition, _batch(b"v"), acks=-1)
    assert (info.first_offset, partition.log.high_watermark) == (0, 1)  # ISR is just us
    # An older controller is refused; the same epoch is answered NONE again.
    with pytest.raises(KafkaError) as refused:
        await setup.become("t", state, [LOCAL], epoch=CONTROLLER_EPOCH - 1)
    assert refused.value.error_code == ErrorCode.stale_controller_epoch
    assert await setup.become("t", state, [LOCAL]) == {("t", 0): ErrorCode.none}


async def test_no_log_is_made_for_a_topic_zookeeper_does_not_hold(setup):
    state = PartitionState(LOCAL, 0, [LOCAL], CONTROLLER_EPOCH)
    result = await setup.become("gone", state, [LOCAL])
    assert result == {("gone", 0): ErrorCode.unknown_topic_or_partition}
    assert setup.replicas.local_log("gone", 0) is None
    assert not any(setup.log_manager.log_dirs[0].glob("gone-*"))


async def test_a_follower_is_fetched_for_until_it_leads(setup):
    state = await setup.create_topic("f", [PEER, LOCAL], [PEER, LOCAL])
    assert await setup.become("f", state, [PEER, LOCAL]) == {("f", 0): ErrorCode.none}
    assert ("f", 0) in setup.replicas.fetchers.fetchers[PEER].partitions
    with pytest.raises(KafkaError) as refused:
        setup.replicas.leader("f", 0)
    assert refused.value.error_code == ErrorCode.not_leader_or_follower

    promoted = PartitionState(LOCAL, 1, [LOCAL, PEER], CONTROLLER_EPOCH, zk_version=1)
    assert await setup.become("f", promoted, [PEER, LOCAL]) == {("f", 0): ErrorCode.none}
    assert ("f", 0) not in setup.replicas.fetchers.fetchers[PEER].partitions
    assert setup.replicas.leader("f", 0).leader_epoch == 1


async def test_stop_replica_with_delete_removes_the_directory(setup):
    state = await setup.create_topic("d", [LOCAL], [LOCAL])
    await setup.become("d", state, [LOCAL])
    directory = setup.replicas.local_log("d", 0).dir
    await setup.replicas.stop_replicas(CONTROLLER_EPOCH, [("d", 0, True)])
    assert setup.replicas.local_log("d", 0) is None
    assert not directory.exists()  # renamed at once
    log_dir = setup.log_manager.log_dirs[0]
    for _ in range(500):  # removed in the background after file.delete.delay.ms (0)
        if not any(log_dir.glob("d-0*")):
            break
        await asyncio.sleep(0.01)
    assert not any(log_dir.glob("d-0*"))


async def test_a_lagging_follower_leaves_the_isr_in_zookeeper(setup):
    state = await setup.create_topic("i", [LOCAL, PEER], [LOCAL, PEER])
    await setup.become("i", state, [LOCAL, PEER])
    path = zk_data.partition_state_path("i", 0)
    # The follower never fetches: after replica.lag.time.max.ms the leader writes the ISR
    # without it, conditionally on the state znode's version, and tells the controller.
    # The leader applies the ISR once ZooKeeper answered the write, then announces it.
    for _ in range(1000):
        found = await setup.zk.get_json(path)
        notified = await setup.zk.children(zk_data.ISR_CHANGE_NOTIFICATION)
        if found[0]["isr"] == [LOCAL] and setup.isr_changes and notified:
            break
        await asyncio.sleep(0.01)
    assert found[0]["isr"] == [LOCAL] and found[1] == 1
    assert setup.replicas.leader("i", 0).isr == [LOCAL]
    assert setup.isr_changes == [False]
    assert setup.metadata.topic("i").states[0].isr == [LOCAL]
    assert notified


async def test_the_cached_state_only_moves_forward(setup):
    await setup.create_topic("c", [LOCAL], [LOCAL])
    newer = PartitionState(LOCAL, 2, [LOCAL], CONTROLLER_EPOCH, zk_version=4)
    setup.replicas.cache_partition_state("c", 0, newer)
    setup.replicas.cache_partition_state("c", 0, PartitionState(PEER, 1, [PEER], 1, 9))
    assert setup.metadata.topic("c").states[0] is newer
    setup.replicas.cache_partition_state("unknown", 0, newer)  # no topic, nothing cached
    assert setup.metadata.topic("unknown") is None


async def test_many_new_leaders_make_their_epoch_checkpoints_durable_with_one_sync(
    setup, monkeypatch
):
    """A failover makes thousands of leaders in one LeaderAndIsr: their leader-epoch
    checkpoints are written without an fsync each, then made durable together (one syncfs
    per filesystem) before the partitions lead; one fsync pair each took seconds."""
    import brokerd.log.checkpoints as checkpoints
    import brokerd.replication.replica_manager as replica_manager

    fsyncs: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(checkpoints.os, "fsync", lambda fd: (fsyncs.append(fd), real_fsync(fd)))
    synced: list[set] = []
    real_sync = replica_manager.sync_filesystems
    monkeypatch.setattr(
        replica_manager,
        "sync_filesystems",
        lambda dirs: (synced.append(set(dirs)), real_sync(dirs)),
    )
    names = [f"many-{n}" for n in range(5)]
    batch = []
    for name in names:
        state = await setup.create_topic(name, [LOCAL], [LOCAL])
        batch.append((name, 0, state, [LOCAL]))
    fsyncs.clear()
    results = await setup.replicas.become_leader_or_follower(0, CONTROLLER_EPOCH, batch)
    assert set(results.values()) == {ErrorCode.none}
    assert fsyncs == []  # no per-file fsync
    assert len(synced) == 1 and len(synced[0]) == 1  # one log dir, synced once
    for name in names:
        log = setup.replicas.leader(name, 0).log
        assert log.leader_epoch_cache.checkpoint.read() == [EpochEntry(0, 0)]


async def test_a_new_leader_epoch_is_checkpointed_off_the_event_loop(setup):
    """The leader-epoch checkpoint is fsynced when an epoch starts: on a worker thread for a
    new leader and for a leader re-elected at a higher epoch, never on the loop, and the
    first append of the epoch writes nothing more."""
    state = await setup.create_topic("e", [LOCAL], [LOCAL])
    loop_thread = threading.get_ident()
    log = setup.log_manager.get_or_create_log("e", 0, setup.log_config)
    flushes: list[int] = []
    flush = log.leader_epoch_cache.flush

    def recorded_flush(sync=True):
        flushes.append(threading.get_ident())
        flush(sync)

    log.leader_epoch_cache.flush = recorded_flush
    await setup.become("e", state, [LOCAL])
    partition = setup.replicas.leader("e", 0)
    setup.replicas.append(partition, _batch(b"a"), acks=1)

    bumped = PartitionState(LOCAL, 1, [LOCAL], CONTROLLER_EPOCH, zk_version=1)
    assert await setup.become("e", bumped, [LOCAL]) == {("e", 0): ErrorCode.none}
    setup.replicas.append(partition, _batch(b"b"), acks=1)

    assert len(flushes) == 2 and loop_thread not in flushes
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries] == [(0, 0), (1, 1)]
