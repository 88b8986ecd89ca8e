"""PartitionStateMachine on its own over a real ZooKeeper: the elections when brokers go,
for a broker in controlled shutdown and on demand, written to the state znodes, and the
LeaderAndIsr / UpdateMetadata requests that announce them (recorded, not sent)."""

from __future__ import annotations

import pytest

from brokerd.coordination import election, zk_data
from brokerd.coordination.zk_data import PartitionState
from brokerd.protocol.errors import ErrorCode

from .controller_parts import build


@pytest.fixture
async def parts(zookeeper):
    made = await build(zookeeper, {1: 11, 2: 12, 3: 13})
    yield made
    await made.close()


async def _set_state(parts, topic: str, index: int, leader: int, isr: list[int]) -> None:
    """A state as some earlier controller left it."""
    current = await parts.state(topic, index)
    state = PartitionState(leader, current.leader_epoch, isr, current.controller_epoch)
    await parts.zk.set_json(
        zk_data.partition_state_path(topic, index), state.to_json(), current.zk_version
    )
    await parts.cache.refresh_topic(topic)


async def _leader_and_isr(parts, topic: str, index: int) -> tuple[int, int, list[int]]:
    state = await parts.state(topic, index)
    return state.leader, state.leader_epoch, state.isr


async def test_a_dead_broker_loses_leadership_and_isr_membership(parts):
    await parts.create_topic("a", {0: [2, 1, 3], 1: [1, 2], 2: [2], 3: [3, 1]})
    del parts.context.live[2]  # broker 2's registration went

    changed = await parts.machine.elect_offline({1, 3}, {2})

    assert changed == [("a", 0), ("a", 1), ("a", 2)]
    assert await _leader_and_isr(parts, "a", 0) == (1, 1, [1, 3])  # next ISR member leads
    assert await _leader_and_isr(parts, "a", 1) == (1, 1, [1])  # a follower leaves the ISR
    assert await _leader_and_isr(parts, "a", 2) == (-1, 1, [2])  # offline, ISR kept
    assert await _leader_and_isr(parts, "a", 3) == (3, 0, [3, 1])  # untouched

    parts.machine.send_leader_and_isr({1, 3}, changed)
    sent = parts.requests.take()
    assert [(kind, broker) for kind, broker, _ in sent] == [
        ("LeaderAndIsr", 1),
        ("LeaderAndIsr", 3),
    ]
    # Broker 1 replicates partitions 0 and 1; broker 3 only partition 0; nothing for 2.
    assert [entry[:2] for entry in sent[0][2]] == [("a", 0), ("a", 1)]
    assert [entry[:2] for entry in sent[1][2]] == [("a", 0)]

    parts.machine.send_update_metadata({1, 2, 3}, changed)  # 2 is not live: not sent to
    assert [(kind, broker) for kind, broker, _ in parts.requests.take()] == [
        ("UpdateMetadata", 1),
        ("UpdateMetadata", 3),
    ]


async def test_unclean_election_follows_the_topic_config(parts):
    await parts.create_topic("clean", {0: [2, 3]})
    await parts.create_topic("dirty", {0: [2, 3]}, {"unclean.leader.election.enable": "true"})
    for topic in ("clean", "dirty"):
        await _set_state(parts, topic, 0, leader=2, isr=[2])
    del parts.context.live[2]

    await parts.machine.elect_offline({1, 3}, {2})

    assert await _leader_and_isr(parts, "clean", 0) == (-1, 1, [2])
    assert await _leader_and_isr(parts, "dirty", 0) == (3, 1, [3])


async def test_leadership_moves_off_a_broker_in_controlled_shutdown(parts):
    await parts.create_topic("s", {0: [1, 2], 1: [2, 1], 2: [1]})
    parts.context.shutting_down.add(1)

    remaining = await parts.machine.move_leadership_off(1)

    assert remaining == []
    assert await _leader_and_isr(parts, "s", 0) == (2, 1, [2])
    assert await _leader_and_isr(parts, "s", 1) == (2, 1, [2])
    assert await _leader_and_isr(parts, "s", 2) == (1, 0, [1])  # alone: it stays
    kinds = [(kind, broker) for kind, broker, _ in parts.requests.take()]
    assert ("LeaderAndIsr", 2) in kinds and ("UpdateMetadata", 3) in kinds


async def test_preferred_election_on_demand_and_the_imbalance_it_cures(parts):
    await parts.create_topic("p", {0: [1, 2], 1: [1, 3], 2: [2, 1]})
    await _set_state(parts, "p", 0, leader=2, isr=[1, 2])
    await _set_state(parts, "p", 1, leader=3, isr=[3])

    assert parts.machine.imbalanced_partitions(10) == [("p", 0)]  # 1 is not in p-1's ISR
    assert parts.machine.imbalanced_partitions(50) == []  # 1 of 2 is not above 50%

    results = await parts.machine.elect_leaders(
        election.PREFERRED, [("p", 0), ("p", 1), ("p", 2), ("p", 9)]
    )

    assert results == {
        ("p", 0): ErrorCode.none,
        ("p", 1): ErrorCode.preferred_leader_not_available,
        ("p", 2): ErrorCode.election_not_needed,
        ("p", 9): ErrorCode.unknown_topic_or_partition,
    }
    assert await _leader_and_isr(parts, "p", 0) == (1, 1, [1, 2])
    assert parts.machine.imbalanced_partitions(10) == []
