"""The Reassigner on its own (no Controller): KIP-455's steps as written to a real ZooKeeper
and the controller requests they send, the legacy /admin/reassign_partitions znode, and a
deposed controller's refusal."""

from __future__ import annotations

import asyncio

import pytest

from brokerd.coordination import reassignment, zk_data
from brokerd.protocol.errors import ErrorCode

from .controller_parts import build

LIVE = {1: 101, 2: 102, 3: 103}


@pytest.fixture
async def parts(zookeeper):
    made = await build(zookeeper, LIVE)
    yield made
    await made.close()


async def test_a_move_records_rs_adding_removing_then_completes_once_targets_are_in_sync(parts):
    await parts.create_topic("t", {0: [1, 2]})

    results = await parts.reassigner.alter({("t", 0): [1, 3]})

    assert results == {("t", 0): (ErrorCode.none, None)}
    # RS = TRS + ORS, target first; the topic znode holds the whole reassignment.
    znode = await parts.topic_znode("t")
    assert znode["partitions"]["0"] == [1, 3, 2]
    assert znode["adding_replicas"] == {"0": [3]}
    assert znode["removing_replicas"] == {"0": [2]}
    state = await parts.state("t", 0)
    assert (state.leader, state.leader_epoch, state.isr) == (1, 1, [1, 2])
    assert state.controller_epoch == parts.context.epoch
    # LeaderAndIsr with RS to every replica of RS, so broker 3 creates its log and fetches.
    entry = [("t", 0, 1, 1, [1, 2], [1, 3, 2])]
    assert parts.requests.take() == [("LeaderAndIsr", b, entry) for b in (1, 3, 2)]
    listed = parts.reassigner.list()
    assert list(listed) == [("t", 0)]
    assert (listed[("t", 0)].adding, listed[("t", 0)].removing) == ((3,), (2,))

    # An ISR that does not yet hold every target changes nothing.
    await parts.reassigner.isr_changed([("t", 0)])
    assert parts.requests.take() == []

    # The leader took broker 3 into the ISR: the move completes.
    await parts.set_isr("t", 0, [1, 2, 3])
    await parts.reassigner.isr_changed([("t", 0)])

    znode = await parts.topic_znode("t")
    assert znode["partitions"]["0"] == [1, 3]
    assert znode["adding_replicas"] == {} and znode["removing_replicas"] == {}
    state = await parts.state("t", 0)
    assert (state.leader, state.leader_epoch, state.isr) == (1, 2, [1, 3])
    final = [("t", 0, 1, 2, [1, 3], [1, 3])]
    assert parts.requests.take() == [
        ("LeaderAndIsr", 1, final),
        ("LeaderAndIsr", 3, final),
        ("StopReplica", 2, "t", [0], True),
        *[("UpdateMetadata", b, final) for b in LIVE],
    ]
    assert parts.reassigner.list() == {}
    assert parts.cache.topic("t").assignment[0] == [1, 3]


async def test_the_leader_moves_into_the_target(parts):
    await parts.create_topic("lead", {0: [1, 2]})
    await parts.reassigner.alter({("lead", 0): [2, 3]})
    parts.requests.take()

    await parts.set_isr("lead", 0, [1, 2, 3])
    await parts.reassigner.isr_changed([("lead", 0)])

    state = await parts.state("lead", 0)
    assert (state.leader, state.isr) == (2, [2, 3])
    assert ("StopReplica", 1, "lead", [0], True) in parts.requests.take()


async def test_refusals_name_kafkas_errors(parts):
    await parts.create_topic("r", {0: [1, 2]})

    results = await parts.reassigner.alter(
        {("r", 0): [1, 4], ("r", 1): [1], ("missing", 0): [1]}, allow_rf_change=True
    )

    code, message = results[("r", 0)]
    assert code == ErrorCode.invalid_replica_assignment and "not alive" in message
    assert results[("r", 1)][0] == ErrorCode.unknown_topic_or_partition
    assert results[("missing", 0)][0] == ErrorCode.unknown_topic_or_partition
    assert await parts.reassigner.alter({("r", 0): None}) == {
        ("r", 0): (ErrorCode.no_reassignment_in_progress, None)
    }
    code, _ = (await parts.reassigner.alter({("r", 0): [1, 2, 3]}, allow_rf_change=False))[("r", 0)]
    assert code == ErrorCode.invalid_replication_factor
    assert parts.requests.take() == []
    assert (await parts.topic_znode("r"))["partitions"]["0"] == [1, 2]


