"""Transactional offset commits (TxnOffsetCommit): written in the producer's transaction,
invisible until its marker commits them, dropped by an abort, and loaded by the next leader
in the same way (pending while the transaction is open, visible once its COMMIT is read)."""

from __future__ import annotations

import asyncio

import pytest

from brokerd.groups.group import Group
from brokerd.protocol.errors import ErrorCode as E
from brokerd.records import control

from .local_offsets import LocalReplicas, loaded, manager

PRODUCER = 4000


@pytest.fixture
def replicas(tmp_path):
    replicas = LocalReplicas(tmp_path)
    replicas.lead(0)
    yield replicas
    replicas.close()


def write_marker(replicas, commit: bool, epoch: int = 0) -> None:
    """The control batch the partition's leader writes for WriteTxnMarkers (appended
    here as a replica would, at the log end)."""
    led = replicas.leaders[("__consumer_offsets", 0)]
    marker = control.build_end_txn_marker(
        control.COMMIT if commit else control.ABORT,
        producer_id=PRODUCER,
        producer_epoch=epoch,
        coordinator_epoch=0,
        timestamp=1,
        base_offset=led.log.log_end_offset,
        partition_leader_epoch=0,
    )
    led.log.append_as_follower(bytes(marker))


async def test_offsets_are_visible_only_after_the_commit(replicas):
    m = manager(replicas)
    await loaded(m)
    group = m.add_group(Group("g", state_timestamp_ms=0))
    result = await m.store_txn_offsets(group, PRODUCER, 0, {("t", 0): (10, None, "x")})
    assert result == {("t", 0): E.none}
    # a second commit in the same transaction: the next sequence of the producer
    result = await m.store_txn_offsets(group, PRODUCER, 0, {("t", 1): (20, 3, None)})
    assert result == {("t", 1): E.none}
    assert m.get_offsets("g", [("t", 0)]) == {("t", 0): None}
    assert m.has_pending_txn_offsets("g", ("t", 0))
    m.complete_txn(PRODUCER, [0], commit=True)
    offsets = m.get_offsets("g", None)
    assert (offsets[("t", 0)].offset, offsets[("t", 1)].offset) == (10, 20)
    assert not m.has_pending_txn_offsets("g", ("t", 0))


async def test_an_abort_drops_them_and_other_partitions_are_untouched(replicas):
    m = manager(replicas)
    await loaded(m)
    group = m.add_group(Group("g", state_timestamp_ms=0))
    await m.store_offsets(group, -1, {("t", 0): (5, None, None)})
    await m.store_txn_offsets(group, PRODUCER, 0, {("t", 0): (10, None, None)})
    m.complete_txn(PRODUCER, [3], commit=True)  # the group lives on partition 0
    assert m.has_pending_txn_offsets("g", ("t", 0))
    m.complete_txn(PRODUCER, [0], commit=False)
    assert m.get_offsets("g", [("t", 0)])[("t", 0)].offset == 5
    assert group.pending_txn_offsets == {}


async def test_the_next_leader_reads_markers(replicas):
    m = manager(replicas)
    await loaded(m)
    group = m.add_group(Group("g", state_timestamp_ms=0))
    await m.store_txn_offsets(group, PRODUCER, 0, {("t", 0): (10, None, None)})
    write_marker(replicas, commit=True)
    await m.store_txn_offsets(group, PRODUCER, 0, {("t", 1): (11, None, None)})
    write_marker(replicas, commit=False)
    await m.store_txn_offsets(group, PRODUCER, 0, {("t", 2): (12, None, None)})

    fresh = manager(replicas)
    await loaded(fresh)
    offsets = fresh.get_offsets("g", None)
    assert {tp: v.offset for tp, v in offsets.items()} == {("t", 0): 10}
    # the transaction still open stays pending and completes with its marker
    assert fresh.has_pending_txn_offsets("g", ("t", 2))
    fresh.complete_txn(PRODUCER, [0], commit=True)
    assert fresh.get_offsets("g", [("t", 2)])[("t", 2)].offset == 12


async def test_a_marker_written_while_the_next_leader_loads_completes_its_offsets(replicas):
    """The new transaction coordinator resends a PrepareCommit's markers as soon as it loads,
    often while this broker (the new group coordinator) is still loading the same
    `__consumer_offsets` partition: the completion must not be lost when the marker lies past
    what the load read (the offsets stayed pending for ever: OffsetFetch with require_stable
    answered UNSTABLE_OFFSET_COMMIT to the group's consumers without end)."""
    m = manager(replicas)
    await loaded(m)
    group = m.add_group(Group("g", state_timestamp_ms=0))
    await m.store_txn_offsets(group, PRODUCER, 0, {("t", 0): (10, None, None)})

    fresh = manager(replicas)
    fresh.schedule_load(0, lambda group: None)
    assert fresh.is_loading
    fresh.complete_txn(PRODUCER, [0], commit=True)  # its marker: past the range read
    while fresh.is_loading:
        await asyncio.sleep(0.001)
    assert fresh.get_offsets("g", [("t", 0)])[("t", 0)].offset == 10
    assert not fresh.has_pending_txn_offsets("g", ("t", 0))
