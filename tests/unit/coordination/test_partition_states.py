"""PartitionStateWriter on its own over a real ZooKeeper: conditional on the state znode's
version (a leader's ISR change in between is re-read, not overwritten) and on the
controller's fence (a deposed controller writes nothing and hands over)."""

from __future__ import annotations

import pytest

from brokerd.coordination import zk_data
from brokerd.coordination.zk_data import PartitionState

from .controller_parts import build


@pytest.fixture
async def parts(zookeeper):
    made = await build(zookeeper, {1: 1, 2: 2, 3: 3})
    yield made
    await made.close()


def _new_leader(leader: int, epoch: int):
    def compute(state: PartitionState) -> PartitionState:
        return PartitionState(leader, state.leader_epoch + 1, list(state.isr), epoch)

    return compute


async def test_a_write_lands_and_is_cached(parts):
    await parts.create_topic("w", {0: [1, 2, 3]})

    assert await parts.states.write("w", 0, _new_leader(2, parts.context.epoch))

    written = await parts.state("w", 0)
    assert (written.leader, written.leader_epoch, written.isr) == (2, 1, [1, 2, 3])
    assert parts.cache.partition_state("w", 0) == written


async def test_a_leaders_isr_change_in_between_is_read_again_not_overwritten(parts):
    await parts.create_topic("clash", {0: [1, 2, 3]})
    await parts.set_isr("clash", 0, [1, 2])  # the cached state's version is now stale
    seen = []

    def compute(state: PartitionState) -> PartitionState:
        seen.append(list(state.isr))
        return PartitionState(2, state.leader_epoch + 1, list(state.isr), parts.context.epoch)

    assert await parts.states.write("clash", 0, compute)

    assert seen == [[1, 2, 3], [1, 2]]
    written = await parts.state("clash", 0)
    assert (written.leader, written.isr) == (2, [1, 2])


async def test_nothing_to_write_and_unknown_partitions(parts):
    await parts.create_topic("none", {0: [1]})
    before = await parts.state("none", 0)

    assert not await parts.states.write("none", 0, lambda state: None)
    assert not await parts.states.write("none", 5, _new_leader(1, parts.context.epoch))
    assert not await parts.states.write("absent", 0, _new_leader(1, parts.context.epoch))

    assert await parts.state("none", 0) == before


async def test_a_deposed_controllers_write_is_refused(parts):
    await parts.create_topic("fenced", {0: [1, 2]})
    before = await parts.state("fenced", 0)
    await parts.zk.set_raw(
        zk_data.CONTROLLER_EPOCH, zk_data.encode_controller_epoch(parts.context.epoch + 1)
    )

    assert not await parts.states.write("fenced", 0, _new_leader(2, parts.context.epoch))

    assert await parts.state("fenced", 0) == before
    assert parts.superseded == [True]
    assert not parts.context.is_active