async def test_cancelling_returns_to_the_original_replicas_and_drops_the_adding_one(parts):
    await parts.create_topic("c", {0: [1, 2]})
    await parts.reassigner.alter({("c", 0): [1, 3]})
    parts.requests.take()

    assert await parts.reassigner.alter({("c", 0): None}) == {("c", 0): (ErrorCode.none, None)}

    znode = await parts.topic_znode("c")
    assert znode["partitions"]["0"] == [1, 2]
    assert znode["adding_replicas"] == {} and znode["removing_replicas"] == {}
    assert ("StopReplica", 3, "c", [0], True) in parts.requests.take()
    assert parts.reassigner.list() == {}


async def test_legacy_znode_starts_a_move_and_is_emptied_when_it_completes(parts):
    await parts.create_topic("old", {0: [1, 2]})
    await parts.zk.create_json(
        zk_data.REASSIGN_PARTITIONS, zk_data.reassign_partitions_payload({("old", 0): [1, 3]})
    )

    await parts.reassigner.resume()

    assert (await parts.topic_znode("old"))["adding_replicas"] == {"0": [3]}
    await parts.set_isr("old", 0, [1, 2, 3])
    await parts.reassigner.isr_changed([("old", 0)])
    assert (await parts.topic_znode("old"))["partitions"]["0"] == [1, 3]
    # Its only entry done, the znode goes; its deletion fires the watch resume() set,
    # which asks for a controller event to read it again.
    assert not await parts.zk.exists(zk_data.REASSIGN_PARTITIONS)
    for _ in range(250):  # ZooKeeper delivers the watch on its own schedule
        if parts.scheduled:
            break
        await asyncio.sleep(0.02)
    assert len(parts.scheduled) == 1
    parts.requests.take()
    await parts.scheduled[0]()  # the event finds nothing left to start
    assert parts.requests.take() == []


async def test_a_deposed_controller_writes_nothing_and_hands_over(parts):
    await parts.create_topic("fenced", {0: [1, 2]})
    # A successor bumps /controller_epoch, moving the version this controller fences on.
    await parts.zk.set_raw(
        zk_data.CONTROLLER_EPOCH, zk_data.encode_controller_epoch(parts.context.epoch + 1)
    )

    results = await parts.reassigner.alter({("fenced", 0): [1, 3]})

    assert results[("fenced", 0)][0] == ErrorCode.not_controller
    assert parts.superseded == [True]
    assert not parts.context.is_active
    znode = await parts.topic_znode("fenced")
    assert znode["partitions"]["0"] == [1, 2] and znode["adding_replicas"] == {}
    assert parts.requests.take() == []


async def test_a_move_whose_isr_notification_never_comes_completes_at_the_periodic_look(
    parts, monkeypatch
):
    """Completion follows /isr_change_notification; when none arrives (the leader's
    announcement lost), the controller's periodic look at ongoing moves still ends it."""
    monkeypatch.setattr(reassignment, "RECHECK_S", 0.05)
    await parts.create_topic("quiet", {0: [1, 2]})
    await parts.reassigner.alter({("quiet", 0): [1, 3]})
    parts.requests.take()
    await parts.set_isr("quiet", 0, [1, 2, 3])  # written, never announced

    deadline = asyncio.get_running_loop().time() + 10
    while parts.reassigner.list():
        assert asyncio.get_running_loop().time() < deadline, "the move never completed"
        await asyncio.sleep(0.05)
        while parts.scheduled:  # the controller runs scheduled events in its event lock
            await parts.scheduled.pop(0)()

    assert (await parts.topic_znode("quiet"))["partitions"]["0"] == [1, 3]
    assert parts.scheduled == []  # nothing moves: no further looks armed
