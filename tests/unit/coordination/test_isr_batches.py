"""ISR changes of many partitions at once cost a bounded number of ZooKeeper round trips.

A ReplicaManager (real logs, a real ZooKeeper) leads many partitions whose follower never
fetches: after replica.lag.time.max.ms every ISR shrinks. The leader writes the new states
as pipelined batches of conditional writes and tells the controller with one
/isr_change_notification for the lot, where the code before wrote each state and its own
notification in series (two round trips per partition). A clash with another write is
re-read and written again only while this broker still leads at that epoch.
"""

from __future__ import annotations

import asyncio

import pytest

from brokerd.coordination import zk_data
from brokerd.coordination.zk_data import PartitionState
from tests.harness import java_available
from tests.unit.replication.replica_setup import CONTROLLER_EPOCH, LOCAL, PEER, started_setup

from .test_zk_round_trips import RoundTrips

pytestmark = pytest.mark.skipif(not java_available(), reason="needs Debian's zookeeper")

PARTITIONS = 200


@pytest.fixture
async def setup(zookeeper, tmp_path):
    async with started_setup(zookeeper, tmp_path, "isr-batches") as made:
        yield made


async def _lead(setup, name: str, partitions: int) -> dict[int, PartitionState]:
    """A topic whose partitions this broker leads with PEER in the ISR (znodes in batches)."""
    assignment = {p: [LOCAL, PEER] for p in range(partitions)}
    await setup.zk.create_json(
        zk_data.topic_path(name), zk_data.topic_assignment(zk_data.new_kafka_uuid(), assignment)
    )
    await setup.zk.ensure_path(zk_data.partitions_path(name))
    await setup.zk.create_many([(f"{zk_data.partitions_path(name)}/{p}", b"") for p in assignment])
    states = {p: PartitionState(LOCAL, 0, [LOCAL, PEER], CONTROLLER_EPOCH, 0) for p in assignment}
    await setup.zk.create_many(
        [
            (zk_data.partition_state_path(name, p), zk_data.encode(s.to_json()))
            for p, s in states.items()
        ]
    )
    await setup.metadata.refresh_topic(name)
    results = await setup.replicas.become_leader_or_follower(
        0, CONTROLLER_EPOCH, [(name, p, s, [LOCAL, PEER]) for p, s in states.items()]
    )
    assert set(results.values()) == {0}
    return states


async def _until(check, timeout: float = 60.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.05)


async def _stored_isrs(setup, name: str, partitions: int) -> list[list[int]]:
    found = await setup.zk.get_json_many(
        [zk_data.partition_state_path(name, p) for p in range(partitions)]
    )
    return [f[0]["isr"] for f in found]


async def test_shrinking_many_isrs_is_a_few_batches_and_one_notification(setup, monkeypatch):
    counter = RoundTrips(setup.zk, monkeypatch)
    await _lead(setup, "wide", PARTITIONS)
    before = counter.total  # some may have shrunk already: counted below as none

    async def all_shrunk() -> bool:
        return all(setup.replicas.leader("wide", p).isr == [LOCAL] for p in range(PARTITIONS))

    await _until(all_shrunk)
    assert await _stored_isrs(setup, "wide", PARTITIONS) == [[LOCAL]] * PARTITIONS
    # One pipelined batch of writes and one of notifications per ISR check that found
    # stale followers (the checks run every replica.lag.time.max.ms / 2, so on a loaded
    # machine the partitions may go stale over a few checks); the code before spent two
    # round trips per partition in series (400 here).
    assert counter.total - before < 30, counter.total - before
    children = await setup.zk.children(zk_data.ISR_CHANGE_NOTIFICATION)
    assert 1 <= len(children) <= 15, len(children)
    named = set()
    for found in await setup.zk.get_json_many(
        [f"{zk_data.ISR_CHANGE_NOTIFICATION}/{c}" for c in children]
    ):
        named |= zk_data.parse_isr_change_notification(found[0])
    assert named == {("wide", p) for p in range(PARTITIONS)}
    assert setup.isr_changes == [False] * PARTITIONS
    assert all(setup.metadata.topic("wide").states[p].isr == [LOCAL] for p in range(PARTITIONS))


async def test_a_clash_is_written_again_unless_the_controller_moved_on(setup):
    # Partition 0's znode was rewritten by someone else at the same leader and epoch (the
    # leader writes again over it); partition 1's by a controller that elected PEER at
    # epoch 1 (this broker keeps its ISR and writes nothing).
    states = await _lead(setup, "clash", 2)
    same = PartitionState(LOCAL, 0, [LOCAL, PEER], CONTROLLER_EPOCH)
    moved = PartitionState(PEER, 1, [PEER], CONTROLLER_EPOCH)
    for index, state in ((0, same), (1, moved)):
        await setup.zk.set_json(
            zk_data.partition_state_path("clash", index), state.to_json(), states[index].zk_version
        )

    async def settled() -> bool:
        # Both went stale in the same ISR check, so they were written in the same batch.
        return setup.replicas.leader("clash", 0).isr == [LOCAL]

    await _until(settled)
    data, version = await setup.zk.get_json(zk_data.partition_state_path("clash", 0))
    assert (data["leader"], data["leader_epoch"], data["isr"], version) == (LOCAL, 0, [LOCAL], 2)
    assert setup.replicas.leader("clash", 0).isr == [LOCAL]
    data, version = await setup.zk.get_json(zk_data.partition_state_path("clash", 1))
    assert (data["leader"], data["leader_epoch"], data["isr"], version) == (PEER, 1, [PEER], 1)
    assert setup.replicas.leader("clash", 1).isr == [LOCAL, PEER]
