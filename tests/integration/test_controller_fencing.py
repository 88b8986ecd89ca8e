"""A deposed controller's writes are fenced on /controller_epoch (real ZooKeeper).

Two Controller objects in this process, each with its own ZooKeeper session on one chroot,
play the old and the new controller: the old one still believes it rules (a paused or
partitioned broker that has not yet seen its session expire) and tries to write a
partition state. The multi-op check on /controller_epoch's version must refuse the write,
leave the successor's state as it was, and make the old controller resign.
"""

from __future__ import annotations

import itertools

import pytest

from brokerd.coordination import zk_data
from brokerd.coordination.controller import Controller
from brokerd.coordination.metadata import MetadataCache
from brokerd.coordination.zk_client import ZkClient
from brokerd.coordination.zk_data import PartitionState

_chroots = itertools.count(1)


async def _controller(zookeeper, chroot: str, broker_id: int) -> Controller:
    client = ZkClient(zookeeper.connect, chroot, session_timeout_ms=6000, connect_ms=10000)
    await client.start()
    cache = MetadataCache(client)
    await cache.load()
    return Controller(client, broker_id, cache)


@pytest.fixture
async def pair(zookeeper):
    chroot = f"/fencing-{next(_chroots)}"
    made = [await _controller(zookeeper, chroot, 1), await _controller(zookeeper, chroot, 2)]
    yield made
    for controller in made:
        await controller.stop()
        await controller.zk.stop()


async def _state(client: ZkClient, topic: str) -> PartitionState:
    data, version = await client.get_json(zk_data.partition_state_path(topic, 0))
    return PartitionState.from_json(data, version)


async def test_deposed_controller_cannot_overwrite_its_successors_state(pair):
    old, new = pair
    assert await old.elect()
    assert old.epoch == 1
    await old.create_topic("fenced", {0: [1, 2]}, {})
    written = await _state(old.zk, "fenced")
    assert (written.leader, written.controller_epoch) == (1, 1)

    # The old controller's session "expired": its /controller went, a successor took over.
    # The old one is paused meanwhile: it must not run for election on the vacancy (it could
    # win the race, and the successor's elect() below would then fail).
    old.registered = False
    await new.zk.delete(zk_data.CONTROLLER)
    assert await new.elect()
    assert new.epoch == 2
    await new.cache.refresh_topic("fenced")
    successors = await _state(new.zk, "fenced")  # no live brokers here: leader -1

    # The zombie, not yet aware, writes a state on top of the latest one.
    def grab(state: PartitionState) -> PartitionState:
        return PartitionState(
            leader=2, leader_epoch=state.leader_epoch + 1, isr=[2], controller_epoch=old.epoch
        )

    old.cache.controller_id = old.broker_id  # it still believes it rules
    assert old.is_active
    old.cache.topics["fenced"].states[0] = successors  # even knowing the latest version
    assert not await old.partition_states.write("fenced", 0, grab)
    assert await _state(new.zk, "fenced") == successors
    assert not old.is_active  # it learnt epoch 2 and stepped down
    assert old.highest_seen_epoch == 2

    # The successor's own writes go through.
    assert await new.partition_states.write("fenced", 0, grab)
    assert (await _state(new.zk, "fenced")).leader == 2


async def test_only_the_controller_writes_first_partition_states(pair):
    controller, other = pair
    assert await controller.elect()
    other.registered = True
    await other.cache.refresh_controller()
    assert not other.is_active

    # The controller's cache hands new topics to elect_missing_leaders, as the broker does.
    controller.cache.listeners.append(lambda: controller._spawn(controller.elect_missing_leaders()))
    info = await other.create_topic("from-a-follower", {0: [1, 2], 1: [2, 1]}, {})

    assert sorted(info.states) == [0, 1]
    for partition in (0, 1):
        data, _ = await other.zk.get_json(
            zk_data.partition_state_path("from-a-follower", partition)
        )
        assert data["controller_epoch"] == controller.epoch
